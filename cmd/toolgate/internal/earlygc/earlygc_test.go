package earlygc

import (
	"os"
	"runtime/debug"
	"strconv"
	"testing"
)

// gogc is the setting the runtime started with: GOGC's, or 100.
func gogc(t *testing.T) int {
	t.Helper()
	switch v := os.Getenv("GOGC"); v {
	case "":
		return 100
	case "off":
		return -1
	default:
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Skipf("GOGC=%q", v)
		}
		return n
	}
}

// QB-5: the collector is off from this package's initialiser until Resume,
// which gives back the runtime's own setting, once: a setting made after
// it stays.
func TestHeldUntilResumeQB5(t *testing.T) {
	want := gogc(t)
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("before Resume the collector's setting is %d, want -1 (held off)", got)
	}
	Resume()
	if got := debug.SetGCPercent(want); got != want {
		t.Fatalf("after Resume the setting is %d, want %d", got, want)
	}
	debug.SetGCPercent(250)
	Resume()
	if got := debug.SetGCPercent(want); got != 250 {
		t.Errorf("a second Resume changed a later setting: %d, want 250", got)
	}
}
