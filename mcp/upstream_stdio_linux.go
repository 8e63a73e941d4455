package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// supervisorSupported: UpstreamOptions.Supervisor is used on this platform.
const supervisorSupported = true

// setProcessGroup puts the child in a process group of its own, so Close can
// stop its grandchildren too, and has the kernel signal it if the gateway
// dies (IM-10): SIGKILL for a bare child, SIGTERM for a supervisor, which
// catches it and stops the whole group.
func setProcessGroup(cmd *exec.Cmd, supervised bool) {
	sig := syscall.SIGKILL
	if supervised {
		sig = syscall.SIGTERM
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}

func signalGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }

// groupAlive reports whether any process of the group still runs. Zombies
// do not count: signalling the group would still succeed while they wait
// for an init that may be slow to reap them (as in some containers).
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return len(groupMembers(pgid, 0)) > 0
}

// processAlive reports whether pid runs; a zombie counts as gone.
func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// superviseTick is how often the supervisor checks that its parent lives.
const superviseTick = 250 * time.Millisecond

func supervise(ctx context.Context, argv []string, stderr io.Writer) int {
	self := os.Getpid()
	parent := syscall.Getppid()
	// Stopping the group must reach everything the command starts and
	// nothing else, so the supervisor leads a group of its own.
	if syscall.Getpgrp() != self {
		if err := syscall.Setpgid(0, 0); err != nil {
			fmt.Fprintf(stderr, "supervise: process group: %v\n", err)
			return SuperviseCannotStart
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Same process group as the supervisor (no Setpgid). If the supervisor
	// itself is killed outright, the command at least goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "supervise: %v\n", err)
		return SuperviseCannotStart
	}
	releaseStdio()
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()

	tick := time.NewTicker(superviseTick)
	defer tick.Stop()
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-sigs:
			break wait
		case <-ctx.Done():
			break wait
		case <-tick.C:
			if syscall.Getppid() != parent {
				break wait
			}
		}
	}
	stopGroup(self, self)
	// A command that left the group is stopped on its own.
	if !closedWithin(exited, 100*time.Millisecond) {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if !closedWithin(exited, stopGrace) {
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	return exitStatus(cmd.ProcessState)
}

func closedWithin(c <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
		return true
	case <-t.C:
		return false
	}
}

// releaseStdio points the supervisor's own stdin and stdout at /dev/null
// once the command holds them, so the gateway sees the end of the stream as
// soon as the command's side closes, whatever the supervisor is doing.
func releaseStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer null.Close()
	fd := int(null.Fd())
	_ = syscall.Dup3(fd, 0, 0)
	_ = syscall.Dup3(fd, 1, 0)
}

// stopGroup stops every member of process group pgid but self: SIGTERM to
// the group (the supervisor catches its own copy), then SIGKILL to whatever
// is left after stopGrace.
func stopGroup(pgid, self int) {
	if len(groupMembers(pgid, self)) == 0 {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(stopGrace)
	for time.Now().Before(deadline) {
		if len(groupMembers(pgid, self)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range groupMembers(pgid, self) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// exitStatus is the status a shell would report for the command.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return SuperviseCannotStart
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
