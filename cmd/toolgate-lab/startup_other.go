//go:build !unix

package main

import "os/exec"

func setGroup(*exec.Cmd) {}

func stopGroup(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Kill()
	<-exited
}
