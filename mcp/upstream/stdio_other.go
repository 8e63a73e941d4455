//go:build unix && !linux

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

// supervisorSupported: there is no parent-death signal here to wake a
// supervisor, so Options.Supervisor is not used.
const supervisorSupported = false

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

func processAlive(pid int) bool {
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
	return SuperviseCannotStart
}
