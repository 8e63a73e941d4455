//go:build unix && !linux

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// Supported: there is no parent-death signal here to wake a supervisor, so
// the gateway does not run commands under it.
const Supported = false

// Alive reports whether pid runs.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// supervise has nothing to add here: the process becomes the command.
func supervise(_ context.Context, argv []string, stderr io.Writer) int {
	path, err := exec.LookPath(argv[0])
	if err == nil {
		err = syscall.Exec(path, argv, os.Environ())
	}
	fmt.Fprintf(stderr, "supervise: %v\n", err)
	return CannotStart
}
