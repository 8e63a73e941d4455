//go:build linux

package main

// IM-10: processes an upstream detaches from its process group and session
// (setsid; node's `detached: true`) do not outlive `toolgate serve` either,
// however it ends. Exits are awaited on pidfds, not by polling.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/demo"
)

const (
	detachedRounds = 20 // per signal
	// detachedGoneWait bounds gateway exit to every detached process gone.
	// The supervisor's own waits take up to 7 s (stopGrace, then ten
	// rounds of killWait); the rest is room for a loaded machine, where
	// 10 s was once not enough for that sweep. A process the sweep missed
	// still runs at the bound, however long it is.
	detachedGoneWait = 30 * time.Second
)

// detachedConfig is a served gateway with one stdio upstream that starts
// detached processes and records their pids in state.
func detachedConfig(state string) string {
	return fmt.Sprintf(`gateway:
  confirm:
    secret: detached-test-only-confirm-secret-0123456789abcdef
endpoints:
  - path: /mcp
    actor: {id: test, roles: [ADMIN]}
upstreams:
  - name: echo
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, echo]
    env: {%s: "1", %s: %q}
    required: true
`, demo.DetachedEnv, demo.StateEnv, state)
}

// procSession is the session id in /proc/PID/stat, -1 if pid is gone.
func procSession(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return -1
	}
	sid, _ := strconv.Atoi(f[3])
	return sid
}

// pidfd is a handle on a process that stays valid when its pid is reused.
type pidfd struct {
	pid, fd int
}

func openPidfd(t *testing.T, pid int) pidfd {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	p := pidfd{pid: pid, fd: fd}
	// A survivor is ended at cleanup, through its pidfd so no other
	// process can be hit.
	t.Cleanup(func() {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		_ = unix.Close(fd)
	})
	return p
}

// waitGone waits until the process has exited (a zombie counts as gone) or
// until the deadline passes; it reports whether it exited. A past deadline
// still looks once.
func (p pidfd) waitGone(deadline time.Time) bool {
	for {
		ms := max(0, time.Until(deadline).Milliseconds())
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(ms))
		switch {
		case err == nil && n > 0:
			return true
		case err == nil && ms == 0:
			return false
		case err != nil && !errors.Is(err, syscall.EINTR):
			return false
		}
	}
}

// detachedRound serves a gateway whose upstream detached two processes,
// ends the gateway with sig and reports the detached processes still
// running detachedGoneWait after the gateway exited.
func detachedRound(t *testing.T, sig syscall.Signal) []int {
	t.Helper()
	state := t.TempDir()
	g := startServe(t, writeServeConfig(t, detachedConfig(state)), nil)
	b, err := os.ReadFile(filepath.Join(state, "detached.pid"))
	if err != nil {
		t.Fatalf("the upstream recorded no detached processes: %v\n%s", err, g.stderr)
	}
	if len(g.upstreamGroups) != 1 {
		t.Fatalf("gateway has upstream process groups %v, want one", g.upstreamGroups)
	}
	group := g.upstreamGroups[0]
	var fds []pidfd
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("detached.pid: %q", b)
		}
		fds = append(fds, openPidfd(t, pid))
		// Each left the upstream's group and session: stopping the group
		// alone cannot reach it.
		if p, _ := readProc(pid); p.pgid == group || procSession(pid) == procSession(group) {
			t.Fatalf("process %d is in group %d, session %d, the upstream's: not detached", pid, p.pgid, procSession(pid))
		}
	}
	if len(fds) != 2 {
		t.Fatalf("detached.pid: %q, want two pids", b)
	}
	if err := g.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	g.waitExit(t)
	deadline := time.Now().Add(detachedGoneWait)
	var survivors []int
	for _, p := range fds {
		if !p.waitGone(deadline) {
			survivors = append(survivors, p.pid)
			// Say where it stands, so a miss can be traced to its cause.
			info, _ := readProc(p.pid)
			sup, supAlive := readProc(group)
			t.Logf("survivor %d: state %c, parent %d, group %d, session %d; supervisor %d present %v state %c",
				p.pid, info.state, info.ppid, info.pgid, procSession(p.pid), group, supAlive, sup.state)
		}
	}
	if len(survivors) > 0 {
		t.Logf("gateway log:\n%s", g.stderr)
	}
	return survivors
}

// IM-10: 20 rounds each of SIGTERM, SIGINT and SIGKILL to `toolgate serve`
// whose stdio upstream detached a child (setsid) and a daemon (setsid, its
// parent gone): zero survivors. The supervisor is a child subreaper, so
// orphans are reparented to it, and it ends every descendant.
func TestServeNoDetachedSurvivorsIM10(t *testing.T) {
	toolgateBinary(t)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"SIGINT", syscall.SIGINT}, {"SIGKILL", syscall.SIGKILL}} {
		sig := tc.sig
		t.Run(tc.name, func(t *testing.T) {
			total := 0
			for round := range detachedRounds {
				var survivors []int
				t.Run(strconv.Itoa(round), func(t *testing.T) { survivors = detachedRound(t, sig) })
				if len(survivors) > 0 {
					total++
					t.Errorf("round %d: detached processes %v still run %v after the gateway exited", round, survivors, detachedGoneWait)
				}
			}
			t.Logf("%s: survivors in %d of %d rounds", tc.name, total, detachedRounds)
		})
	}
}

// superviseScript runs `toolgate _supervise -- sh -c script` leading its own
// group, as the gateway starts it, and returns it with the first line the
// script prints (a pid).
func superviseScript(t *testing.T, script string) (*started, int) {
	t.Helper()
	bin := toolgateBinary(t)
	cmd := exec.Command(bin, "_supervise", "--", "sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	cmd.Stdout = w
	s := start(t, cmd)
	_ = w.Close()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Scan()
		line <- sc.Text()
	}()
	select {
	case l := <-line:
		pid, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil {
			t.Fatalf("script printed %q, want a pid\n%s", l, &s.out)
		}
		return s, pid
	case <-time.After(10 * time.Second):
		t.Fatalf("script printed nothing within 10s\n%s", &s.out)
	}
	return nil, 0
}

// IM-10: a detached process that ignores SIGTERM is SIGKILLed by the
// supervisor after its grace, before the supervisor exits.
func TestSuperviseDetachedIgnoringSIGTERMIM10(t *testing.T) {
	s, pid := superviseScript(t, `setsid sh -c 'trap "" TERM; echo $$; exec </dev/null >/dev/null 2>&1; while :; do sleep 1; done' &
exec sleep 300`)
	p := openPidfd(t, pid)
	if procSession(pid) == procSession(s.cmd.Process.Pid) {
		t.Fatalf("process %d did not leave the supervisor's session", pid)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.waitExit(t, 15*time.Second)
	if !p.waitGone(time.Now()) {
		t.Fatalf("the detached process %d outlived its supervisor", pid)
	}
}

// The supervisor reaps the orphans it inherits as a child subreaper: a
// daemon that exits leaves no zombie behind while the command runs on.
func TestSuperviseReapsOrphansIM10(t *testing.T) {
	s, pid := superviseScript(t, `setsid sh -c 'sleep 0.2 </dev/null >/dev/null 2>&1 & echo $!'
exec sleep 300`)
	p := openPidfd(t, pid)
	if !p.waitGone(time.Now().Add(10 * time.Second)) {
		t.Fatalf("the daemon %d did not exit", pid)
	}
	if info, ok := readProc(pid); ok && info.ppid != s.cmd.Process.Pid {
		t.Fatalf("the daemon %d has parent %d, not the supervisor %d", pid, info.ppid, s.cmd.Process.Pid)
	}
	// Its exit wakes the supervisor (SIGCHLD), which reaps it at once.
	if !waittest.Poll(5*time.Second, func() bool { _, ok := readProc(pid); return !ok }) {
		t.Fatalf("the daemon %d is still a zombie 5s after it exited", pid)
	}
}
