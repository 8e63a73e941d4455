//go:build linux

package main

// IM-10: no child process outlives the gateway, however it ends. These tests
// read the process table from /proc.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/demo"
	"github.com/toolgate/toolgate/mcp/upstream"
)

type procInfo struct {
	state      byte
	ppid, pgid int
}

// readProc reads state, parent and process group from /proc/PID/stat.
func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold anything
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return procInfo{state: f[0][0], ppid: ppid, pgid: pgid}, true
}

// liveProcs lists live (not zombie) processes matching keep.
func liveProcs(keep func(pid int, p procInfo) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok && p.state != 'Z' && keep(pid, p) {
			out = append(out, pid)
		}
	}
	return out
}

func groupProcs(pgid int) []int {
	return liveProcs(func(_ int, p procInfo) bool { return p.pgid == pgid })
}

func alive(pid int) bool {
	p, ok := readProc(pid)
	return ok && p.state != 'Z'
}

// assertGroupGone polls (bounded) until nothing of group pgid runs and pid
// is gone.
func assertGroupGone(t *testing.T, pgid, pid int, within time.Duration) {
	t.Helper()
	var left []int
	if !waittest.Poll(within, func() bool { left = groupProcs(pgid); return len(left) == 0 && !alive(pid) }) {
		t.Fatalf("after %v, group %d still has %v; process %d alive: %v", within, pgid, left, pid, alive(pid))
	}
}

// reapGroup kills whatever is left of group pgid at cleanup.
func reapGroup(t *testing.T, pgid int) {
	t.Cleanup(func() {
		for _, pid := range groupProcs(pgid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// waitPIDFile waits (bounded) for the grandchild pid a demo upstream writes.
func waitPIDFile(t *testing.T, dir string, exited <-chan struct{}) int {
	t.Helper()
	path := filepath.Join(dir, "grandchild.pid")
	var b []byte
	if !waittest.Poll(20*time.Second, func() bool {
		var err error
		if b, err = os.ReadFile(path); err == nil && len(b) > 0 {
			return true
		}
		select {
		case <-exited:
			t.Fatal("exited before the upstream started its grandchild")
		default:
		}
		return false
	}) {
		t.Fatalf("no %s within 20s", path)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %q", path, b)
	}
	return pid
}

// started is a process the test started, with its end observable.
type started struct {
	cmd    *exec.Cmd
	exited chan struct{}
	out    bytes.Buffer // stdout and stderr
}

func start(t *testing.T, cmd *exec.Cmd) *started {
	t.Helper()
	s := &started{cmd: cmd, exited: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = &s.out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &s.out
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.exited
	})
	return s
}

func (s *started) waitExit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-s.exited:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("%v still runs after %v", s.cmd.Args, within)
	}
	return 0
}

// stalledFlakyEnv makes the flaky demo start a grandchild, write its pid to
// dir and then stall in start-up.
func stalledFlakyEnv(dir string) map[string]string {
	return map[string]string{demo.GrandchildEnv: "1", demo.StallEnv: "60s", demo.StateEnv: dir}
}

// orphanConfig is a gateway config with one stdio upstream, flaky, stalled
// in start-up with a grandchild.
func orphanConfig(t *testing.T, state string) string {
	t.Helper()
	var env strings.Builder
	for k, v := range stalledFlakyEnv(state) {
		fmt.Fprintf(&env, "%s: %q, ", k, v)
	}
	cfg := fmt.Sprintf(`gateway:
  confirm:
    secret: orphans-test-only-confirm-secret-0123456789abcdef
endpoints:
  - path: /mcp
    actor: {id: test, roles: [ADMIN]}
upstreams:
  - name: flaky
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, flaky]
    env: {%s}
    timeout: 120s
`, strings.TrimSuffix(env.String(), ", "))
	path := filepath.Join(t.TempDir(), "orphans.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// gatewayDies runs `toolgate check` against an upstream stalled in
// start-up, ends the gateway with sig while it waits, and checks that
// nothing of the upstream's process group survives, its grandchild included.
func gatewayDies(t *testing.T, sig syscall.Signal) {
	bin := toolgateBinary(t)
	state := t.TempDir()
	cmd := exec.Command(bin, "check", "--config", orphanConfig(t, state))
	cmd.Env = append(os.Environ(), gateway.SelfEnv+"="+bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	gw := start(t, cmd)
	grandchild := waitPIDFile(t, state, gw.exited)
	kids := liveProcs(func(_ int, p procInfo) bool { return p.ppid == cmd.Process.Pid })
	if len(kids) != 1 {
		t.Fatalf("gateway %d has children %v, want one upstream process", cmd.Process.Pid, kids)
	}
	leader, _ := readProc(kids[0])
	pgid := leader.pgid
	reapGroup(t, pgid)
	if g, _ := readProc(grandchild); pgid != kids[0] || g.pgid != pgid || pgid == cmd.Process.Pid {
		t.Fatalf("upstream %d leads group %d, grandchild %d is in %d, gateway %d", kids[0], pgid, grandchild, g.pgid, cmd.Process.Pid)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", kids[0]))
	t.Logf("upstream process: %q", bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))

	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	code := gw.waitExit(t, 15*time.Second)
	t.Logf("gateway exited with %d after %v", code, sig)
	assertGroupGone(t, pgid, grandchild, 5*time.Second)
}

// IM-10: SIGTERM to a gateway blocked in start-up: it exits, and its stdio
// upstream, grandchild included, is gone within 5 s.
func TestNoOrphansOnGatewaySIGTERMIM10(t *testing.T) { gatewayDies(t, syscall.SIGTERM) }

// IM-10: SIGKILL to the gateway — nothing of it runs any more — and still
// its stdio upstream's whole process group is gone within 5 s: the
// supervisor (toolgate _supervise) gets its parent-death signal and stops
// the group.
func TestNoOrphansOnGatewaySIGKILLIM10(t *testing.T) { gatewayDies(t, syscall.SIGKILL) }

// superviseFlaky starts `toolgate _supervise -- toolgate demo-upstream
// flaky`, stalled with a grandchild, as the gateway would start it (leading
// its own process group). It returns the supervisor and the grandchild pid.
func superviseFlaky(t *testing.T) (*started, int) {
	bin := toolgateBinary(t)
	state := t.TempDir()
	cmd := exec.Command(bin, "_supervise", "--", bin, "demo-upstream", "flaky")
	for k, v := range stalledFlakyEnv(state) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "PATH="+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe() // held open: the server must not see EOF
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close() })
	s := start(t, cmd)
	reapGroup(t, cmd.Process.Pid)
	grandchild := waitPIDFile(t, state, s.exited)
	if g, _ := readProc(grandchild); g.pgid != cmd.Process.Pid {
		t.Fatalf("grandchild %d is in group %d, not the supervisor's %d", grandchild, g.pgid, cmd.Process.Pid)
	}
	return s, grandchild
}

// IM-10: SIGTERM to the supervisor alone — what it gets from the kernel
// when the gateway dies — stops its whole group.
func TestSuperviseSIGTERMIM10(t *testing.T) {
	s, grandchild := superviseFlaky(t)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.waitExit(t, 10*time.Second)
	assertGroupGone(t, s.cmd.Process.Pid, grandchild, 5*time.Second)
}

// IM-10: the supervisor's parent dies without any signal reaching the
// supervisor (a shell that sets no parent-death signal, SIGKILLed): the
// supervisor sees its parent change and stops its group.
func TestSuperviseParentGoneIM10(t *testing.T) {
	bin := toolgateBinary(t)
	state := t.TempDir()
	shell := exec.Command("sh", "-c", `"$0" _supervise -- "$0" demo-upstream flaky & wait`, bin)
	for k, v := range stalledFlakyEnv(state) {
		shell.Env = append(shell.Env, k+"="+v)
	}
	shell.Env = append(shell.Env, "PATH="+os.Getenv("PATH"))
	shell.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sh := start(t, shell)
	reapGroup(t, shell.Process.Pid)
	grandchild := waitPIDFile(t, state, sh.exited)
	g, _ := readProc(grandchild)
	if g.pgid == shell.Process.Pid || g.pgid == syscall.Getpgrp() {
		t.Fatalf("grandchild %d is in group %d: the supervisor should lead a group of its own", grandchild, g.pgid)
	}
	reapGroup(t, g.pgid)
	if err := shell.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	sh.waitExit(t, 5*time.Second)
	assertGroupGone(t, g.pgid, grandchild, 5*time.Second)
}

// The supervisor passes the MCP stream straight through and exits with the
// command's status; what the command leaves in the group is stopped.
func TestSuperviseBinaryPassThrough(t *testing.T) {
	bin := toolgateBinary(t)
	up, err := upstream.New(upstream.Options{
		Name: "flaky", Command: bin, Args: []string{"demo-upstream", "flaky"},
		Supervisor: []string{bin, "_supervise", "--"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if info, err := up.Connect(ctx); err != nil || info.Name != "toolgate-demo-flaky" {
		t.Fatalf("Connect through the supervisor: %+v %v", info, err)
	}
	res, err := up.CallTool(ctx, "ok", nil)
	if err != nil || !strings.Contains(string(res.JSON), `"ok"`) {
		t.Fatalf("call through the supervisor: %s %v", res.JSON, err)
	}
	if err := up.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	for _, tc := range []struct {
		script string
		want   int
	}{{"exit 7", 7}, {"kill -TERM $$", 128 + 15}} {
		cmd := exec.Command(bin, "_supervise", "--", "sh", "-c", tc.script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if got := start(t, cmd).waitExit(t, 10*time.Second); got != tc.want {
			t.Errorf("%q: exit %d, want %d", tc.script, got, tc.want)
		}
	}
	// The sleep left behind holds stdout: reading to the end proves it gone.
	cmd := exec.Command(bin, "_supervise", "--", "sh", "-c", "sleep 300 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	cmd.Stdout = w
	s := start(t, cmd)
	_ = w.Close()
	reapGroup(t, cmd.Process.Pid)
	lines := make(chan []string, 1)
	go func() {
		var got []string
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		lines <- got
	}()
	select {
	case got := <-lines:
		if len(got) != 1 {
			t.Fatalf("stdout = %q", got)
		}
		// The pipe closes as the sleep exits, a moment before it is gone
		// from the process table.
		pid, _ := strconv.Atoi(got[0])
		assertGroupGone(t, cmd.Process.Pid, pid, 2*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("stdout still open 10s after the command exited")
	}
	if got := s.waitExit(t, 5*time.Second); got != 0 {
		t.Errorf("exit %d, want 0", got)
	}
}
