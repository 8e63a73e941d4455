package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Supported: the supervisor does its work on this platform; the gateway
// runs stdio commands under it.
const Supported = true

// Alive reports whether pid runs; a zombie counts as gone.
func Alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// superviseTick is how often the supervisor checks that its parent lives.
const superviseTick = 250 * time.Millisecond

// Bounds of the supervisor's final sweep, after StopGrace: at most
// killRounds rounds of "find every descendant, SIGKILL it, wait up to
// killWait for it to exit", for processes that fork while being stopped.
const (
	killRounds = 10
	killWait   = 500 * time.Millisecond
)

func supervise(ctx context.Context, argv []string, stderr io.Writer) int {
	self := os.Getpid()
	parent := syscall.Getppid()
	// Stopping the group must reach everything the command starts and
	// nothing else, so the supervisor leads a group of its own.
	if syscall.Getpgrp() != self {
		if err := syscall.Setpgid(0, 0); err != nil {
			fmt.Fprintf(stderr, "supervise: process group: %v\n", err)
			return CannotStart
		}
	}
	// A process that leaves the group (setsid, node's detached: true) and
	// whose parent then dies would be reparented to init and escape. As a
	// child subreaper the supervisor inherits such orphans instead, so every
	// process the command started stays its descendant and can be ended.
	// Without it (a sandbox refusing prctl) the group is still stopped.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "supervise: not a child subreaper, detached processes may outlive the gateway: %v\n", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Same process group as the supervisor (no Setpgid). If the supervisor
	// itself is killed outright, the command at least goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "supervise: %v\n", err)
		return CannotStart
	}
	cmdPid := cmd.Process.Pid
	releaseStdio()
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()

	tick := time.NewTicker(superviseTick)
	defer tick.Stop()
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-sigs:
			break wait
		case <-ctx.Done():
			break wait
		case <-chld:
			// Inherited orphans that exit are the supervisor's to reap.
			reapOrphans(self, cmdPid)
		case <-tick.C:
			if syscall.Getppid() != parent {
				break wait
			}
		}
	}
	stopDescendants(self, cmdPid)
	// Backstop: the command is a descendant and was stopped above.
	if !closedWithin(exited, 100*time.Millisecond) {
		_ = cmd.Process.Kill()
		<-exited
	}
	// Only now is every thread of the command gone. A child one of its
	// threads started is reparented to the supervisor when the last of them
	// exits, which on a loaded machine can come after the sweep above found
	// nothing more; one more sweep ends it (IM-10).
	stopDescendants(self, cmdPid)
	return exitStatus(cmd.ProcessState)
}

func closedWithin(c <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
		return true
	case <-t.C:
		return false
	}
}

// releaseStdio points the supervisor's own stdin and stdout at /dev/null
// once the command holds them, so the gateway sees the end of the stream as
// soon as the command's side closes, whatever the supervisor is doing.
func releaseStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer null.Close()
	fd := int(null.Fd())
	_ = syscall.Dup3(fd, 0, 0)
	_ = syscall.Dup3(fd, 1, 0)
}

// stopDescendants ends every process below the supervisor self, in its
// process group or not: SIGTERM to each, SIGKILL to whatever is left after
// StopGrace, in bounded rounds that also catch processes forked meanwhile.
// Exits are awaited on pidfds. The command's own process, cmdPid, is left
// for its Wait to reap; every other child that exits is reaped here.
func stopDescendants(self, cmdPid int) {
	targets := Descendants(self)
	for _, pid := range targets {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	waitExited(targets, time.Now().Add(StopGrace))
	reapOrphans(self, cmdPid)
	for range killRounds {
		targets = Descendants(self)
		if len(targets) == 0 {
			// A pass over /proc is no snapshot: a process read while
			// its parent lived, the parent read once exited (pids wrap,
			// so the child may come first), belongs to nobody in it.
			// The child has been reparented to self by then, so a
			// second pass finds it.
			if targets = Descendants(self); len(targets) == 0 {
				return
			}
		}
		for _, pid := range targets {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		waitExited(targets, time.Now().Add(killWait))
		reapOrphans(self, cmdPid)
	}
}

// Descendants lists the live processes below self, from /proc, together
// with any other live member of self's process group. Zombies are left out
// of the list, since they have already exited, but the walk goes through
// them: a multi-threaded process whose main thread has exited shows as a
// zombie while its other threads still run, and the children they started
// stay listed under it until the last thread is gone.
func Descendants(self int) []int {
	children := map[int][]int{}
	zombie := map[int]bool{}
	var group []int
	for _, pid := range PIDs() {
		if pid == self {
			continue
		}
		st, ok := Stat(pid)
		if !ok {
			continue
		}
		children[st.PPID] = append(children[st.PPID], pid)
		if st.State == 'Z' {
			zombie[pid] = true
			continue
		}
		if st.PGID == self {
			group = append(group, pid)
		}
	}
	seen := map[int]bool{self: true}
	var out []int
	// Breadth first; seen bounds the walk however /proc changed meanwhile.
	queue := []int{self}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				if !zombie[c] {
					out = append(out, c)
				}
				queue = append(queue, c)
			}
		}
	}
	for _, pid := range group {
		if !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	return out
}

// reapOrphans waits for the exited children of self other than cmdPid: as a
// child subreaper the supervisor inherits orphans, and nobody else will.
func reapOrphans(self, cmdPid int) {
	for _, pid := range PIDs() {
		if pid == cmdPid || pid == self {
			continue
		}
		if st, ok := Stat(pid); ok && st.PPID == self && st.State == 'Z' {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
	}
}

// waitExited waits until every process of pids has exited (a zombie counts)
// or deadline passes, on pidfds; where pidfds are missing (Linux before
// 5.3) it polls /proc instead.
func waitExited(pids []int, deadline time.Time) {
	var fds []unix.PollFd
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		switch {
		case err == nil:
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		case errors.Is(err, syscall.ESRCH):
			// Already gone.
		default:
			pollExited(pids, deadline)
			for _, f := range fds {
				_ = unix.Close(int(f.Fd))
			}
			return
		}
	}
	defer func() {
		for _, f := range fds {
			_ = unix.Close(int(f.Fd))
		}
	}()
	for {
		left := time.Until(deadline)
		pending := fds[:0:0]
		for _, f := range fds {
			if f.Revents == 0 {
				pending = append(pending, unix.PollFd{Fd: f.Fd, Events: unix.POLLIN})
			} else {
				_ = unix.Close(int(f.Fd))
			}
		}
		fds = pending
		if len(fds) == 0 || left <= 0 {
			return
		}
		_, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// pollExited is waitExited without pidfds.
func pollExited(pids []int, deadline time.Time) {
	for time.Now().Before(deadline) {
		if !slices.ContainsFunc(pids, Alive) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exitStatus is the status a shell would report for the command.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return CannotStart
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
