package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/waittest"
)

func stdioOptions(t *testing.T) Options {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{Name: "child", Command: exe, Args: []string{stdioServerArg}}
}

func connectStdio(t *testing.T, opts Options) core.Upstream {
	t.Helper()
	u, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	info, err := u.Connect(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("Connect: %v (stderr: %s)", err, u.(StderrReporter).Stderr())
	}
	if info.Name != "stdio-test" || info.Version != "1.2.3" || info.Protocol != ProtocolVersion {
		t.Fatalf("server info = %+v", info)
	}
	return u
}

func call(t *testing.T, u core.Upstream, name, args string) string {
	t.Helper()
	r, err := u.CallTool(ctxT(t, 10*time.Second), name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if r.IsError {
		t.Fatalf("%s: isError result %s", name, r.JSON)
	}
	return resultText(t, r)
}

func TestStdioCallsListAndPing(t *testing.T) {
	leakCheck(t)
	u := connectStdio(t, stdioOptions(t))
	tools, err := u.ListTools(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "ask,chatty,crash,cwd,echo,grow,hold,print_env,release,roots,spawn_grandchild,stderr,touch,wait" {
		t.Errorf("tools = %s", got)
	}
	if got := call(t, u, "echo", `{"text":"hello"}`); got != "hello" {
		t.Errorf("echo = %q", got)
	}
	if err := u.Ping(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("Ping: %v", err)
	}
	// Concurrent calls from several goroutines (run under -race).
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := "m" + strconv.Itoa(i)
			r, err := u.CallTool(ctxT(t, 10*time.Second), "echo", json.RawMessage(`{"text":"`+want+`"}`))
			if err != nil {
				errs <- err
				return
			}
			if !strings.Contains(string(r.JSON), `"`+want+`"`) {
				errs <- errors.New("wrong answer " + string(r.JSON))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// An unknown tool is a definite failure from the server, not a transport
	// error: mcp-go answers it with a JSON-RPC error.
	_, err = u.CallTool(ctxT(t, 5*time.Second), "nope", nil)
	var rpc *core.RPCError
	if !errors.As(err, &rpc) || core.Transient(err) {
		t.Errorf("unknown tool: %v", err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := u.CallTool(ctxT(t, time.Second), "echo", nil); !errors.Is(err, core.ErrNotSent) {
		t.Errorf("call after Close: %v", err)
	}
}

// IM-3: no env ⇒ a minimal environment without the gateway's secrets.
func TestStdioMinimalEnvIM3(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_SECRET", "xyz")
	u := connectStdio(t, stdioOptions(t))
	env := call(t, u, "print_env", `{}`)
	if strings.Contains(env, "TOOLGATE_TEST_SECRET") || strings.Contains(env, "xyz") {
		t.Errorf("child sees the gateway's secret:\n%s", env)
	}
	if os.Getenv("PATH") != "" && !strings.Contains(env, "PATH="+os.Getenv("PATH")) {
		t.Errorf("child lacks PATH:\n%s", env)
	}
	for _, kv := range strings.Split(env, "\n") {
		k, _, _ := strings.Cut(kv, "=")
		if !contains(minimalEnv, k) {
			t.Errorf("child has %q beyond the minimal set", k)
		}
	}
}

// IM-3: env given ⇒ the gateway's environment with those entries merged over.
func TestStdioMergedEnvAndCwdIM3(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_SECRET", "xyz")
	dir := t.TempDir()
	opts := stdioOptions(t)
	opts.Env = map[string]string{"A": "1"}
	opts.Cwd = dir
	u := connectStdio(t, opts)
	env := strings.Split(call(t, u, "print_env", `{}`), "\n")
	if !contains(env, "A=1") || !contains(env, "TOOLGATE_TEST_SECRET=xyz") {
		t.Errorf("merged env lacks A=1 or the gateway's variable: %v", env)
	}
	want, _ := filepath.EvalSymlinks(dir)
	got, _ := filepath.EvalSymlinks(call(t, u, "cwd", `{}`))
	if got != want {
		t.Errorf("cwd = %q, want %q", got, want)
	}
}

// IM-10: Close stops the child's whole process group, grandchildren too.
func TestStdioCloseKillsGrandchildIM10(t *testing.T) {
	leakCheck(t)
	u := connectStdio(t, stdioOptions(t))
	pid, err := strconv.Atoi(call(t, u, "spawn_grandchild", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !processAlive(pid) {
		t.Fatalf("grandchild %d is not running before Close", pid)
	}
	start := time.Now()
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// The bound is stopChild's own (its grace, then the wait for the
	// reap), not a speed: beyond it Close gave up on the child.
	bound := stopGrace + 5*time.Second
	for processAlive(pid) {
		if time.Since(start) > bound {
			t.Fatalf("grandchild %d survived Close", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(start); d > bound {
		t.Errorf("Close took %v, beyond stopChild's bound %v", d, bound)
	}
	if err := u.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// IM-27/IM-29: a child dying mid-call is a transient failure whose outcome is
// unknown (not ErrNotSent); Connect then starts a fresh child.
func TestStdioCrashMidCallIM27(t *testing.T) {
	leakCheck(t)
	u := connectStdio(t, stdioOptions(t))
	_, err := u.CallTool(ctxT(t, 10*time.Second), "crash", nil)
	if err == nil {
		t.Fatal("crash returned no error")
	}
	if !core.Transient(err) || errors.Is(err, core.ErrNotSent) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("crash error %v: Transient=%v NotSent=%v", err, core.Transient(err), errors.Is(err, core.ErrNotSent))
	}
	// Further calls on the dead connection are transient too.
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "echo", json.RawMessage(`{"text":"x"}`)); !core.Transient(err) {
		t.Errorf("call after crash: %v", err)
	}
	if _, err := u.Connect(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if got := call(t, u, "echo", `{"text":"again"}`); got != "again" {
		t.Errorf("echo after reconnect = %q", got)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// A command that cannot start fails before anything was sent.
func TestStdioStartFailureNotSent(t *testing.T) {
	u, err := New(Options{Name: "missing", Command: filepath.Join(t.TempDir(), "no-such-binary")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = u.Connect(ctxT(t, 5*time.Second))
	if !errors.Is(err, core.ErrNotSent) {
		t.Fatalf("Connect: %v", err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close after failed Connect: %v", err)
	}
	// A child that exits at once: the handshake fails, nothing is left over.
	u, err = New(Options{Name: "false", Command: "false"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Connect(ctxT(t, 5*time.Second)); err == nil || !core.Transient(err) {
		t.Fatalf("Connect to a child that exits: %v", err)
	}
	_ = u.Close()
}

// The child's stderr is kept, bounded, newest last.
func TestStdioStderrBounded(t *testing.T) {
	opts := stdioOptions(t)
	opts.StderrLimit = 1024
	u := connectStdio(t, opts)
	call(t, u, "stderr", `{"n":5000}`)
	sr := u.(StderrReporter)
	waittest.Succeeds(t, 5*time.Second, "the stderr tail", func() error {
		if out := sr.Stderr(); !strings.HasSuffix(out, "END-OF-STDERR\n") {
			return fmt.Errorf("stderr tail missing: %q", out)
		}
		return nil
	})
	if n := len(sr.Stderr()); n != 1024 {
		t.Errorf("kept %d bytes of stderr, want the limit 1024", n)
	}
	if strings.Contains(sr.Stderr(), "starting") {
		t.Error("the oldest stderr was not dropped")
	}
}

// superviseArg, as the first argument, makes the test binary a supervisor
// (Supervise), the role `toolgate _supervise --` plays for the gateway. It
// is handled in init, before TestMain, so a supervised test server needs no
// more than the binary itself.
const superviseArg = "toolgate-test-supervise"

func init() {
	if len(os.Args) > 2 && os.Args[1] == superviseArg && os.Args[2] == "--" {
		os.Exit(Supervise(context.Background(), os.Args[3:], os.Stderr))
	}
}

func needSupervisor(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the supervisor runs on Linux only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func supervisedOptions(t *testing.T) Options {
	t.Helper()
	opts := stdioOptions(t)
	opts.Supervisor = []string{needSupervisor(t), superviseArg, "--"}
	return opts
}

// tree is a grandchild's line of descent under a supervised upstream.
type tree struct{ grandchild, server, supervisor int }

// descent reads who started whom from /proc, starting at a grandchild of
// the test server, and checks the shape a supervised child must have: the
// supervisor leads the group, the server and its grandchild are in it.
func descent(t *testing.T, grandchild int) tree {
	t.Helper()
	g, ok := procStat(grandchild)
	if !ok {
		t.Fatalf("no /proc entry for grandchild %d", grandchild)
	}
	s, ok := procStat(g.ppid)
	if !ok {
		t.Fatalf("no /proc entry for server %d", g.ppid)
	}
	sup, ok := procStat(s.ppid)
	if !ok {
		t.Fatalf("no /proc entry for supervisor %d", s.ppid)
	}
	tr := tree{grandchild, g.ppid, s.ppid}
	if sup.ppid != os.Getpid() || g.pgid != tr.supervisor || s.pgid != tr.supervisor || sup.pgid != tr.supervisor {
		t.Fatalf("process tree %+v: pgids %d/%d/%d, supervisor's parent %d (test %d)",
			tr, g.pgid, s.pgid, sup.pgid, sup.ppid, os.Getpid())
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(tr.supervisor) + "/cmdline")
	if !strings.Contains(string(cmdline), superviseArg) {
		t.Fatalf("the server's parent is not the supervisor: %q", cmdline)
	}
	return tr
}

// waitGroupGone waits (bounded) until no live process is left in group pgid.
func waitGroupGone(t *testing.T, pgid int, within time.Duration) {
	t.Helper()
	waittest.Succeeds(t, within, fmt.Sprintf("group %d to end", pgid), func() error {
		if left := groupMembers(pgid, 0); len(left) != 0 {
			return fmt.Errorf("processes %v still run", left)
		}
		return nil
	})
}

// killGroupOnCleanup kills what is left of group pgid, led by a process
// alive now, when the test ends. Once that leader is reaped the number can
// lead a stranger's group (pid_max is often 32768 and the suite starts
// thousands of processes), so a leader found then with another start time
// is left alone.
func killGroupOnCleanup(t *testing.T, pgid int) {
	started := procStartTime(pgid)
	t.Cleanup(func() {
		if now := procStartTime(pgid); now != "" && now != started {
			return
		}
		for _, pid := range groupMembers(pgid, 0) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	})
}

// IM-10 with a supervisor: the child runs under it in one process group,
// calls pass straight through, and Close stops the whole group.
func TestStdioSupervisedCloseIM10(t *testing.T) {
	leakCheck(t)
	u := connectStdio(t, supervisedOptions(t))
	pid, err := strconv.Atoi(call(t, u, "spawn_grandchild", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	tr := descent(t, pid)
	killGroupOnCleanup(t, tr.supervisor)
	if got := call(t, u, "echo", `{"text":"through"}`); got != "through" {
		t.Errorf("echo = %q", got)
	}
	start := time.Now()
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitGroupGone(t, tr.supervisor, 5*time.Second)
	// The bound is stopChild's own (its grace, then the wait for the
	// reap), not a speed: beyond it Close gave up on the supervisor.
	if d, bound := time.Since(start), supervisedStopGrace+5*time.Second; d > bound {
		t.Errorf("Close took %v, beyond stopChild's bound %v", d, bound)
	}
}

// procStartTime is the start time of pid (clock ticks since boot, field 22
// of /proc/PID/stat), "" if there is no such process or no /proc.
func procStartTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// IM-10, IM-27: when the supervised server dies, the supervisor stops what
// it left behind and exits, the call fails as transient with an unknown
// outcome, and Connect starts a fresh supervisor.
func TestStdioSupervisedCrashIM27(t *testing.T) {
	leakCheck(t)
	u := connectStdio(t, supervisedOptions(t))
	pid, err := strconv.Atoi(call(t, u, "spawn_grandchild", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	tr := descent(t, pid)
	killGroupOnCleanup(t, tr.supervisor)
	_, err = u.CallTool(ctxT(t, 10*time.Second), "crash", nil)
	if !core.Transient(err) || errors.Is(err, core.ErrNotSent) {
		t.Fatalf("crash: %v", err)
	}
	// Before any Close: the supervisor cleans up after the server itself.
	waitGroupGone(t, tr.supervisor, 5*time.Second)
	if _, err := u.Connect(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if got := call(t, u, "echo", `{"text":"again"}`); got != "again" {
		t.Errorf("echo after reconnect = %q", got)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// IM-3 with a supervisor: env and cwd rules are unchanged, the supervisor
// passes its environment and working directory through.
func TestStdioSupervisedEnvIM3(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_SECRET", "xyz")
	u := connectStdio(t, supervisedOptions(t))
	env := call(t, u, "print_env", `{}`)
	for _, kv := range strings.Split(env, "\n") {
		k, _, _ := strings.Cut(kv, "=")
		if !contains(minimalEnv, k) {
			t.Errorf("supervised child has %q beyond the minimal set", k)
		}
	}
	_ = u.Close()

	dir := t.TempDir()
	opts := supervisedOptions(t)
	opts.Env = map[string]string{"A": "1"}
	opts.Cwd = dir
	u = connectStdio(t, opts)
	merged := strings.Split(call(t, u, "print_env", `{}`), "\n")
	if !contains(merged, "A=1") || !contains(merged, "TOOLGATE_TEST_SECRET=xyz") {
		t.Errorf("merged env lacks A=1 or the gateway's variable: %v", merged)
	}
	want, _ := filepath.EvalSymlinks(dir)
	if got, _ := filepath.EvalSymlinks(call(t, u, "cwd", `{}`)); got != want {
		t.Errorf("cwd = %q, want %q", got, want)
	}
}

// A missing program still fails before anything was sent, supervisor or not.
func TestStdioSupervisedStartFailureNotSent(t *testing.T) {
	for _, command := range []string{filepath.Join(t.TempDir(), "no-such-binary"), "toolgate-no-such-program"} {
		opts := supervisedOptions(t)
		opts.Command = command
		u, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = u.Connect(ctxT(t, 5*time.Second))
		if !errors.Is(err, core.ErrNotSent) || !strings.Contains(err.Error(), "no-such") {
			t.Errorf("Connect %s: %v", command, err)
		}
		_ = u.Close()
	}
	if _, err := New(Options{Name: "x", Command: "true", Supervisor: []string{""}}); err == nil {
		t.Error("an empty supervisor command was accepted")
	}
}

// startSupervisor runs the test binary as a supervisor of argv, as the
// gateway would (leading its own process group, SIGTERM as its parent-death
// signal), and returns it with its stdout.
func startSupervisor(t *testing.T, argv ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(needSupervisor(t), append([]string{superviseArg, "--"}, argv...)...)
	setProcessGroup(cmd, true)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killGroupOnCleanup(t, cmd.Process.Pid)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, bufio.NewReader(out)
}

// readPID reads one line holding a pid, bounded.
func readPID(t *testing.T, r *bufio.Reader) int {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		s, _ := r.ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		pid, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			t.Fatalf("want a pid, read %q", s)
		}
		return pid
	case <-time.After(10 * time.Second):
		t.Fatal("no pid within 10s")
	}
	return 0
}

// waitExit waits (bounded) for cmd and returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("%s did not exit within %v", cmd.Path, within)
	}
	return 0
}

// Supervise exits with the command's status: its exit code, 128+N after
// signal N, 127 when it cannot start, 2 with no command.
func TestSuperviseExitStatus(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want int
	}{
		{[]string{"sh", "-c", "exit 7"}, 7},
		{[]string{"sh", "-c", "exit 0"}, 0},
		{[]string{"sh", "-c", "kill -KILL $$"}, 128 + 9},
		{[]string{filepath.Join(t.TempDir(), "no-such-binary")}, SuperviseCannotStart},
	} {
		cmd, _ := startSupervisor(t, tc.argv...)
		if got := waitExit(t, cmd, 10*time.Second); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.argv, got, tc.want)
		}
	}
	var stderr strings.Builder
	if got := Supervise(context.Background(), nil, &stderr); got != SuperviseUsage || stderr.Len() == 0 {
		t.Errorf("no command: exit %d, stderr %q", got, stderr.String())
	}
}

// IM-10: a command that exits leaves nothing behind in its group; the
// stream's end reaches the reader as soon as the group is stopped.
func TestSuperviseStopsLeftoversOnExitIM10(t *testing.T) {
	cmd, out := startSupervisor(t, "sh", "-c", "sleep 300 & echo $!")
	pid := readPID(t, out)
	// The sleep holds the stdout pipe too: EOF means it is gone.
	eof := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, out)
		eof <- err
	}()
	select {
	case <-eof:
	case <-time.After(5 * time.Second):
		t.Fatalf("stdout still open 5s after the command exited: sleep %d alive=%v", pid, processAlive(pid))
	}
	if got := waitExit(t, cmd, 5*time.Second); got != 0 {
		t.Errorf("exit %d, want the command's 0", got)
	}
	waitGroupGone(t, cmd.Process.Pid, time.Second)
}

// IM-10: SIGTERM to the supervisor alone (the parent-death signal the
// gateway gives it) stops the whole group, the supervisor last.
func TestSuperviseSIGTERMStopsGroupIM10(t *testing.T) {
	cmd, out := startSupervisor(t, "sh", "-c", "sleep 300 & echo $!; wait")
	pid := readPID(t, out)
	if g, ok := procStat(pid); !ok || g.pgid != cmd.Process.Pid {
		t.Fatalf("sleep %d is not in the supervisor's group %d: %+v", pid, cmd.Process.Pid, g)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, 5*time.Second)
	waitGroupGone(t, cmd.Process.Pid, time.Second)
	t.Logf("group stopped %v after SIGTERM", time.Since(start))
}

// IM-10: when the supervisor's parent dies without any signal reaching the
// supervisor (here its parent, a shell, is SIGKILLed and sets no
// parent-death signal), the parent watch stops the group.
func TestSuperviseParentGoneIM10(t *testing.T) {
	exe := needSupervisor(t)
	script := `"$0" "$1" -- sh -c 'sleep 300 & echo $!; wait' & wait`
	parent := exec.Command("sh", "-c", script, exe, superviseArg)
	setProcessGroup(parent, false)
	pipe, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		signalGroup(parent.Process.Pid, syscall.SIGKILL)
		_ = parent.Wait()
	})
	pid := readPID(t, bufio.NewReader(pipe))
	g, ok := procStat(pid)
	self, _ := procStat(os.Getpid())
	if !ok || g.pgid == parent.Process.Pid || g.pgid == self.pgid {
		t.Fatalf("sleep %d: %+v; the supervisor should lead a group of its own", pid, g)
	}
	killGroupOnCleanup(t, g.pgid)
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitExit(t, parent, 5*time.Second)
	waitGroupGone(t, g.pgid, 5*time.Second)
}
