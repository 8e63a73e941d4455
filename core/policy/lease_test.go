package policy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/store/memory"
)

// countingStore is a memstore that counts the quota writes asked of it
// and can be made to fail them.
type countingStore struct {
	*memory.MemStore
	writes atomic.Int64
	broken atomic.Bool
}

var errBroken = errors.New("the store is down")

func (s *countingStore) TakeQuota(ctx context.Context, key string, w time.Time, max int64, prune time.Time) (bool, error) {
	s.writes.Add(1)
	if s.broken.Load() {
		return false, errBroken
	}
	return s.MemStore.TakeQuota(ctx, key, w, max, prune)
}

func (s *countingStore) LeaseQuota(ctx context.Context, key string, w time.Time, n, max int64, prune time.Time) (int64, error) {
	s.writes.Add(1)
	if s.broken.Load() {
		return 0, errBroken
	}
	return s.MemStore.LeaseQuota(ctx, key, w, n, max, prune)
}

func (s *countingStore) count(t *testing.T, prefix string, w time.Time) int64 {
	t.Helper()
	got, err := s.QuotaUsage(context.Background(), prefix, w, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		return 0
	}
	return got[0].Count
}

func leaseLimits(t *testing.T, s core.QuotaCounter, c *clock, quota int64) *Limits {
	t.Helper()
	l, err := NewLimits([]LimitSpec{{ID: "q", Per: PerActor, Quota: quota, Window: 24 * time.Hour}}, s)
	if err != nil {
		t.Fatal(err)
	}
	l.now = c.now
	return l
}

// A party that calls often asks the store once a lease, the leases
// growing from one unit to the cap; the store counts at most one unused
// lease beyond the calls run, and Close gives it back (PO-3).
func TestQuotaLeasesGrow(t *testing.T) {
	c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := &countingStore{MemStore: memory.NewMemStore()}
	l := leaseLimits(t, s, c, 6400) // a cap of 100 units
	ctx := context.Background()
	in := &Input{Actor: alice, Tool: refund}
	const calls = 1000
	for i := range calls {
		if err := l.Take(ctx, in); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	// Leases of 1, 2, 4, … 64, then 100 each: 7 to reach 127 calls, then
	// one per 100.
	if w := s.writes.Load(); w != 7+(calls-127+99)/100 {
		t.Fatalf("%d store writes for %d calls, want %d", w, calls, 7+(calls-127+99)/100)
	}
	day := c.t.Truncate(24 * time.Hour)
	if n := s.count(t, "q ", day); n < calls || n > calls+99 {
		t.Fatalf("the store counts %d for %d calls run: more than one lease unused", n, calls)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.count(t, "q ", day); n != calls {
		t.Fatalf("after Close the store counts %d, want the %d calls run", n, calls)
	}
	// A new day starts with a lease of one unit; the last day's lease is
	// not carried over.
	l2 := leaseLimits(t, s, c, 6400)
	c.t = c.t.Add(24 * time.Hour)
	if err := l2.Take(ctx, in); err != nil {
		t.Fatal(err)
	}
	if n := s.count(t, "q ", c.t.Truncate(24*time.Hour)); n != 1 {
		t.Fatalf("the next day's first call counts %d", n)
	}
}

// Replicas sharing a store never run more calls than the quota together,
// however their calls interleave, and once every one of them has been
// refused they have run exactly the quota: what one leased and did not
// run is run by it before it is refused (PO-3).
func TestQuotaLeasesAcrossReplicas(t *testing.T) {
	for _, quota := range []int64{1, 7, 130, 5000} {
		t.Run(fmt.Sprint(quota), func(t *testing.T) {
			c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
			s := &countingStore{MemStore: memory.NewMemStore()}
			replicas := []*Limits{leaseLimits(t, s, c, quota), leaseLimits(t, s, c, quota), leaseLimits(t, s, c, quota)}
			ctx := context.Background()
			in := func() *Input { return &Input{Actor: alice, Tool: refund} }
			var ran atomic.Int64
			var wg sync.WaitGroup
			for i, l := range replicas {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(i), 3))
					for {
						err := l.Take(ctx, in())
						var le *LimitedError
						if errors.As(err, &le) {
							return
						}
						if err != nil {
							t.Errorf("replica %d: %v", i, err)
							return
						}
						ran.Add(1)
						if rng.IntN(4) == 0 {
							time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
						}
					}
				})
			}
			wg.Wait()
			if n := ran.Load(); n != quota {
				t.Fatalf("%d calls ran on a quota of %d", n, quota)
			}
			for i, l := range replicas {
				var le *LimitedError
				if err := l.Take(ctx, in()); !errors.As(err, &le) {
					t.Fatalf("replica %d after the quota was spent: %v", i, err)
				}
			}
		})
	}
}

// A store that cannot count refuses the call (fail closed); the calls
// already leased still run, since the store counted them (PO-3).
func TestQuotaLeaseStoreDown(t *testing.T) {
	c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := &countingStore{MemStore: memory.NewMemStore()}
	ctx := context.Background()
	in := &Input{Actor: alice, Tool: refund}
	s.broken.Store(true)
	l := leaseLimits(t, s, c, 6400)
	if err := l.Take(ctx, in); !errors.Is(err, ErrQuotaUncounted) {
		t.Fatalf("the first call with the store down: %v; want it refused as uncounted", err)
	}
	s.broken.Store(false)
	for range 3 { // leases of 1 and 2: none left
		if err := l.Take(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Take(ctx, in); err != nil { // a lease of 4: 3 left
		t.Fatal(err)
	}
	s.broken.Store(true)
	for i := range 3 {
		if err := l.Take(ctx, in); err != nil {
			t.Fatalf("leased call %d of 3 with the store down: %v", i+1, err)
		}
	}
	if err := l.Take(ctx, in); !errors.Is(err, ErrQuotaUncounted) {
		t.Fatalf("past the lease with the store down: %v; want it refused as uncounted", err)
	}
}

// Leases of keys that hold nothing are dropped once there are many; a
// lease with units left is kept with them (PO-3).
func TestQuotaLeasesSwept(t *testing.T) {
	c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := &countingStore{MemStore: memory.NewMemStore()}
	l := leaseLimits(t, s, c, 6400)
	ctx := context.Background()
	busy := &Input{Actor: core.Actor{ID: "busy"}, Tool: refund}
	for range 2 { // leases of 1 and 2: one unit left
		if err := l.Take(ctx, busy); err != nil {
			t.Fatal(err)
		}
	}
	for i := range sweepLeases {
		if err := l.Take(ctx, &Input{Actor: core.Actor{ID: fmt.Sprint("a", i)}, Tool: refund}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.limits[0].leases); n != 2 {
		t.Fatalf("%d leases after the sweep, want the busy one's and the newest", n)
	}
	w := s.writes.Load()
	if err := l.Take(ctx, busy); err != nil || s.writes.Load() != w {
		t.Fatalf("the kept lease's unit: %v, %d store writes", err, s.writes.Load()-w)
	}
}
