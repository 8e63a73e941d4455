// Package supervisor is the process toolgate runs a stdio upstream's
// command under (IM-10): it leads the command's process group, is a child
// subreaper, and stops every descendant when the command exits or the
// gateway goes. It is reached through toolgate's hidden _supervise command.
//
// It imports only the standard library and golang.org/x/sys, so that a
// package initialiser can run it before the heavy packages of the binary
// initialise (see cmd/toolgate/internal/earlysupervise): a supervisor
// needs none of them, and every stdio upstream starts one (QB-5).
package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Exit statuses of Run besides the command's own.
const (
	// Usage: no command was given.
	Usage = 2
	// CannotStart: the command could not be started (as in a shell).
	CannotStart = 127
)

// StopGrace is how long a process gets between SIGTERM and SIGKILL, in the
// gateway's stop of a child's group and in the supervisor's sweep (IM-10).
const StopGrace = 2 * time.Second

// Run runs argv as the supervisor and returns the exit status for the
// supervisor's process: the command's own, 128+N when a signal N ended it,
// CannotStart when it could not start. upstream.Supervise documents what
// it does on each platform.
func Run(ctx context.Context, argv []string, stderr io.Writer) int {
	if len(argv) == 0 || argv[0] == "" {
		fmt.Fprintln(stderr, "supervise: no command to run")
		return Usage
	}
	return supervise(ctx, argv, stderr)
}

// PIDs lists the processes in /proc (Linux; elsewhere none).
func PIDs() []int {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := dir.Readdirnames(-1)
	_ = dir.Close()
	out := make([]int, 0, len(names))
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Status is what /proc/PID/stat says of a process.
type Status struct {
	State byte
	PPID  int
	PGID  int
}

// Stat reads a process's state, parent and process group from
// /proc/PID/stat.
func Stat(pid int) (Status, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Status{}, false
	}
	// "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Status{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return Status{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return Status{}, false
	}
	return Status{State: f[0][0], PPID: ppid, PGID: pgid}, true
}
