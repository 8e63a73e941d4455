//go:build unix

package main

import (
	"os/exec"
	"syscall"
	"time"
)

// setGroup starts the gateway in a process group of its own, so its
// upstreams' processes are stopped with it.
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// stopGroup ends the gateway's group: SIGTERM, then SIGKILL after 5 s.
func stopGroup(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	// Whatever of the group outlived its leader.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
