//go:build unix

package demo

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// startDetached starts two sleeps in sessions of their own: one a child of
// this process, one a daemon (its shell parent exits once it is started).
// Neither is waited for: they are meant to outlive this process unless
// whoever supervises it ends them too.
func startDetached() ([]string, error) {
	child := exec.Command("sleep", "300")
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		return nil, err
	}
	pid := strconv.Itoa(child.Process.Pid)
	_ = child.Process.Release()

	daemon := exec.Command("sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 & echo $!")
	daemon.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var out bytes.Buffer
	daemon.Stdout = &out
	if err := daemon.Run(); err != nil {
		return []string{pid}, err
	}
	return []string{pid, strings.TrimSpace(out.String())}, nil
}
