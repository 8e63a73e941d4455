// Package waittest is the one way tests wait: for a condition, polled until
// a deadline, or for a value on a channel. A test that sleeps to let
// something happen flakes on a loaded machine; one that waits for the thing
// itself, with a generous bound, does not.
//
// It is test support: no product package imports it (layering_test.go
// keeps the installed binary free of *test packages).
package waittest

import (
	"testing"
	"time"
)

// maxInterval caps the pause between two polls: conditions may be costly
// (an HTTP request, a screen capture), and a loaded machine has no cycles
// to spare for spinning.
const maxInterval = 50 * time.Millisecond

// Poll calls cond until it reports true or within has passed, pausing
// between calls (1 ms at first, doubling up to 50 ms), and reports whether
// it held. cond runs in the caller's goroutine, so it may call t.Fatal to
// stop early (a process that exited, say).
func Poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(min(pause, time.Until(deadline)+time.Millisecond))
		pause = min(2*pause, maxInterval)
	}
}

// Eventually waits until cond holds, failing t with what was waited for if
// it does not within the bound.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// Succeeds waits until cond returns nil, failing t with what was waited for
// and cond's last error if it does not within the bound. The error says
// what was seen instead.
func Succeeds(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	var last error
	if !Poll(within, func() bool { last = cond(); return last == nil }) {
		t.Fatalf("timed out after %v waiting for %s: %v", within, what, last)
	}
}

// Recv waits for a value on ch, failing t with what was waited for if none
// comes within the bound or ch is closed.
func Recv[T any](t testing.TB, within time.Duration, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("waiting for %s: the channel closed", what)
		}
		return v
	case <-timer.C:
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
	var zero T
	return zero
}
