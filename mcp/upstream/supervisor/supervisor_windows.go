package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Supported: the gateway does not run commands under a supervisor on
// Windows.
const Supported = false

// Alive reports whether pid runs.
func Alive(pid int) bool {
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
	return CannotStart
}
