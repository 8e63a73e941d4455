package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

// FlowLabelsConformance checks core.FlowLabels on two handles of one store
// (the same handle twice for a store that cannot be shared): labels added
// through either are read through the other as one sorted union, a flow
// is kept until the latest until it was given and lapses after it, a
// lapsed flow starts again from what is added next, and racing adds
// across the handles lose no label (IN-3).
func FlowLabelsConformance(t *testing.T, a, b core.FlowLabels) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	read := func(s core.FlowLabels, key string, now time.Time) ([]string, time.Time) {
		t.Helper()
		labels, until, err := s.FlowLabels(ctx, key, now)
		if err != nil {
			t.Fatalf("FlowLabels(%s): %v", key, err)
		}
		return labels, until
	}
	add := func(s core.FlowLabels, key string, labels []string, now, until time.Time) {
		t.Helper()
		if err := s.AddFlowLabels(ctx, key, labels, now, until); err != nil {
			t.Fatalf("AddFlowLabels(%s, %v): %v", key, labels, err)
		}
	}
	want := func(s core.FlowLabels, key string, now time.Time, labels []string, until time.Time) {
		t.Helper()
		got, gotUntil := read(s, key, now)
		if !slices.Equal(got, labels) || !gotUntil.Equal(until) {
			t.Errorf("flow %s at %v = %q until %v; want %q until %v", key, now.Sub(t0), got, gotUntil, labels, until)
		}
	}

	if got, until := read(a, "never", t0); got != nil || !until.IsZero() {
		t.Errorf("a flow never added = %q until %v; want none", got, until)
	}
	add(a, "f1", []string{"untrusted"}, t0, t0.Add(time.Hour))
	want(b, "f1", t0, []string{"untrusted"}, t0.Add(time.Hour))
	add(b, "f1", []string{"private", "untrusted"}, t0.Add(time.Minute), t0.Add(2*time.Hour))
	want(a, "f1", t0.Add(time.Minute), []string{"private", "untrusted"}, t0.Add(2*time.Hour))
	// An earlier until does not shorten the flow; no labels moves it on only.
	add(a, "f1", []string{"crm"}, t0.Add(2*time.Minute), t0.Add(time.Hour))
	want(b, "f1", t0.Add(2*time.Minute), []string{"crm", "private", "untrusted"}, t0.Add(2*time.Hour))
	add(b, "f1", nil, t0.Add(3*time.Minute), t0.Add(3*time.Hour))
	want(a, "f1", t0.Add(3*time.Minute), []string{"crm", "private", "untrusted"}, t0.Add(3*time.Hour))
	// Kept up to its until, gone after.
	want(a, "f1", t0.Add(3*time.Hour), []string{"crm", "private", "untrusted"}, t0.Add(3*time.Hour))
	want(b, "f1", t0.Add(3*time.Hour+time.Nanosecond), nil, time.Time{})
	// A lapsed flow starts again from what is added next.
	later := t0.Add(5 * time.Hour)
	add(a, "f1", []string{"sends-out"}, later, later.Add(time.Hour))
	want(b, "f1", later, []string{"sends-out"}, later.Add(time.Hour))
	// Another key is another flow; labels are kept as written.
	odd := []string{`a,b`, `quote"d`, "ünïcode", "[x]"}
	add(b, "f2", odd, t0, later)
	sortedOdd := slices.Sorted(slices.Values(odd))
	want(a, "f2", t0, sortedOdd, later)
	want(a, "f1", later, []string{"sends-out"}, later.Add(time.Hour))

	// Racing adds of distinct labels over both handles: none is lost.
	var wg sync.WaitGroup
	var all []string
	for i := range 20 {
		l := fmt.Sprintf("label-%02d", i)
		all = append(all, l)
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			if err := s.AddFlowLabels(ctx, "race", []string{l, "shared"}, t0, t0.Add(time.Hour)); err != nil {
				t.Errorf("AddFlowLabels: %v", err)
			}
		})
	}
	wg.Wait()
	want(b, "race", t0, append(all, "shared"), t0.Add(time.Hour))
}
