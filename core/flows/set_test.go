package flows

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/store/memory"
)

// countingFlows is a core.FlowLabels over the in-memory store that counts
// the writes and reads reaching it, and fails them while failing is set.
type countingFlows struct {
	*memory.MemStore
	mu            sync.Mutex
	writes, reads int
	failing       bool
	// afterRead, when set, runs once after the next read took its labels,
	// before it returns: what happens while a read is on its way back.
	afterRead func()
}

var errStoreDown = errors.New("store down")

func (c *countingFlows) AddFlowLabels(ctx context.Context, key string, labels []string, now, until time.Time) error {
	c.mu.Lock()
	c.writes++
	failing := c.failing
	c.mu.Unlock()
	if failing {
		return errStoreDown
	}
	return c.MemStore.AddFlowLabels(ctx, key, labels, now, until)
}

func (c *countingFlows) FlowLabels(ctx context.Context, key string, now time.Time) ([]string, time.Time, error) {
	c.mu.Lock()
	c.reads++
	failing, after := c.failing, c.afterRead
	c.afterRead = nil
	c.mu.Unlock()
	if failing {
		return nil, time.Time{}, errStoreDown
	}
	labels, until, err := c.MemStore.FlowLabels(ctx, key, now)
	if after != nil {
		after()
	}
	return labels, until, err
}

func (c *countingFlows) counts() (writes, reads int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes, c.reads
}

func (c *countingFlows) fail(on bool) {
	c.mu.Lock()
	c.failing = on
	c.mu.Unlock()
}

// IN-3: two replicas' flow stores over one store. A session's labels
// gathered on A are read by B on the session's first call there (an
// adoption, or A restarted); they are written only when they grow, never
// per call; a write that failed is made by the next call; labels that
// grew on A reach a B that already held the flow once B is told; a read
// that fails is an error, never an empty set.
func TestFlowStoreBackedIN3(t *testing.T) {
	ctx := context.Background()
	st := &countingFlows{MemStore: memory.NewMemStore()}
	var grew []string
	back := Backing{Store: st, Keep: 25 * time.Hour, Sessions: true, Grew: func(d string) { grew = append(grew, d) }}
	var a, b Set
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	key, sessioned := Key("sess-1", core.Actor{ID: "dev"}, "sdk")
	read := func(s *Set, at time.Time) []string {
		t.Helper()
		got, err := s.Labels(ctx, back, key, sessioned, time.Hour, at)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	add := func(s *Set, at time.Time, ls ...string) error {
		return s.Add(ctx, back, key, sessioned, time.Hour, at, ls)
	}

	if got := read(&a, t0); got != nil {
		t.Fatalf("a new session's labels: %v", got)
	}
	for i := range 10 {
		if err := add(&a, t0.Add(time.Duration(i)*time.Minute), "untrusted"); err != nil {
			t.Fatal(err)
		}
	}
	if err := add(&a, t0.Add(11*time.Minute), "private", "untrusted"); err != nil {
		t.Fatal(err)
	}
	if w, _ := st.counts(); w != 2 {
		t.Errorf("%d writes for two growths over eleven calls, want 2", w)
	}
	if len(grew) != 2 || grew[0] != digest(key) {
		t.Errorf("growths told: %q", grew)
	}
	// B never held the session: it reads the store once, then holds it.
	if got := read(&b, t0.Add(12*time.Minute)); !slices.Equal(got, []string{"private", "untrusted"}) {
		t.Errorf("B's first read of the session: %v", got)
	}
	_, reads := st.counts()
	read(&b, t0.Add(13*time.Minute))
	if _, r := st.counts(); r != reads {
		t.Errorf("B read the store again for a flow it holds: %d reads, want %d", r, reads)
	}
	// Kept a day and more after the last write, as adoption allows.
	if got, _, _ := st.FlowLabels(ctx, digest(key), t0.Add(24*time.Hour)); !slices.Equal(got, []string{"private", "untrusted"}) {
		t.Errorf("stored a day later: %v", got)
	}

	// Grown on A: B sees it once told.
	if err := add(&a, t0.Add(14*time.Minute), "crm"); err != nil {
		t.Fatal(err)
	}
	if got := read(&b, t0.Add(15*time.Minute)); slices.Contains(got, "crm") {
		t.Fatalf("B saw A's growth untold (a read per call): %v", got)
	}
	b.ChangedElsewhere(grew[len(grew)-1])
	if got := read(&b, t0.Add(15*time.Minute)); !slices.Equal(got, []string{"crm", "private", "untrusted"}) {
		t.Errorf("B after being told: %v", got)
	}

	// A failed write is an error, and the next call makes it.
	st.fail(true)
	if err := add(&a, t0.Add(16*time.Minute), "sends-out"); !errors.Is(err, errStoreDown) {
		t.Errorf("a failed write = %v", err)
	}
	st.fail(false)
	if err := add(&a, t0.Add(17*time.Minute)); err != nil {
		t.Fatal(err)
	}
	var c Set
	if got := read(&c, t0.Add(18*time.Minute)); !slices.Contains(got, "sends-out") {
		t.Errorf("the label whose write failed, after the next call: %v", got)
	}

	// A read that fails is an error.
	st.fail(true)
	var d Set
	if got, err := d.Labels(ctx, back, key, sessioned, time.Hour, t0); !errors.Is(err, errStoreDown) || got != nil {
		t.Errorf("a failed read = %v, %v", got, err)
	}
	st.fail(false)
}

// IN-3: a sessionless client's flow on two replicas. Its labels are in the
// store at least a flow window after its last call on either, though the
// store is written at most once a quarter window while it calls without
// gathering anything; a flow idle past the window starts clean.
func TestSessionlessFlowBackedIN3(t *testing.T) {
	ctx := context.Background()
	st := &countingFlows{MemStore: memory.NewMemStore()}
	back := Backing{Store: st, Keep: 25 * time.Hour, Sessions: true}
	var a, b Set
	w := time.Hour
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	key, sessioned := Key("", core.Actor{ID: "dev"}, "modern-peer")
	if err := a.Add(ctx, back, key, sessioned, w, t0, []string{"untrusted", "private"}); err != nil {
		t.Fatal(err)
	}
	// Calls every minute for two hours on A, gathering nothing new.
	last := t0
	for i := 1; i <= 120; i++ {
		last = t0.Add(time.Duration(i) * time.Minute)
		if err := a.Add(ctx, back, key, sessioned, w, last, nil); err != nil {
			t.Fatal(err)
		}
	}
	if wr, _ := st.counts(); wr < 2 || wr > 1+120/15 {
		t.Errorf("%d writes for 121 calls over two hours, want one a quarter window at most", wr)
	}
	got, err := b.Labels(ctx, back, key, sessioned, w, last.Add(w))
	if err != nil || !slices.Equal(got, []string{"private", "untrusted"}) {
		t.Errorf("B a window after the last call on A: %v, %v", got, err)
	}
	var c Set
	if got, _ := c.Labels(ctx, back, key, sessioned, w, last.Add(w+w/4+time.Second)); got != nil {
		t.Errorf("a replica reading past the store's keep: %v", got)
	}
}

// IN-3, OP-11: over a store replicas share, a sessionless client's flow is
// read on every call, since its calls are spread: what it read on A an
// instant ago counts on B, which held the flow already and was told
// nothing. Its growth is not broadcast.
func TestSessionlessFlowSharedReadsEveryCallIN3(t *testing.T) {
	ctx := context.Background()
	st := &countingFlows{MemStore: memory.NewMemStore()}
	told := 0
	back := Backing{Store: st, Keep: 25 * time.Hour, Sessions: true, Grew: func(string) { told++ }}
	var a, b Set
	w := time.Hour
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	key, sessioned := Key("", core.Actor{ID: "dev"}, "modern-peer")
	if err := a.Add(ctx, back, key, sessioned, w, t0, []string{"untrusted"}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Labels(ctx, back, key, sessioned, w, t0); err != nil || !slices.Equal(got, []string{"untrusted"}) {
		t.Fatalf("B's first read: %v, %v", got, err)
	}
	if err := b.Add(ctx, back, key, sessioned, w, t0, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Add(ctx, back, key, sessioned, w, t0.Add(time.Second), []string{"private"}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Labels(ctx, back, key, sessioned, w, t0.Add(2*time.Second)); err != nil || !slices.Equal(got, []string{"private", "untrusted"}) {
		t.Errorf("B's next call after A's: %v, %v", got, err)
	}
	if told != 0 {
		t.Errorf("a sessionless flow's growth was told %d times", told)
	}
}

// IN-3, OP-11: news that a session's labels grew elsewhere, arriving while
// this replica's read of them is on its way back with what the store held
// before, leaves the flow to be read again: the next call sees the growth.
func TestFlowNewsDuringReadIN3(t *testing.T) {
	ctx := context.Background()
	st := &countingFlows{MemStore: memory.NewMemStore()}
	back := Backing{Store: st, Keep: 25 * time.Hour, Sessions: true, Grew: func(string) {}}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	key, _ := Key("sess-1", core.Actor{ID: "dev"}, "sdk")
	var a, b Set
	if err := a.Add(ctx, back, key, true, time.Hour, t0, []string{"untrusted"}); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	st.afterRead = func() {
		if err := a.Add(ctx, back, key, true, time.Hour, t0, []string{"private"}); err != nil {
			t.Error(err)
		}
		b.ChangedElsewhere(digest(key))
	}
	st.mu.Unlock()
	if got, err := b.Labels(ctx, back, key, true, time.Hour, t0); err != nil || !slices.Equal(got, []string{"untrusted"}) {
		t.Fatalf("the read the news overtook: %v, %v", got, err)
	}
	if got, err := b.Labels(ctx, back, key, true, time.Hour, t0); err != nil || !slices.Equal(got, []string{"private", "untrusted"}) {
		t.Errorf("the next call: %v, %v", got, err)
	}
}
