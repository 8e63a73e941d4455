//go:build linux

package main

// Helpers of the replica topology test (OP-5, SV-2): upstreams in the test
// process that count what ran, three `toolgate serve` replicas on one
// PostgreSQL, and the official TypeScript SDK client driven one call at a
// time.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/internal/lab/peers"
)

// Keys of the topology test.
const (
	topoAdminKey  = "topo-SECRET-admin-key-4d2a9f1c7e"
	topoClientKey = "topo-SECRET-client-key-8b3e6a0d5f"
)

// topoConfig is the one config of every replica: the PostgreSQL store
// (%s), one confirm secret, the admin API on ${ADMIN_LISTEN} (each its
// own), and two upstreams over HTTP that all replicas share, so what ran is
// counted in one place: notes (actions confirmed by the client) and ops
// (actions an operator approves).
const topoConfig = `gateway:
  store: %s
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
  admin:
    listen: ${ADMIN_LISTEN}
    keys:
      - key: ${ADMIN_KEY}
        operator: alice
endpoints:
  - path: /mcp
    auth:
      apiKeys:
        - key: ${CLIENT_KEY}
          actor: {id: sdk, roles: [MEMBER]}
upstreams:
  - name: notes
    url: %s
    transport: http
    required: true
    reads: [list_notes]
    actions: [create_note]
  - name: ops
    url: %s
    transport: http
    required: true
    actions: [deploy]
    approval: operator
`

// topoUpstream is an MCP server in the test process whose action tool
// counts its runs.
type topoUpstream struct {
	url string
	mu  sync.Mutex
	ran []string // the text argument of every run of the action
}

func (u *topoUpstream) runs() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ran...)
}

// startTopoUpstream serves action (one string argument arg) and, if read is
// not empty, a read tool listing what action ran.
func startTopoUpstream(t *testing.T, name, action, arg, read string) *topoUpstream {
	t.Helper()
	u := &topoUpstream{}
	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool(action, mcpgo.WithDescription("Changes something: "+action+"."), mcpgo.WithString(arg, mcpgo.Required())),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			v := req.GetString(arg, "")
			u.mu.Lock()
			u.ran = append(u.ran, v)
			n := len(u.ran)
			u.mu.Unlock()
			return mcpgo.NewToolResultText(fmt.Sprintf("%s done (%d): %s", action, n, v)), nil
		})
	if read != "" {
		s.AddTool(mcpgo.NewTool(read, mcpgo.WithDescription("Lists what ran."), mcpgo.WithReadOnlyHintAnnotation(true)),
			func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText(strings.Join(u.runs(), "\n")), nil
			})
	}
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	u.url = srv.URL + "/mcp"
	return u
}

// topoReplica is one `toolgate serve` of the set.
type topoReplica struct {
	*servedGateway
	adminURL string
}

// kill ends the replica as a crash does: SIGKILL to its group.
func (r *topoReplica) kill(t *testing.T) {
	t.Helper()
	r.leader.killGroup()
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("toolgate serve not reaped 10 s after SIGKILL")
	}
}

func topoEnv(adminListen string) map[string]string {
	return map[string]string{
		"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret,
		"ADMIN_LISTEN":            adminListen,
		"ADMIN_KEY":               topoAdminKey,
		"CLIENT_KEY":              topoClientKey,
	}
}

// startTopoReplicas boots n replicas of cfg at once (each its own MCP and
// admin listener; the store is the config's, not a file of their own) and
// waits until each is ready.
func startTopoReplicas(t *testing.T, cfg, dsn string, n int) []*topoReplica {
	t.Helper()
	var rs []*topoReplica
	for range n {
		admin := fmt.Sprintf("127.0.0.1:%d", serveFreePort(t))
		env := topoEnv(admin)
		// launchServe points the store at a file of its own; the later
		// value wins.
		env["TOOLGATE_GATEWAY_STORE"] = dsn
		rs = append(rs, &topoReplica{servedGateway: launchServe(t, cfg, env), adminURL: "http://" + admin})
	}
	for _, r := range rs {
		r.waitStarted(t)
	}
	return rs
}

// sdkDriver is testdata/peers/sdk-driver.mjs: the official TypeScript SDK
// client on one session, one call per line.
type sdkDriver struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan string // its stdout, line by line; closed at its end
	stderr *serveLog
	ready  struct {
		Ready     bool     `json:"ready"`
		SessionID string   `json:"sessionId"`
		Tools     []string `json:"tools"`
		Error     string   `json:"error"`
	}
}

// sdkAnswer is one call's line.
type sdkAnswer struct {
	Result    *confirmSDKResult `json:"result"`
	Error     string            `json:"error"`
	SessionID string            `json:"sessionId"`
}

const sdkCallWait = 60 * time.Second // one call, an operator's decision included

// startSDKDriver connects the driver to url and waits (bounded) for its
// ready line. It is killed at cleanup.
func startSDKDriver(t *testing.T, url, key string) *sdkDriver {
	t.Helper()
	dir, node := peers.Dir(t), peers.Node(t)
	cmd := exec.Command(node, filepath.Join(dir, "sdk-driver.mjs"), url)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SDK_CLIENT_TOKEN="+key)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	d := &sdkDriver{t: t, lines: make(chan string, 16), stderr: &serveLog{}}
	cmd.Stderr = d.stderr
	var err error
	if d.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	leader := holdLeader(pid)
	done := make(chan struct{})
	// The reader ends with the process's stdout, then reaps it.
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = d.stdin.Close()
		leader.killGroup()
		defer leader.release()
		go func() { // unblock the reader should nobody read its last lines
			for range d.lines {
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("sdk-driver (pid %d) not reaped 10 s after SIGKILL", pid)
		}
	})
	line := d.next(servePeerRunWait)
	if err := json.Unmarshal([]byte(line), &d.ready); err != nil || !d.ready.Ready {
		t.Fatalf("sdk-driver did not connect: %s (%v)\nstderr: %s", line, err, d.stderr)
	}
	return d
}

// next is the driver's next line, within wait.
func (d *sdkDriver) next(wait time.Duration) string {
	d.t.Helper()
	select {
	case line, ok := <-d.lines:
		if !ok {
			d.t.Fatalf("sdk-driver exited\nstderr: %s", d.stderr)
		}
		return line
	case <-time.After(wait):
		d.t.Fatalf("sdk-driver said nothing within %v\nstderr: %s", wait, d.stderr)
	}
	return ""
}

// send asks for one call; answer reads what came of it.
func (d *sdkDriver) send(tool string, args any) {
	d.t.Helper()
	b, err := json.Marshal(map[string]any{"name": tool, "arguments": args})
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.stdin.Write(append(b, '\n')); err != nil {
		d.t.Fatalf("sdk-driver: %v\nstderr: %s", err, d.stderr)
	}
}

func (d *sdkDriver) answer() sdkAnswer {
	d.t.Helper()
	line := d.next(sdkCallWait)
	var a sdkAnswer
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		d.t.Fatalf("sdk-driver: %q: %v", line, err)
	}
	return a
}

// call makes one call and returns its answer, which must be a result on
// the session the client started with.
func (d *sdkDriver) call(tool string, args any) *confirmSDKResult {
	d.t.Helper()
	d.send(tool, args)
	a := d.answer()
	if a.Error != "" || a.Result == nil {
		d.t.Fatalf("%s: the SDK client got %q\nstderr: %s", tool, a.Error, d.stderr)
	}
	if a.SessionID != d.ready.SessionID {
		d.t.Fatalf("%s: the SDK client is on session %q, it started on %q", tool, a.SessionID, d.ready.SessionID)
	}
	return a.Result
}

// confirmTokenOf is a preview's token (CF-2).
func confirmTokenOf(t *testing.T, r *confirmSDKResult) string {
	t.Helper()
	var p confirmPreview
	if r.IsError || json.Unmarshal(r.StructuredContent, &p) != nil || p.ConfirmToken == "" {
		t.Fatalf("not a preview: %q %s", r.text(), r.StructuredContent)
	}
	return p.ConfirmToken
}
