//go:build unix && !linux

package mcp

import (
	"errors"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in a process group of its own, so Close can
// stop its grandchildren too (IM-10). Outside Linux there is no parent-death
// signal: a gateway killed with SIGKILL leaves the child running.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }

func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
