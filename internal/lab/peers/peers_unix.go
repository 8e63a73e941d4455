//go:build unix

package peers

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// lockFile takes an exclusive flock on path, creating it if needed; the lock
// also ends with the process, so a crashed test binary never wedges others.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

func setGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// killGroup sends SIGKILL to the group pgid of a leader the caller started.
// Once the leader is reaped its number is free again unless members of its
// group remain; a process then found with that pid is someone else's,
// likely leading a group of its own (the suite starts thousands, pid_max is
// often 32768), and is left alone.
func killGroup(pgid int, reaped bool) {
	if reaped {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pgid)); err == nil {
			return
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
