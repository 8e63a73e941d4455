package upstream

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/toolgate/toolgate/mcp/upstream/supervisor"
)

// setProcessGroup puts the child in a process group of its own, so Close can
// stop its grandchildren too, and has the kernel signal it if the gateway
// dies (IM-10): SIGKILL for a bare child, SIGTERM for a supervisor, which
// catches it and stops the whole group.
func setProcessGroup(cmd *exec.Cmd, supervised bool) {
	sig := syscall.SIGKILL
	if supervised {
		sig = syscall.SIGTERM
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}

func signalGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }

// groupAlive reports whether any process of the group still runs. Zombies
// do not count: signalling the group would still succeed while they wait
// for an init that may be slow to reap them (as in some containers).
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return len(groupMembers(pgid, 0)) > 0
}

// awaitExit blocks until process pid has exited (a zombie counts) or stop
// is done, on a pidfd the runtime's poller watches: no thread and no
// polling while the child runs. It reports false, having waited for
// nothing, where pidfds cannot be polled (kernels before 5.3); the caller
// then polls /proc.
func awaitExit(pid int, stop context.Context) (exited, ok bool) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return false, false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return false, false
	}
	closing := context.AfterFunc(stop, func() { _ = f.Close() })
	defer closing()
	ready := func(fd uintptr) bool {
		// A pidfd is readable once its process has exited.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		return err == nil && n > 0
	}
	err = rc.Read(ready)
	switch {
	case err == nil:
		return true, true
	case stop.Err() != nil:
		return false, true
	}
	// Not pollable here: the first check is all this wait could do.
	var first bool
	_ = rc.Control(func(fd uintptr) { first = ready(fd) })
	return first, first
}

// processAlive reports whether pid runs; a zombie counts as gone.
func processAlive(pid int) bool { return supervisor.Alive(pid) }
