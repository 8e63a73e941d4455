package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/store/memory"
)

// Covers PO-3.
func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"10/s": 10, "100/min": 100.0 / 60, "200/day": 200.0 / 86400, "0.5/h": 0.5 / 3600, " 3 / sec ": 3} {
		n, per, err := ParseRate(in)
		if err != nil || n/per.Seconds() != want {
			t.Errorf("ParseRate(%q) = %v/%v, %v; want %v per second", in, n, per, err, want)
		}
	}
	for _, bad := range []string{"10", "10/fortnight", "-1/s", "0/s", "x/s", "/s", "NaN/s"} {
		if _, _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
}

// A clock the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newLimits(t *testing.T, c *clock, specs ...LimitSpec) *Limits {
	t.Helper()
	l, err := NewLimits(specs, memory.NewMemStore())
	if err != nil {
		t.Fatal(err)
	}
	l.now = c.now
	return l
}

func limited(t *testing.T, err error) *LimitedError {
	t.Helper()
	var le *LimitedError
	if !errors.As(err, &le) {
		t.Fatalf("Take = %v, want a *LimitedError", err)
	}
	return le
}

// Covers PO-3.
func TestLimitsRate(t *testing.T) {
	c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := newLimits(t, c, LimitSpec{ID: "per-person", Per: PerActor, Rate: 2, Burst: 3})
	ctx := context.Background()
	bob := core.Actor{ID: "bob"}
	for i := range 3 {
		if err := l.Take(ctx, &Input{Actor: alice, Tool: refund}); err != nil {
			t.Fatalf("call %d within the burst: %v", i+1, err)
		}
	}
	le := limited(t, l.Take(ctx, &Input{Actor: alice, Tool: refund}))
	if le.ID != "per-person" || le.RetryAfter != 500*time.Millisecond || le.RetrySeconds() != 1 ||
		le.Error() != "rate limit reached for per-person; retry after 1s" {
		t.Fatalf("refusal %+v %q", le, le.Error())
	}
	if err := l.Take(ctx, &Input{Actor: bob, Tool: refund}); err != nil {
		t.Fatalf("another actor has a bucket of their own: %v", err)
	}
	c.t = c.t.Add(500 * time.Millisecond)
	if err := l.Take(ctx, &Input{Actor: alice, Tool: refund}); err != nil {
		t.Fatalf("after the wait: %v", err)
	}
}

// Covers PO-3.
func TestLimitsQuotaAndMatch(t *testing.T) {
	c := &clock{time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)}
	l := newLimits(t, c,
		LimitSpec{ID: "daily-writes", Per: PerActor, Match: `tool.kind == "action"`, Quota: 2, Window: 24 * time.Hour},
		LimitSpec{ID: "per-tool", Per: PerActorTool, Rate: 100, Burst: 100})
	ctx := context.Background()
	for range 2 {
		if err := l.Take(ctx, &Input{Actor: alice, Tool: refund}); err != nil {
			t.Fatal(err)
		}
	}
	le := limited(t, l.Take(ctx, &Input{Actor: alice, Tool: refund}))
	if le.ID != "daily-writes" || le.RetryAfter != time.Minute {
		t.Fatalf("refusal %+v, want daily-writes until midnight UTC", le)
	}
	for range 5 {
		if err := l.Take(ctx, &Input{Actor: alice, Tool: readFile}); err != nil {
			t.Fatalf("a read the match leaves out: %v", err)
		}
	}
	c.t = c.t.Add(time.Minute)
	if err := l.Take(ctx, &Input{Actor: alice, Tool: refund}); err != nil {
		t.Fatalf("the next day: %v", err)
	}
}

// A quota that refuses gives the rate it took back.
//
// Covers PO-3.
func TestLimitsRateGivenBack(t *testing.T) {
	c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := newLimits(t, c,
		LimitSpec{ID: "rate", Per: PerEndpoint, Rate: 1, Burst: 2},
		LimitSpec{ID: "quota", Per: PerEndpoint, Quota: 1, Window: time.Hour})
	ctx := context.Background()
	in := func() *Input { return &Input{Actor: alice, Tool: refund, Endpoint: EndpointVars{Path: "/mcp"}} }
	if err := l.Take(ctx, in()); err != nil {
		t.Fatal(err)
	}
	if le := limited(t, l.Take(ctx, in())); le.ID != "quota" {
		t.Fatalf("refused by %s, want quota", le.ID)
	}
	// The bucket still holds the token the refused call gave back.
	c.t = c.t.Add(time.Hour)
	if err := l.Take(ctx, in()); err != nil {
		t.Fatalf("next window: %v", err)
	}
	if err := l.Take(ctx, in()); err == nil || limited(t, err).ID != "quota" {
		t.Fatalf("want the quota again, got %v", err)
	}
}

// Covers PO-3.
func TestNewLimitsRefuses(t *testing.T) {
	tests := []struct {
		spec LimitSpec
		want string
	}{
		{LimitSpec{ID: "a", Per: "tenant", Rate: 1}, "limits[0].per"},
		{LimitSpec{ID: "a", Per: PerActor, Rate: 1, Match: `tool.name`}, "limits[0].match: the expression is a string"},
		{LimitSpec{ID: "a", Per: PerActor, Rate: 1, Match: `nope == 1`}, "limits[0].match: line 1, column 1"},
	}
	for _, tt := range tests {
		if _, err := NewLimits([]LimitSpec{tt.spec}, memory.NewMemStore()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewLimits(%+v) = %v, want %q", tt.spec, err, tt.want)
		}
	}
	if _, err := NewLimits([]LimitSpec{{ID: "q", Per: PerActor, Quota: 1, Window: time.Hour}}, nil); err == nil {
		t.Error("a quota without a counter was accepted")
	}
}

// Buckets of idle keys are dropped once there are many; one still
// refilling keeps its state.
//
// Covers PO-3.
func TestLimitsSweepIdleBuckets(t *testing.T) {
	c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := newLimits(t, c, LimitSpec{ID: "r", Per: PerActor, Rate: 1, Burst: 1})
	ctx := context.Background()
	busy := core.Actor{ID: "busy"}
	if err := l.Take(ctx, &Input{Actor: busy, Tool: refund}); err != nil {
		t.Fatal(err)
	}
	for i := range sweepBuckets {
		if err := l.Take(ctx, &Input{Actor: core.Actor{ID: fmt.Sprint("a", i)}, Tool: refund}); err != nil {
			t.Fatal(err)
		}
	}
	c.t = c.t.Add(900 * time.Millisecond) // the idle buckets are not full yet
	if err := l.Take(ctx, &Input{Actor: core.Actor{ID: "new"}, Tool: refund}); err != nil {
		t.Fatal(err)
	}
	if n := len(l.limits[0].buckets); n != sweepBuckets+2 {
		t.Fatalf("%d buckets before any is full again", n)
	}
	c.t = c.t.Add(200 * time.Millisecond)
	if err := l.Take(ctx, &Input{Actor: core.Actor{ID: "newer"}, Tool: refund}); err != nil {
		t.Fatal(err)
	}
	if _, kept := l.limits[0].buckets["\x00new"]; !kept || len(l.limits[0].buckets) != 2 {
		t.Fatalf("%d buckets after the sweep, want the refilling one and the newest", len(l.limits[0].buckets))
	}
	if err := l.Take(ctx, &Input{Actor: core.Actor{ID: "new"}, Tool: refund}); err == nil {
		t.Fatal("the kept bucket forgot its last call")
	}
}

// A call refused after it was counted gives its quotas back, and only
// them: the rate keeps the ask. A quota refusing after another counted
// answers the first, to give back too. A unit given back stays in the
// replica's lease for its next call; Close returns the lease, so the
// store then counts exactly the calls that ran (PO-3).
func TestLimitsGiveBack(t *testing.T) {
	c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := newLimits(t, c,
		LimitSpec{ID: "asks", Per: PerActor, Rate: 1.0 / 3600, Burst: 3},
		LimitSpec{ID: "daily", Per: PerActor, Quota: 5, Window: 24 * time.Hour},
		LimitSpec{ID: "one-refund", Per: PerActor, Match: `tool.name == "billing_refund"`, Quota: 1, Window: 24 * time.Hour},
	)
	ctx := context.Background()
	in := &Input{Actor: core.Actor{ID: "bob"}, Tool: refund}
	daily := func() int64 {
		t.Helper()
		for _, u := range l.Usage(ctx, 5) {
			if u.Limit == "daily" && len(u.Top) == 1 {
				return u.Top[0].Count
			}
		}
		return 0
	}
	counted, err := l.TakeCounted(ctx, in)
	if err != nil || counted == nil {
		t.Fatalf("first: %v, %v", counted, err)
	}
	if err := counted.GiveBack(ctx); err != nil {
		t.Fatal(err)
	}
	if n := daily(); n != 0 {
		t.Fatalf("after a give-back daily counts %d", n)
	}
	if u, _ := l.quotas.QuotaUsage(ctx, "daily ", c.t.Truncate(24*time.Hour), 1); len(u) != 1 || u[0].Count != 1 {
		t.Fatalf("the store counts %+v for daily, want the unit leased and kept for the next call", u)
	}
	if _, err := l.TakeCounted(ctx, in); err != nil {
		t.Fatalf("second: %v", err)
	}
	if u, _ := l.quotas.QuotaUsage(ctx, "daily ", c.t.Truncate(24*time.Hour), 1); len(u) != 1 || u[0].Count != 1 {
		t.Fatalf("the second call, run on the unit given back, made the store count %+v, want 1", u)
	}
	// one-refund is spent: the third is refused by it after daily
	// counted (a new lease, of one unit: a quota of 5 is leased unit by
	// unit), which is answered to give back.
	counted, err = l.TakeCounted(ctx, in)
	if le := limited(t, err); le.ID != "one-refund" || counted == nil {
		t.Fatalf("third: %v, counted %v", err, counted)
	}
	if n := daily(); n != 2 {
		t.Fatalf("daily counts %d before the give-back, want 2", n)
	}
	if err := counted.GiveBack(ctx); err != nil || daily() != 1 {
		t.Fatalf("after the give-back daily counts %d (%v), want 1", daily(), err)
	}
	if err := l.Close(ctx); err != nil || daily() != 1 {
		t.Fatalf("after Close daily counts %d (%v), want 1: the one call that ran", daily(), err)
	}
	if u, _ := l.quotas.QuotaUsage(ctx, "daily ", c.t.Truncate(24*time.Hour), 1); len(u) != 1 || u[0].Count != 1 {
		t.Fatalf("after Close the store counts %+v for daily, want the one call that ran", u)
	}
	// The rate kept the first two asks, the given-back one included (the
	// third's was returned when a limit refused it): one more passes,
	// the next is refused by it.
	other := &Input{Actor: core.Actor{ID: "bob"}, Tool: readFile}
	if err := l.Take(ctx, other); err != nil {
		t.Fatalf("fourth: %v", err)
	}
	if le := limited(t, l.Take(ctx, other)); le.ID != "asks" {
		t.Fatalf("fifth: %v", le)
	}
	if n := daily(); n != 2 {
		t.Fatalf("closed limits count call by call: daily counts %d, want 2", n)
	}
	var nilCounted *Counted
	if err := nilCounted.GiveBack(ctx); err != nil {
		t.Fatal(err)
	}
}

// A match is skipped on its guard only where CEL would say false: a call
// the guard lets through and whose match errs is counted, a call the
// guard excludes is not (PO-3).
func TestLimitsMatchGuard(t *testing.T) {
	c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := newLimits(t, c, LimitSpec{ID: "one", Per: PerActor, Match: `tool.kind == "action" && args.missing > 1`, Quota: 1, Window: time.Hour})
	ctx := context.Background()
	for range 3 {
		if err := l.Take(ctx, &Input{Actor: alice, Tool: readFile, Args: []byte(`{}`)}); err != nil {
			t.Fatalf("a read the guard excludes: %v", err)
		}
	}
	if err := l.Take(ctx, &Input{Actor: alice, Tool: refund, Args: []byte(`{}`)}); err != nil {
		t.Fatalf("the first action: %v", err)
	}
	if le := limited(t, l.Take(ctx, &Input{Actor: alice, Tool: refund, Args: []byte(`{}`)})); le.ID != "one" {
		t.Fatalf("the second action, its match erring: %v", le)
	}
}
