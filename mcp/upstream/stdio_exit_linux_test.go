package upstream

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestAwaitExitIM10 pins the pidfd wait behind watchExit: it returns when
// the child exits, before anyone reaps it, and returns at once, reporting
// no exit, when the session stops first.
func TestAwaitExitIM10(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	stop, cancel := context.WithCancel(context.Background())
	done := make(chan [2]bool, 1)
	go func() {
		exited, ok := awaitExit(cmd.Process.Pid, stop)
		done <- [2]bool{exited, ok}
	}()
	cancel()
	select {
	case r := <-done:
		if r != [2]bool{false, true} {
			t.Fatalf("stopped wait: exited, ok = %v, want false, true", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("awaitExit did not return after its stop")
	}

	go func() {
		exited, ok := awaitExit(cmd.Process.Pid, context.Background())
		done <- [2]bool{exited, ok}
	}()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet: the child is a zombie, which counts as gone.
	select {
	case r := <-done:
		if r != [2]bool{true, true} {
			t.Fatalf("exit: exited, ok = %v, want true, true", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("awaitExit did not see the child exit")
	}
}
