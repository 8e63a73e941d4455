//go:build linux

package main

// OP-12: SIGHUP — what logrotate's postrotate, `systemctl reload` and
// configuration tools send — can reach serve at any moment of its
// start-up, and a terminal's hangup can reach the console. Neither ends
// serve: a SIGHUP before it is ready is applied as one reload once it is;
// the console stops cleanly, its children with it.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/demo"
)

// hangupConfig is a gateway whose one stdio upstream takes a second to
// initialize; with weather it has a second upstream, the change a reload
// must bring in.
func hangupConfig(weather bool) string {
	cfg := fmt.Sprintf(`gateway:
  watchConfig: false
  confirm:
    secret: hangup-test-only-confirm-secret-0123456789abcdef
endpoints:
  - path: /mcp
    actor: {id: test, roles: [ADMIN]}
upstreams:
  - name: notes
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, notes]
    env: {%s: "1s"}
`, demo.StallEnv)
	if weather {
		cfg += `  - name: weather
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, weather]
`
	}
	return cfg
}

// catchesHangup says whether process pid has a handler for SIGHUP, from
// the caught-signals mask the kernel shows. The Go runtime installs its
// handler before any package runs, so this says the program can catch it
// only once its main has run (the console below, whose upstreams are up).
func catchesHangup(pid int) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(syscall.SIGHUP)-1)) != 0
		}
	}
	return false
}

// signalsInit is the line GODEBUG=inittrace=1 prints once package
// signals' init, which catches the signals, has run.
const signalsInit = "init github.com/toolgate/toolgate/internal/signals @"

// OP-12: SIGHUP (one, or a burst of three) at 20 random moments of serve's
// first 2 s, counted from exec: serve stays up, becomes ready, applies the
// signal as a reload — once it is ready when the signal came before — and
// serves the config written before the signal.
func TestServeHangupDuringStartUpOP12(t *testing.T) {
	if testing.Short() {
		t.Skip("starts toolgate serve 20 times")
	}
	// Two lines of ten rounds each, so the rounds overlap the way a loaded
	// machine would have them anyway.
	for line := range 2 {
		t.Run(fmt.Sprintf("line%d", line), func(t *testing.T) {
			t.Parallel()
			for round := range startSignalRounds / 2 {
				after := time.Duration(mrand.Int64N(int64(startSignalWindow)))
				burst := 1 + 2*mrand.IntN(2)
				hangupDuringStartUp(t, round, after, burst)
			}
		})
	}
}

func hangupDuringStartUp(t *testing.T, round int, after time.Duration, burst int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hangup.yaml")
	if err := os.WriteFile(path, []byte(hangupConfig(false)), 0o600); err != nil {
		t.Fatal(err)
	}
	// inittrace says when the signals are caught (see below).
	g := launchServe(t, path, map[string]string{"GODEBUG": "inittrace=1"})
	launched := time.Now()
	timer := time.NewTimer(after)
	select {
	case <-g.exited:
		timer.Stop()
		t.Fatalf("round %d: serve exited by itself before %v\n%s", round, after, g.stderr)
	case <-timer.C:
	}
	// The new config is in place before the signal, written whole.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(hangupConfig(true)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	// Before package signals' init has run (the runtime's own start and
	// the few packages initialised ahead of it, about 2 ms, longer on a
	// loaded machine) no Go program can catch a signal: the runtime's
	// handler is installed, so the kernel's SigCgt mask already shows
	// SIGHUP caught, but with nothing asking for it the runtime ends the
	// process. A moment that falls there waits until the init has run,
	// as inittrace reports it. That the init runs before anything that
	// takes time is TestSignalsCaughtFirstOP12's to show.
	caught := func() bool { return strings.Contains(g.stderr.String(), signalsInit) }
	early := !caught()
	if early && !waittest.Poll(serveBootWait, caught) {
		t.Fatalf("round %d: serve's signals were never caught\n%s", round, g.stderr)
	}
	sentAt := time.Since(launched)
	readyBefore := strings.Contains(g.stderr.String(), `"msg":"ready"`)
	for range burst {
		if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatalf("round %d: %v (serve died?)\n%s", round, err, g.stderr)
		}
	}
	g.waitStarted(t)

	ctx, cancel := context.WithTimeout(context.Background(), serveBootWait)
	defer cancel()
	c := mcptest.New(g.base+"/mcp", nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("round %d: initialize: %v\n%s", round, err, g.stderr)
	}
	var names []string
	if !waittest.Poll(serveBootWait, func() bool {
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatalf("round %d: tools/list: %v\n%s", round, err, g.stderr)
		}
		names = names[:0]
		for _, tl := range tools {
			names = append(names, tl.Name)
		}
		return strings.Contains(strings.Join(names, " "), "weather_")
	}) {
		t.Fatalf("round %d (SIGHUP×%d at %v): the reloaded config is not served: tools %v\n%s", round, burst, sentAt, names, g.stderr)
	}
	log := g.stderr.String()
	// A burst that reaches the reload loop before it has taken the first
	// request is one reload whose reason names each ("SIGHUP, SIGHUP"):
	// it is the reload this asks for.
	if !strings.Contains(log, `"msg":"config reload","reason":"SIGHUP`) {
		t.Errorf("round %d: no reload for the SIGHUP in the log\n%s", round, log)
	}
	if !readyBefore {
		// Caught while starting, the signals are owed as one reload,
		// applied after the ready record.
		if n := strings.Count(log, `"msg":"config reload","reason":"SIGHUP"`); n != 1 {
			t.Errorf("round %d: %d SIGHUPs during start-up made %d reloads, want 1\n%s", round, burst, n, log)
		}
		if strings.Index(log, `"msg":"config reload"`) < strings.Index(log, `"msg":"ready"`) {
			t.Errorf("round %d: the reload came before serve was ready\n%s", round, log)
		}
	}
	select {
	case <-g.exited:
		t.Fatalf("round %d: serve exited\n%s", round, log)
	default:
	}
	if code := g.terminate(t); code != 0 {
		t.Errorf("round %d: exit %d after SIGTERM, want 0\n%s", round, code, g.stderr)
	}
	t.Logf("round %d: SIGHUP×%d at %v (the moment fell before the signals were caught, so it was sent once they were: %v; ready before: %v)", round, burst, sentAt.Round(time.Millisecond), early, readyBefore)
}

// OP-12: the console's terminal going away (tmux closing the pane sends
// SIGHUP, as a closed terminal window or a dropped ssh does) stops the
// console cleanly: it exits, and no process of its tree — the demo's
// upstreams — is left.
func TestConsoleHangupStopsOP12(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the console in tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed for the console's terminal tests (.ci/run installs it)")
	}
	bin := toolgateBinary(t)
	var m [8]byte
	_, _ = rand.Read(m[:])
	marker := hex.EncodeToString(m[:])
	sock := "toolgate-hup-" + marker
	tmux := func(args ...string) *exec.Cmd { return exec.Command("tmux", append([]string{"-L", sock}, args...)...) }
	t.Cleanup(func() {
		_ = tmux("kill-server").Run()
		for _, pid := range treeProcs(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	home := t.TempDir()
	// No config: the console starts the demo, whose upstreams are children
	// of the console carrying the marker.
	script := fmt.Sprintf("cd %s && env HOME=%s XDG_CONFIG_HOME=%s TMPDIR=%s %s=%s %s=%s %s", home, home, home, home, treeMarkerEnv, marker, gateway.SelfEnv, bin, bin)
	if out, err := tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", "c", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	var console int
	if !waittest.Poll(serveBootWait, func() bool {
		// The console and at least one upstream child are up. The console
		// is the root of the marked tree, the one whose parent carries no
		// marker: a child it has forked and not yet exec'd has its
		// executable and command line too.
		procs := treeProcs(marker)
		console = 0
		for _, pid := range procs {
			p, ok := readProc(pid)
			if !ok || slices.Contains(procs, p.ppid) {
				continue
			}
			if exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); exe == bin {
				console = pid
			}
		}
		return console != 0 && len(procs) >= 3
	}) {
		out, _ := tmux("capture-pane", "-p", "-t", "c").Output()
		t.Fatalf("the console and its upstreams did not start (procs %v)\n%s", treeProcs(marker), out)
	}
	if !waittest.Poll(serveBootWait, func() bool { return catchesHangup(console) }) {
		t.Fatal("the console does not catch SIGHUP")
	}
	if out, err := tmux("kill-server").CombinedOutput(); err != nil {
		t.Fatalf("tmux kill-server: %v\n%s", err, out)
	}
	var left []int
	if !waittest.Poll(shutdownDeadline+10*time.Second, func() bool { left = treeProcs(marker); return len(left) == 0 }) {
		t.Fatalf("processes of the console's tree still run after its terminal went away: %v", left)
	}
	// Gone is not enough: a console killed by the signal is gone too (its
	// upstreams' supervisors end them). Its log says it stopped itself.
	log, err := os.ReadFile(filepath.Join(home, fmt.Sprintf("toolgate-console-%d.log", console)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`msg="terminal hung up; stopping"`, `msg="console stopped" clean=true`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the console's log lacks %s: it did not stop cleanly\n%s", want, log)
		}
	}
}

// OP-12: the signals are caught before the program does anything that
// takes time: internal/signals' init runs before every other package of
// this module and before any package whose init allocates more than a
// little (the scanner's tables, cel-go, gRPC, the console's libraries).
// The order is decided by the linker, not by timing, so this holds on any
// machine.
func TestSignalsCaughtFirstOP12(t *testing.T) {
	bin := toolgateBinary(t)
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("toolgate version: %v\n%s", err, out)
	}
	const self = "github.com/toolgate/toolgate/internal/signals"
	const little = 64 << 10 // bytes an init may allocate before ours
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) < 8 || f[0] != "init" {
			continue
		}
		if f[1] == self {
			found = true
			break
		}
		if strings.HasPrefix(f[1], "github.com/toolgate/toolgate") {
			t.Errorf("%s initialises before the signals are caught", f[1])
		}
		if b, err := strconv.Atoi(f[6]); err == nil && b > little {
			t.Errorf("%s allocates %d bytes at init before the signals are caught", f[1], b)
		}
	}
	if !found {
		t.Fatalf("no init record for %s\n%s", self, out)
	}
}
