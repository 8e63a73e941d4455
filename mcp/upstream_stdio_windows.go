package mcp

import (
	"os"
	"os/exec"
	"syscall"
)

// Windows has no process groups to signal: Close kills the direct child only,
// and a gateway that dies leaves it running.
func setProcessGroup(*exec.Cmd) {}

func signalGroup(pid int, sig syscall.Signal) {
	if sig != syscall.SIGKILL {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func groupAlive(int) bool { return false }

func processAlive(pid int) bool {
	_, err := os.FindProcess(pid)
	return err == nil
}
