package session

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// conn is a session object as a fake host makes them.
type conn struct {
	id       string
	protocol string
}

func (c *conn) ProtocolVersion() string { return c.protocol }

// fakeHost records what a table asks of its endpoint.
type fakeHost struct {
	mu sync.Mutex
	// registered are the session objects the protocol server holds, by id.
	registered map[string]*conn
	opened     []string
	terminated map[string]int
	gone       map[string]int
	// refuse makes Register fail.
	refuse bool
}

func newFakeHost() *fakeHost {
	return &fakeHost{registered: map[string]*conn{}, terminated: map[string]int{}, gone: map[string]int{}}
}

func (h *fakeHost) Register(_ context.Context, id string, c *conn, opened bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refuse {
		return errors.New("refused")
	}
	if h.registered[id] != nil {
		return errors.New("registered twice")
	}
	h.registered[id] = c
	if opened {
		h.opened = append(h.opened, id)
	}
	return nil
}

func (h *fakeHost) Remake(id string, s Sealed) *conn { return &conn{id: id, protocol: s.Protocol} }

func (h *fakeHost) Parkable(*conn, Sealed) (ok, queued bool) { return true, false }

func (h *fakeHost) Release(id string, c *conn, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.registered[id] == c {
		delete(h.registered, id)
	}
}

func (h *fakeHost) Terminated(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.terminated[id]++
}

func (h *fakeHost) Gone(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gone[id]++
}

// fakeClock is a time that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var tableKey = []byte("0123456789abcdef0123456789abcdef")

func newTestTable(t *testing.T) (*Table[*conn], *fakeHost, *fakeClock, *Limits) {
	t.Helper()
	seal, err := NewSeal(tableKey)
	if err != nil {
		t.Fatal(err)
	}
	h, clock := newFakeHost(), &fakeClock{now: time.Unix(1_800_000_000, 0)}
	tb := New[*conn](h, Options{Seal: seal, Path: "/mcp", IdleTimeout: time.Hour, ParkAfter: time.Minute, Now: clock.Now})
	return tb, h, clock, NewLimits(0, 0)
}

// open opens a session of actor a through the table, as an initialize
// does: a place under the caps, a minted id, Open.
func open(t *testing.T, tb *Table[*conn], limits *Limits) string {
	t.Helper()
	slot, err := limits.Acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	defer slot.RequestDone()
	id := tb.Mint("a", "", []byte(`{"params":{"protocolVersion":"2025-06-18"}}`))
	if err := tb.Open(context.Background(), id, "a", &conn{id: id, protocol: "2025-06-18"}, slot); err != nil {
		t.Fatal(err)
	}
	return id
}

// SV-2, OP-5: the table's events on a fake host and clock: a parked
// session wakes with what it missed, an end is claimed once and its
// place given back once, an end for good during one that is not is
// recorded and told, a closed table opens and adopts nothing.
func TestTableEventsSV2(t *testing.T) {
	tb, h, clock, limits := newTestTable(t)
	id := open(t, tb, limits)
	if !tb.Lookup(id).Phase.Serves() || tb.Lookup(id).Protocol != "2025-06-18" || limits.Open() != 1 {
		t.Fatalf("opened: live %v, protocol %q, places %d", tb.Lookup(id).Phase.Serves(), tb.Lookup(id).Protocol, limits.Open())
	}
	if tb.ParkIdle(clock.Now()) != 0 {
		t.Fatal("parked before it was idle for the park delay")
	}
	clock.add(2 * time.Minute)
	if tb.ParkIdle(clock.Now()) != 1 || tb.Lookup(id).Phase.State != Parked || tb.Lookup(id).Conn != nil || h.registered[id] != nil {
		t.Fatal("an idle session was not parked, or its object is still held")
	}
	tb.Tell(func(c *Changes) { c.Prompts++ })
	missed, ok, err := tb.Wake(context.Background(), id)
	if !ok || err != nil || missed != (Changes{Prompts: 1}) || tb.Lookup(id).Conn == nil || h.registered[id] == nil {
		t.Fatalf("woken: %+v %v %v; want the prompts' change missed, and the session held again", missed, ok, err)
	}

	// The idle sweep takes it; its client's DELETE makes that end one for
	// good, recorded and told once.
	clock.add(2 * time.Hour)
	if taken := tb.TakeIdle(clock.Now(), time.Hour); !slices.Equal(taken, []string{id}) || tb.Lookup(id).Phase.Serves() {
		t.Fatalf("taken idle: %v, live %v", taken, tb.Lookup(id).Phase.Serves())
	}
	if end, upgraded := tb.End(id, ByClient); !end || upgraded {
		t.Fatalf("the DELETE of a session taken idle: end %v, upgraded %v", end, upgraded)
	}
	if end, upgraded := tb.End(id, Idle); end || upgraded {
		t.Fatal("the sweep's end, after the DELETE's, claimed it again")
	}
	if h.terminated[id] != 1 || h.gone[id] != 1 || limits.Open() != 0 || tb.Lookup(id).Phase.State != Absent || !tb.Ended(id) {
		t.Fatalf("after the end: told %d, gone %d, places %d, known %v, ended %v", h.terminated[id], h.gone[id], limits.Open(), tb.Lookup(id).Phase.State != Absent, tb.Ended(id))
	}
	if adopted, err := tb.Adopt(context.Background(), id, "a", "", limits); adopted || !errors.Is(err, ErrNotAdopted) {
		t.Fatalf("an ended id adopted: %v %v", adopted, err)
	}

	// Another replica's id is adopted once; the table refuses another
	// actor, and opens nothing once closed.
	seal, _ := NewSeal(tableKey)
	other := seal.Seal(Sealed{Path: "/mcp", Actor: "a", Protocol: "2025-03-26", Issued: clock.Now().Unix()})
	if adopted, err := tb.Adopt(context.Background(), other, "b", "", limits); adopted || !errors.Is(err, ErrNotAdopted) {
		t.Fatalf("adopted for another actor: %v %v", adopted, err)
	}
	if adopted, err := tb.Adopt(context.Background(), other, "a", "", limits); !adopted || err != nil || tb.Lookup(other).Protocol != "2025-03-26" {
		t.Fatalf("adoption: %v %v, protocol %q", adopted, err, tb.Lookup(other).Protocol)
	}
	if adopted, err := tb.Adopt(context.Background(), other, "a", "", limits); adopted || err != nil {
		t.Fatalf("adopted twice: %v %v", adopted, err)
	}
	tb.Close()
	if tb.Lookup(other).Phase.State != Absent || limits.Open() != 0 || h.terminated[other] != 0 || h.gone[other] != 1 {
		t.Fatalf("after Close: known %v, places %d, told %d (a shutdown is not an end for good), gone %d",
			tb.Lookup(other).Phase.State != Absent, limits.Open(), h.terminated[other], h.gone[other])
	}
	if err := tb.Open(context.Background(), "x", "a", &conn{}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("opened after Close: %v", err)
	}
	if _, err := tb.Adopt(context.Background(), other, "a", "", limits); !errors.Is(err, ErrNotAdopted) && !errors.Is(err, ErrClosed) {
		t.Fatalf("adopted after Close: %v", err)
	}
}

// SV-2: a session the host cannot register is not opened and holds no
// place; a woken session the host cannot register ends, not for good.
func TestTableHostRefusesSV2(t *testing.T) {
	tb, h, clock, limits := newTestTable(t)
	id := open(t, tb, limits)
	clock.add(2 * time.Minute)
	if tb.ParkIdle(clock.Now()) != 1 {
		t.Fatal("not parked")
	}
	h.refuse = true
	if _, ok, err := tb.Wake(context.Background(), id); ok || err == nil {
		t.Fatalf("woken though the host refused: %v %v", ok, err)
	}
	if tb.Lookup(id).Phase.State != Absent || limits.Open() != 0 || h.terminated[id] != 0 {
		t.Fatalf("after a failed wake: known %v, places %d, told %d", tb.Lookup(id).Phase.State != Absent, limits.Open(), h.terminated[id])
	}
	slot, _ := limits.Acquire("a")
	if err := tb.Open(context.Background(), "y", "a", &conn{}, slot); err == nil || tb.Lookup("y").Phase.State != Absent {
		t.Fatalf("opened though the host refused: %v", err)
	}
	slot.RequestDone()
	if limits.Open() != 0 {
		t.Fatalf("%d places held after a refused open", limits.Open())
	}
}

// SV-2, OP-5: the table's events in generated orders, concurrently, on a
// fake host and clock: after every round, each record holds one place
// under the caps and no more (none after Close), the host holds a session
// object exactly for the sessions that are live and not parked, and a
// session whose end for good was answered never serves again, is refused
// adoption, and was told to the other replicas once at most.
func TestTableGeneratedOrdersSV2(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { tableOrder(t, seed) })
	}
}

func tableOrder(t *testing.T, seed uint64) {
	tb, h, clock, limits := newTestTable(t)
	rng := rand.New(rand.NewPCG(seed, 0x7ab1e))
	seal, _ := NewSeal(tableKey)
	var ids []string
	gone := map[string]bool{}
	for round := 0; round < 12; round++ {
		// Each round runs a few events at once, as requests race.
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 1 + rng.IntN(4) {
			k := rng.IntN(10)
			var id string
			mu.Lock()
			if len(ids) > 0 {
				id = ids[rng.IntN(len(ids))]
			}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch {
				case k < 2:
					slot, err := limits.Acquire("a")
					if err != nil {
						return
					}
					defer slot.RequestDone()
					nid := tb.Mint("a", "", nil)
					if tb.Open(context.Background(), nid, "a", &conn{id: nid}, slot) == nil {
						mu.Lock()
						ids = append(ids, nid)
						mu.Unlock()
					}
				case k < 3:
					nid := seal.Seal(Sealed{Path: "/mcp", Actor: "a", Issued: clock.Now().Unix()})
					if adopted, _ := tb.Adopt(context.Background(), nid, "a", "", limits); adopted {
						mu.Lock()
						ids = append(ids, nid)
						mu.Unlock()
					}
				case k < 4 && id != "":
					if _, ok, _ := tb.Wake(context.Background(), id); ok {
						leave := tb.Enter(id)
						leave()
					}
				case k < 5:
					tb.ParkIdle(clock.Now().Add(time.Hour))
				case k < 6:
					for _, idle := range tb.TakeIdle(clock.Now().Add(3*time.Hour), time.Hour) {
						tb.End(idle, Idle)
					}
				case k < 8 && id != "":
					if end, upgraded := tb.End(id, ByClient); end || upgraded {
						mu.Lock()
						gone[id] = true
						mu.Unlock()
					}
				case k < 9 && id != "":
					tb.EndedElsewhere(id)
					mu.Lock()
					gone[id] = true
					mu.Unlock()
				case round == 11:
					tb.Close()
				}
			}()
		}
		wg.Wait()
		clock.add(time.Minute)
		records, _ := tb.Count()
		if open := limits.Open(); open != records-tb.streamsOnly() {
			t.Fatalf("seed %d round %d: %d places held for %d session records", seed, round, open, records)
		}
		for _, id := range ids {
			c := tb.Lookup(id).Conn
			h.mu.Lock()
			held := h.registered[id]
			h.mu.Unlock()
			if c != held {
				t.Fatalf("seed %d round %d: session %s: the table holds %p, the host %p", seed, round, id, c, held)
			}
			if gone[id] {
				if tb.Lookup(id).Phase.Serves() || !tb.Ended(id) {
					t.Fatalf("seed %d round %d: session %s ended for good: live %v, end recorded %v", seed, round, id, tb.Lookup(id).Phase.Serves(), tb.Ended(id))
				}
				if adopted, _ := tb.Adopt(context.Background(), id, "a", "", limits); adopted {
					t.Fatalf("seed %d round %d: session %s ended for good, adopted again", seed, round, id)
				}
			}
			h.mu.Lock()
			told := h.terminated[id]
			h.mu.Unlock()
			if told > 1 {
				t.Fatalf("seed %d round %d: session %s told ended %d times", seed, round, id, told)
			}
		}
	}
	tb.Close()
	if records, _ := tb.Count(); records != 0 || limits.Open() != 0 {
		t.Fatalf("seed %d: after Close, %d records and %d places held", seed, records, limits.Open())
	}
}

// streamsOnly counts the records of GET streams alone, which hold no
// place under the caps.
func (t *Table[C]) streamsOnly() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, rec := range t.byID {
		if rec.slot == nil {
			n++
		}
	}
	return n
}
