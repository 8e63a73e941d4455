//go:build linux

package main

import "golang.org/x/sys/unix"

// groupLeader is a process group leader a test started or found, held by a
// pidfd. pid_max is often 32768 and the suite starts thousands of processes
// that lead groups of their own, so a group number may name another test's
// gateway by cleanup time; signalling -pid then kills a stranger (IM-10's
// tests once lost a supervisor that way and counted its orphans).
type groupLeader struct {
	pid, fd int
}

// holdLeader opens a pidfd on pid; fd is -1 where that fails (pid gone).
func holdLeader(pid int) groupLeader {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		fd = -1
	}
	return groupLeader{pid: pid, fd: fd}
}

// exited reports whether the leader has exited (a zombie counts).
func (l groupLeader) exited() bool {
	if l.fd < 0 {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// killGroup sends SIGKILL to the leader's group while the number is still
// that group's: the leader runs or is an unreaped zombie, or no process has
// the number (then only members the group kept can hold it). A live
// process with the leader's pid after the leader exited is someone else.
func (l groupLeader) killGroup() {
	if l.exited() {
		if st, ok := readProc(l.pid); ok && st.state != 'Z' {
			return
		}
	}
	_ = unix.Kill(-l.pid, unix.SIGKILL)
}

// release closes the pidfd.
func (l groupLeader) release() {
	if l.fd >= 0 {
		_ = unix.Close(l.fd)
	}
}
