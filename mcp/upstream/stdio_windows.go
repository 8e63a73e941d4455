package upstream

import (
	"context"
	"os"
	"os/exec"
	"syscall"

	"github.com/toolgate/toolgate/mcp/upstream/supervisor"
)

// Windows has no process groups to signal: Close kills the direct child only,
// and a gateway that dies leaves it running.
func setProcessGroup(*exec.Cmd, bool) {}

func signalGroup(pid int, sig syscall.Signal) {
	if sig != syscall.SIGKILL {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func groupAlive(int) bool { return false }

// awaitExit waits for nothing here: watchExit polls.
func awaitExit(int, context.Context) (exited, ok bool) { return false, false }

func processAlive(pid int) bool { return supervisor.Alive(pid) }
