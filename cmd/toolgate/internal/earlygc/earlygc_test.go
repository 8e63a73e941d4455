package earlygc

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"
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

// collectUntil runs collections until done is closed: a cleanup runs on
// the runtime's own goroutine some time after the collection that found
// its object unreachable. Bounded: a cleanup that never runs fails the
// test rather than hanging it.
func collectUntil(t *testing.T, done <-chan struct{}) {
	t.Helper()
	for range 2000 {
		runtime.GC()
		select {
		case <-done:
			return
		default:
			time.Sleep(time.Millisecond)
		}
	}
	t.Fatal("no collection gave the setting back")
}

// QB-5: the collector is off from this package's initialiser until Resume,
// which widens the first goal (firstFactor times the setting); the first
// collection gives back the runtime's own setting, once: a setting made
// after it stays.
func TestHeldUntilResumeQB5(t *testing.T) {
	want := gogc(t)
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("before Resume the collector's setting is %d, want -1 (held off)", got)
	}
	Resume()
	wide := want
	if want > 0 {
		wide = int(widened(int32(want)))
	}
	select {
	case <-Settled():
		// A collection already ran (the test binary's own heap reached the
		// goal): only what follows can be checked.
	default:
		if got := debug.SetGCPercent(wide); got != wide {
			t.Fatalf("after Resume, before a collection, the setting is %d, want %d", got, wide)
		}
	}
	collectUntil(t, Settled())
	if got := debug.SetGCPercent(want); got != want {
		t.Fatalf("after the first collection the setting is %d, want %d", got, want)
	}
	debug.SetGCPercent(250)
	Resume()
	runtime.GC()
	if got := debug.SetGCPercent(want); got != 250 {
		t.Errorf("a second Resume changed a later setting: %d, want 250", got)
	}
}

// recorder stands in for the runtime's setting.
type recorder struct {
	mu  sync.Mutex
	cur int32
}

func (r *recorder) set(v int32) int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.cur
	r.cur = v
	return prev
}

func (r *recorder) get() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// QB-5: what Resume sets and what the first collection gives back, for a
// setting left alone, one changed in between (which stays), one already
// as wide (left as it is) and one off (not widened, settled at once).
func TestFirstCollectionGivesBackQB5(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		gogc, between, wantWide int32
		want                    int32
	}{
		{name: "left alone", gogc: 100, wantWide: 400, want: 100},
		{name: "GOGC=50", gogc: 50, wantWide: 200, want: 50},
		{name: "GOGC=200, capped", gogc: 200, wantWide: 400, want: 200},
		{name: "GOGC=1000, already wide", gogc: 1000, wantWide: 1000, want: 1000},
		{name: "changed in between", gogc: 100, between: 300, wantWide: 400, want: 300},
		{name: "off", gogc: -1, wantWide: -1, want: -1},
		{name: "0", gogc: 0, wantWide: 0, want: 0},
		{name: "the largest", gogc: math.MaxInt32, wantWide: math.MaxInt32, want: math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No collection of the test's own until collectUntil forces
			// one, so the cleanup cannot run before the checks below.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			r := &recorder{cur: tc.gogc}
			g := newGate(r.set)
			g.percent = g.set(-1)
			g.resume()
			if got := r.get(); got != tc.wantWide {
				t.Fatalf("after resume the setting is %d, want %d", got, tc.wantWide)
			}
			if tc.between != 0 {
				r.set(tc.between)
			}
			collectUntil(t, g.settled)
			if got := r.get(); got != tc.want {
				t.Errorf("after the first collection the setting is %d, want %d", got, tc.want)
			}
		})
	}
}
