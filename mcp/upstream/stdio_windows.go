package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// supervisorSupported: Options.Supervisor is not used on Windows.
const supervisorSupported = false

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

func processAlive(pid int) bool {
	_, err := os.FindProcess(pid)
	return err == nil
}

// supervise runs the command unsupervised and passes its exit status on.
func supervise(ctx context.Context, argv []string, stderr io.Writer) int {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	fmt.Fprintf(stderr, "supervise: %v\n", err)
	return SuperviseCannotStart
}
