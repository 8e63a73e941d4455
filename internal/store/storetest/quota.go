package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/policy"
)

// QuotaConformance checks core.QuotaCounter on two handles of one store
// (the same handle twice for a store that cannot be shared): a quota is
// counted per key and window, never past its max, and of racing takes
// across the handles exactly max succeed (PO-3).
func QuotaConformance(t *testing.T, a, b core.QuotaCounter) {
	ctx := context.Background()
	w1 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	w2 := w1.Add(24 * time.Hour)
	prune := w1.Add(-time.Hour)
	take := func(q core.QuotaCounter, key string, w time.Time, max int64) bool {
		t.Helper()
		ok, err := q.TakeQuota(ctx, key, w, max, prune)
		if err != nil {
			t.Fatalf("TakeQuota(%s): %v", key, err)
		}
		return ok
	}
	for i := range 3 {
		if !take(a, "k", w1, 3) {
			t.Fatalf("take %d of 3 refused", i+1)
		}
	}
	if take(b, "k", w1, 3) {
		t.Fatal("a fourth take of 3 counted")
	}
	if !take(b, "other", w1, 3) || !take(a, "k", w2, 3) {
		t.Fatal("another key or window shares the count")
	}
	if !take(a, "k", w1, 4) {
		t.Fatal("a raised max refused the next take")
	}
	var wins atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		q := a
		if i%2 == 1 {
			q = b
		}
		wg.Go(func() {
			ok, err := q.TakeQuota(ctx, "race", w1, 7, prune)
			if err != nil {
				t.Errorf("TakeQuota: %v", err)
			}
			if ok {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if n := wins.Load(); n != 7 {
		t.Fatalf("%d of 40 racing takes counted, want 7", n)
	}
	quotaUsage(t, a, b)
	quotaGiveBack(t, a, b)
	quotaLeases(t, a, b)
}

// quotaLeases checks LeaseQuota and ReturnQuota: a lease gets n units, or
// what is left below max, or none; units leased on both handles by racing
// leases add up to max exactly; single takes and leases share one count;
// units returned are leased again, and a count never goes below zero
// (PO-3).
func quotaLeases(t *testing.T, a, b core.QuotaCounter) {
	ctx := context.Background()
	w := time.Date(2026, 7, 8, 0, 0, 0, 0, time.UTC)
	prune := w.Add(-time.Hour)
	lease := func(q core.QuotaCounter, key string, n, max int64) int64 {
		t.Helper()
		got, err := q.LeaseQuota(ctx, key, w, n, max, prune)
		if err != nil {
			t.Fatalf("LeaseQuota(%s, %d, %d): %v", key, n, max, err)
		}
		return got
	}
	count := func(key string) int64 {
		t.Helper()
		got, err := b.QuotaUsage(ctx, key, w, 1)
		if err != nil {
			t.Fatalf("QuotaUsage: %v", err)
		}
		if len(got) == 0 {
			return 0
		}
		return got[0].Count
	}
	for i, step := range []struct {
		q       core.QuotaCounter
		n, want int64
	}{{a, 5, 5}, {b, 5, 5}, {a, 5, 2}, {b, 5, 0}, {a, 1, 0}} {
		if got := lease(step.q, "lease", step.n, 12); got != step.want {
			t.Fatalf("lease %d of %d units (max 12): granted %d, want %d", i+1, step.n, got, step.want)
		}
	}
	if ok, err := a.TakeQuota(ctx, "lease", w, 12, prune); err != nil || ok {
		t.Fatalf("a take past a quota spent by leases: %v, %v", ok, err)
	}
	if err := a.ReturnQuota(ctx, "lease", w, 3); err != nil {
		t.Fatalf("ReturnQuota: %v", err)
	}
	if got := lease(b, "lease", 5, 12); got != 3 {
		t.Fatalf("a lease after 3 returned: granted %d, want 3", got)
	}
	if ok, err := a.TakeQuota(ctx, "mixed", w, 10, prune); err != nil || !ok {
		t.Fatalf("TakeQuota: %v, %v", ok, err)
	}
	if got := lease(b, "mixed", 20, 10); got != 9 {
		t.Fatalf("a lease after one take of 10: granted %d, want 9", got)
	}
	if got := lease(a, "big", 50, 10); got != 10 || count("big") != 10 {
		t.Fatalf("a first lease larger than max: granted %d, count %d; want 10, 10", got, count("big"))
	}
	if err := a.ReturnQuota(ctx, "big", w, 100); err != nil || count("big") != 0 {
		t.Fatalf("returning more than counted: %v, count %d; want 0", err, count("big"))
	}
	for _, err := range []error{a.ReturnQuota(ctx, "never-leased", w, 2), a.ReturnQuota(ctx, "big", w.Add(time.Hour), 1)} {
		if err != nil {
			t.Fatalf("ReturnQuota of nothing: %v", err)
		}
	}
	if got := lease(a, "zero", 0, 10); got != 0 || count("zero") != 0 {
		t.Fatalf("a lease of 0 units: granted %d, count %d", got, count("zero"))
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := range 24 {
		q := a
		if i%2 == 1 {
			q = b
		}
		wg.Go(func() {
			got, err := q.LeaseQuota(ctx, "race-lease", w, 3, 31, prune)
			if err != nil {
				t.Errorf("LeaseQuota: %v", err)
			}
			granted.Add(got)
		})
	}
	wg.Wait()
	if n := granted.Load(); n != 31 || count("race-lease") != 31 {
		t.Fatalf("24 racing leases of 3 (max 31) granted %d, counted %d; want 31, 31", n, count("race-lease"))
	}
}

// quotaGiveBack checks GiveBackQuota: a count given back on one handle
// frees a take on the other; a count at zero, or of another window, is
// not lowered.
func quotaGiveBack(t *testing.T, a, b core.QuotaCounter) {
	ctx := context.Background()
	w := time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC)
	prune := w.Add(-time.Hour)
	take := func(q core.QuotaCounter) bool {
		t.Helper()
		ok, err := q.TakeQuota(ctx, "back", w, 2, prune)
		if err != nil {
			t.Fatalf("TakeQuota: %v", err)
		}
		return ok
	}
	if !take(a) || !take(b) || take(a) {
		t.Fatal("2 of a quota of 2 were not taken, or a third was")
	}
	if err := b.GiveBackQuota(ctx, "back", w); err != nil {
		t.Fatalf("GiveBackQuota: %v", err)
	}
	if !take(a) || take(b) {
		t.Fatal("a count given back did not free exactly one take")
	}
	for _, err := range []error{
		a.GiveBackQuota(ctx, "back", w.Add(24*time.Hour)), a.GiveBackQuota(ctx, "never-taken", w),
	} {
		if err != nil {
			t.Fatalf("GiveBackQuota of nothing: %v", err)
		}
	}
	if ok, err := a.TakeQuota(ctx, "back", w.Add(24*time.Hour), 1, prune); err != nil || !ok {
		t.Fatalf("the next window after a give-back there: %v, %v", ok, err)
	}
	if ok, err := a.TakeQuota(ctx, "back", w.Add(24*time.Hour), 1, prune); err != nil || ok {
		t.Fatalf("a give-back of an empty window let a second take of 1 through: %v, %v", ok, err)
	}
	if got, err := a.QuotaUsage(ctx, "never-taken", w, 5); err != nil || len(got) > 0 && got[0].Count != 0 {
		t.Fatalf("a give-back of a key never taken: %+v, %v", got, err)
	}
}

// quotaUsage checks QuotaUsage: one window's keys under a prefix, highest
// count first, at most n, read on either handle; keys shaped as the
// limits write them (limit id, NUL, tenant, NUL, actor).
func quotaUsage(t *testing.T, a, b core.QuotaCounter) {
	ctx := context.Background()
	w := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	prune := w.Add(-time.Hour)
	counts := map[string]int{
		`daily ["acme","alice"]`: 5, `daily ["acme","bob"]`: 2, `daily ["","carl"]`: 2, `daily ["acme","dé"]`: 1,
		`daily2 ["acme","alice"]`: 9, `dail ["acme","x"]`: 7, `other ["acme","alice"]`: 4,
	}
	for key, n := range counts {
		for range n {
			if ok, err := a.TakeQuota(ctx, key, w, 100, prune); err != nil || !ok {
				t.Fatalf("TakeQuota(%q) = %v, %v", key, ok, err)
			}
		}
	}
	if ok, err := a.TakeQuota(ctx, `daily ["acme","alice"]`, w.Add(24*time.Hour), 100, prune); err != nil || !ok {
		t.Fatalf("TakeQuota in the next window = %v, %v", ok, err)
	}
	want := []core.QuotaCount{{Key: `daily ["acme","alice"]`, Count: 5}, {Key: `daily ["","carl"]`, Count: 2},
		{Key: `daily ["acme","bob"]`, Count: 2}, {Key: `daily ["acme","dé"]`, Count: 1}}
	for _, q := range []core.QuotaCounter{a, b} {
		got, err := q.QuotaUsage(ctx, "daily ", w, 10)
		if err != nil {
			t.Fatalf("QuotaUsage: %v", err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("QuotaUsage(daily) = %+v\nwant %+v", got, want)
		}
		top, err := q.QuotaUsage(ctx, "daily ", w, 2)
		if err != nil || !slices.Equal(top, want[:2]) {
			t.Fatalf("QuotaUsage(daily, 2) = %+v, %v; want %+v", top, err, want[:2])
		}
		none, err := q.QuotaUsage(ctx, "daily ", w.Add(-24*time.Hour), 10)
		if err != nil || len(none) != 0 {
			t.Fatalf("QuotaUsage of an empty window = %+v, %v", none, err)
		}
	}
}

// QuotaLeaseReplicas runs the limits of one replica on each of counters
// (handles on one store, as replicas have) against one daily quota per
// actor, their calls interleaved by goroutines: together they never run
// more calls than the quota, and once each has been refused they have run
// exactly the quota. A first round stops one replica (Close) after some
// calls, with a lease in hand: what it returns is run by the others. After
// every replica has closed, the store counts the calls that ran (PO-3).
func QuotaLeaseReplicas(t *testing.T, counters ...core.QuotaCounter) {
	ctx := context.Background()
	const quota = 700 // leases of up to 10 units
	spec := []policy.LimitSpec{{ID: "replica-quota", Per: policy.PerActor, Quota: quota, Window: 24 * time.Hour}}
	var replicas []*policy.Limits
	for _, c := range counters {
		l, err := policy.NewLimits(spec, c)
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, l)
	}
	tool := &core.Tool{Name: "notes_create_note", Kind: core.KindAction}
	in := func() *policy.Input { return &policy.Input{Actor: core.Actor{ID: "alice", Tenant: "acme"}, Tool: tool} }
	// The first replica runs 40 calls (leases of 1, 2, 4, 8, 10, 10, 10:
	// 5 left) and stops.
	for i := range 40 {
		if err := replicas[0].Take(ctx, in()); err != nil {
			t.Fatalf("call %d on the first replica: %v", i+1, err)
		}
	}
	if err := replicas[0].Close(ctx); err != nil {
		t.Fatalf("closing the first replica: %v", err)
	}
	ran := atomic.Int64{}
	ran.Store(40)
	var wg sync.WaitGroup
	for i, l := range replicas[1:] {
		for range 3 {
			wg.Go(func() {
				for {
					err := l.Take(ctx, in())
					var le *policy.LimitedError
					if errors.As(err, &le) {
						return
					}
					if err != nil {
						t.Errorf("replica %d: %v", i+1, err)
						return
					}
					ran.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if n := ran.Load(); n != quota {
		t.Fatalf("%d calls ran on a quota of %d across %d replicas", n, quota, len(counters))
	}
	for _, l := range replicas[1:] {
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	usage := policy.Usage(ctx, spec, counters[0], time.Now(), 1)
	if len(usage) != 1 || len(usage[0].Top) != 1 || usage[0].Top[0].Count != quota {
		t.Fatalf("the store counts %+v after every replica closed, want %d", usage, quota)
	}
}
