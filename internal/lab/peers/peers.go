// Package peers gives tests the real MCP peers pinned in testdata/peers:
// the reference servers and the conformance suite, installed from the npm
// registry with `npm ci` on first use.
package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// installTimeout bounds one `npm ci` (about 15 s on a warm network).
const installTimeout = 5 * time.Minute

// mcpScope is where the pinned packages live under node_modules.
const mcpScope = "node_modules/@modelcontextprotocol"

// modulePath names the go.mod that testdata/peers sits next to.
const modulePath = "github.com/toolgate/toolgate"

var (
	installMu sync.Mutex
	installed string // the ready directory, once known

	nodeOnce sync.Once
	nodePath string
	nodeErr  error
)

// Dir returns the absolute testdata/peers directory with its node_modules
// installed. A missing or stale install (node_modules/.package-lock.json
// older than package-lock.json or package.json) is replaced by `npm ci`,
// serialised across concurrently running test binaries by a lock on
// testdata/peers/.install.lock. Without npm on PATH the test fails: these
// peers are part of the suite, not optional.
func Dir(t testing.TB) string {
	t.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	if installed != "" {
		return installed
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("peers: %v", err)
	}
	dir := filepath.Join(root, "testdata", "peers")
	unlock, err := lockFile(filepath.Join(dir, ".install.lock"))
	if err != nil {
		t.Fatalf("peers: locking %s: %v", dir, err)
	}
	defer unlock()
	if stale(dir) {
		install(t, dir)
		if stale(dir) {
			t.Fatalf("peers: `npm ci` in %s left node_modules older than package-lock.json", dir)
		}
	}
	installed = dir
	return dir
}

// moduleRoot walks up from the working directory (a package directory, under
// go test) to the go.mod of this module.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declares(mod, modulePath) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// declares reports whether a go.mod's module directive names path.
func declares(mod []byte, path string) bool {
	for line := range strings.Lines(string(mod)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == path
		}
	}
	return false
}

// stale reports whether node_modules must be (re)installed.
func stale(dir string) bool {
	marker, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err != nil {
		return true
	}
	for _, f := range []string{"package-lock.json", "package.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.ModTime().After(marker.ModTime()) {
			return true
		}
	}
	return false
}

func install(t testing.TB, dir string) {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("peers: npm is not on PATH; the peer tests need Node.js >= 20 and npm to install %s (npm ci): %v", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("peers: npm ci in %s: %v\n%s", dir, err, tail(out, 4000))
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Node returns the path of the node executable; the tests need Node >= 20
// (module.register for the conformance hook).
func Node(t testing.TB) string {
	t.Helper()
	nodeOnce.Do(func() {
		nodePath, nodeErr = exec.LookPath("node")
		if nodeErr != nil {
			nodeErr = fmt.Errorf("node is not on PATH; the peer tests need Node.js >= 20: %w", nodeErr)
			return
		}
		out, err := exec.Command(nodePath, "--version").Output()
		if err != nil {
			nodeErr = fmt.Errorf("%s --version: %w", nodePath, err)
			return
		}
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		major, _, _ := strings.Cut(v, ".")
		if n, err := strconv.Atoi(major); err != nil || n < 20 {
			nodeErr = fmt.Errorf("node %s is too old; the peer tests need Node.js >= 20", v)
		}
	})
	if nodeErr != nil {
		t.Fatalf("peers: %v", nodeErr)
	}
	return nodePath
}

// EverythingJS is the entry point of @modelcontextprotocol/server-everything:
// `node EverythingJS` serves stdio, `PORT=N node EverythingJS streamableHttp`
// serves http://127.0.0.1:N/mcp (on all interfaces).
func EverythingJS(t testing.TB) string {
	t.Helper()
	return file(t, filepath.Join(Dir(t), mcpScope, "server-everything", "dist", "index.js"))
}

// FilesystemJS is the entry point of @modelcontextprotocol/server-filesystem:
// `node FilesystemJS /abs/root` serves stdio.
func FilesystemJS(t testing.TB) string {
	t.Helper()
	return file(t, filepath.Join(Dir(t), mcpScope, "server-filesystem", "dist", "index.js"))
}

// ConformanceCmd is the command line of the conformance suite's CLI: node
// with the Node 20 fs hook, then the package's bin.
func ConformanceCmd(t testing.TB) []string {
	t.Helper()
	dir := Dir(t)
	pkg := filepath.Join(dir, mcpScope, "conformance")
	raw, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err != nil {
		t.Fatalf("peers: %v", err)
	}
	var meta struct {
		Bin map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Bin["conformance"] == "" {
		t.Fatalf("peers: %s/package.json names no conformance bin (%v)", pkg, err)
	}
	hook := file(t, filepath.Join(dir, "register-hook.mjs"))
	return []string{Node(t), "--import", hook, file(t, filepath.Join(pkg, meta.Bin["conformance"]))}
}

func file(t testing.TB, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("peers: %v", err)
	}
	return path
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
// It is closed again before the caller's process binds it, and a port the
// kernel hands out for ":0" or for an outgoing connection could be taken
// in between (it happened under load), so it comes from below the
// ephemeral range, where the kernel never hands one out, at random.
func FreePort(t testing.TB) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				low = n
			}
		}
	}
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			_ = l.Close()
			return port
		}
	}
	t.Fatalf("peers: no free port below the ephemeral range")
	return 0
}

// Listening reports whether something accepts connections on
// 127.0.0.1:port.
func Listening(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// Process is a started peer.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done closes
}

// Start starts cmd in a process group of its own and kills the whole group
// when the test ends, waiting (bounded) until cmd is reaped.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("peers: start %s: %v", cmd.Path, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		killGroup(pid, p.Exited())
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Errorf("peers: %s (pid %d) not reaped 10 s after SIGKILL", cmd.Path, pid)
		}
	})
	return p
}

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is cmd.Wait's answer; call it after Done.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Pid is the process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill kills the process's whole group.
func (p *Process) Kill() { killGroup(p.cmd.Process.Pid, p.Exited()) }
