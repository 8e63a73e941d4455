//go:build unix && !linux

package upstream

import (
	"context"
	"errors"
	"os/exec"
	"syscall"

	"github.com/toolgate/toolgate/mcp/upstream/supervisor"
)

// setProcessGroup puts the child in a process group of its own, so Close can
// stop its grandchildren too (IM-10). Outside Linux there is no parent-death
// signal: a gateway killed with SIGKILL leaves the child running.
func setProcessGroup(cmd *exec.Cmd, _ bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }

func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// awaitExit waits for nothing here: watchExit polls.
func awaitExit(int, context.Context) (exited, ok bool) { return false, false }

func processAlive(pid int) bool { return supervisor.Alive(pid) }
