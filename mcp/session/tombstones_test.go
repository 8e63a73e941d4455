package session

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// newTestTombstones is an empty set of tombstones for ids sealed with
// seal, and a fixed now.
func newTestTombstones(tb testing.TB) (*tombstones, *Seal, time.Time) {
	tb.Helper()
	seal, err := NewSeal([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		tb.Fatal(err)
	}
	g := new(tombstones)
	g.init(time.Minute, seal)
	return g, seal, time.Unix(1_800_000_000, 0)
}

// SV-2: tombstones are bounded; one dropped to make room raises the floor
// of issue times that may be adopted to its own, so the id it stood for is
// refused, and so is any older one, while newer ids are not.
func TestTombstoneDroppedForRoomRaisesTheFloorSV2(t *testing.T) {
	g, seal, now := newTestTombstones(t)
	// The oldest-issued id ends last, so an eviction by end time would
	// keep it.
	first := now.Add(-time.Hour)
	ids := make([]string, 0, maxTombstones+1)
	for i := range maxTombstones {
		ids = append(ids, seal.Seal(Sealed{Path: "/mcp", Actor: fmt.Sprint(i), Issued: now.Add(-time.Duration(maxTombstones-i) * time.Millisecond).Unix()}))
	}
	oldest := seal.Seal(Sealed{Path: "/mcp", Actor: "oldest", Issued: first.Unix()})
	for _, id := range ids[:maxTombstones-1] {
		g.add(id, now)
	}
	g.add(oldest, now)
	if g.tooOld(first, now) {
		t.Fatal("refused before any tombstone was dropped")
	}
	g.add(ids[maxTombstones-1], now) // full: one must go
	if g.has(oldest, now) {
		t.Fatal("the oldest-issued tombstone was kept; another was dropped")
	}
	if !g.tooOld(first, now) || !g.tooOld(first.Add(-time.Second), now) {
		t.Error("the dropped tombstone's id (or an older one) may be adopted again")
	}
	if g.tooOld(now.Add(-time.Second), now) {
		t.Error("a recent id is refused")
	}
	if !g.tooOld(now.Add(-25*time.Hour), now.Add(time.Hour)) {
		t.Error("an id past the window is adopted")
	}
}

// SV-2: tombstones that lapsed make room before any is dropped early, so
// the floor stays where it was; churn at the bound keeps the bookkeeping
// within a small multiple of the bound; a lapsed id ends again.
func TestTombstonesLapseBeforeOneIsDroppedSV2(t *testing.T) {
	g, seal, now := newTestTombstones(t)
	// Plain ids whose issue time is their number, read without a seal:
	// 200,000 seals would make the test slow, not better.
	sealed := g.issued
	g.issued = func(id string) (time.Time, bool) {
		if n, err := strconv.Atoi(strings.TrimPrefix(id, "id-")); err == nil {
			return now.Add(-time.Hour + time.Duration(n)*time.Millisecond), true
		}
		return sealed(id)
	}
	id := func(i int) string { return "id-" + strconv.Itoa(i) }
	first := id(0)
	for i := range maxTombstones {
		if !g.add(id(i), now) {
			t.Fatalf("id %d was not added", i)
		}
	}
	if g.add(first, now) {
		t.Fatal("an ended id was added twice")
	}
	// Churn at the bound, each new id issued before all the others: the
	// one dropped for it is the one added just before (the earliest issued
	// then), from the back of the lapse order, not its front, until the
	// dropped entries are the greater part.
	for i := 1; i <= 2*maxTombstones; i++ {
		if !g.add(id(-i), now) {
			t.Fatalf("id %d was not added", -i)
		}
	}
	if len(g.at) != maxTombstones || g.byIssue.Len() != maxTombstones {
		t.Fatalf("%d tombstones, %d in the heap; want %d", len(g.at), g.byIssue.Len(), maxTombstones)
	}
	if n := len(g.byEnd); n > 2*maxTombstones+64 {
		t.Errorf("%d entries kept in lapse order for %d tombstones", n, maxTombstones)
	}
	// The first drop (id 0) raised the floor; the later ones, issued
	// earlier, left it there.
	floor := g.floor
	if want := now.Add(-time.Hour); !floor.Equal(want) || g.has(first, now) || !g.has(id(-2*maxTombstones), now) || !g.has(id(1), now) {
		t.Fatalf("floor %v after churn, want %v; first kept %v, last added kept %v, id 1 kept %v",
			floor, want, g.has(first, now), g.has(id(-2*maxTombstones), now), g.has(id(1), now))
	}

	later := now.Add(g.ttl)
	fresh := seal.Seal(Sealed{Path: "/mcp", Actor: "fresh", Issued: later.Unix()})
	if !g.add(fresh, later) {
		t.Fatal("a new id was not added after the others lapsed")
	}
	if g.floor != floor {
		t.Errorf("the floor moved from %v to %v although lapsed tombstones made room", floor, g.floor)
	}
	if len(g.at) != 1 || len(g.byEnd) != 1 || g.dropped != 0 {
		t.Errorf("after every other lapsed: %d tombstones, %d in lapse order, %d marked; want 1, 1, 0", len(g.at), len(g.byEnd), g.dropped)
	}
	if !g.has(fresh, later) || g.has(fresh, later.Add(g.ttl)) {
		t.Error("the fresh tombstone is not kept, or kept past its ttl")
	}
	if !g.add(fresh, later.Add(g.ttl)) || !g.has(fresh, later.Add(g.ttl)) {
		t.Error("a lapsed id did not end again")
	}
}

// BenchmarkTombstoneAddAtCap is one session end with the tombstones full
// (SV-2): what every DELETE or expiry costs once 65,536 ended ids
// are kept, as they are after a day of steady churn.
func BenchmarkTombstoneAddAtCap(b *testing.B) {
	g, seal, now := newTestTombstones(b)
	id := func(i int) string {
		return seal.Seal(Sealed{Path: "/mcp", Actor: fmt.Sprint(i), Issued: now.Add(time.Duration(i) * time.Millisecond).Unix()})
	}
	for i := range maxTombstones {
		g.add(id(i), now)
	}
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = id(maxTombstones + i)
	}
	b.ResetTimer()
	for _, id := range ids {
		if !g.add(id, now) {
			b.Fatal("a new id was not added")
		}
	}
}

// SV-2: a tombstone's stamps order as the times do, and clamp outside
// int64 nanoseconds instead of wrapping around; an id that is not sealed
// reads as issued at the epoch, before every sealed one.
func TestTombstoneStampClampsSV2(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	if stampOf(time.Time{}) != math.MinInt64 || stampOf(now.AddDate(500, 0, 0)) != math.MaxInt64 {
		t.Errorf("stamps of the zero time and of 500 years on: %d, %d; want the least and the greatest", stampOf(time.Time{}), stampOf(now.AddDate(500, 0, 0)))
	}
	if a, b := stampOf(now), stampOf(now.Add(time.Nanosecond)); a >= b || time.Unix(0, a) != now {
		t.Errorf("stamps %d, %d of now and a nanosecond later", a, b)
	}
	g, seal, _ := newTestTombstones(t)
	plain := "not-a-sealed-id"
	sealed := seal.Seal(Sealed{Path: "/mcp", Actor: "a", Issued: now.Unix()})
	g.add(sealed, now)
	g.add(plain, now)
	if root := g.byIssue[0]; root.id != plain || root.issued != 0 {
		t.Errorf("the earliest issued is %q at %d; want the id that is not sealed, at the epoch", root.id, root.issued)
	}
}

// OP-5, SV-2: a session id stays a reasonable header whatever the client
// put in its initialize: an oversized name, version or protocol revision
// is cut (at a rune boundary) and oversized capabilities are left out, and
// the id still opens to the same actor.
func TestSealedIDBoundedWhateverTheClientSent(t *testing.T) {
	seal, err := NewSeal([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("é", 50_000)
	id := seal.Seal(Sealed{Path: "/mcp", Actor: "alice", Protocol: huge, ClientName: huge, ClientVersion: huge,
		Capabilities: json.RawMessage(`{"x":"` + strings.Repeat("a", 100_000) + `"}`), Issued: 1})
	if len(id) > 2048 {
		t.Fatalf("the id is %d bytes long", len(id))
	}
	c, ok := seal.Open(id)
	if !ok || c.Actor != "alice" || c.Path != "/mcp" {
		t.Fatalf("the id opens to %+v, %v", c, ok)
	}
	for _, v := range []string{c.Protocol, c.ClientName, c.ClientVersion} {
		if len(v) == 0 || len(v) > maxSealedText || !utf8.ValidString(v) || !strings.HasPrefix(huge, v) {
			t.Errorf("a sealed text is %d bytes (valid UTF-8: %v), want a prefix of what was sent of at most %d", len(v), utf8.ValidString(v), maxSealedText)
		}
	}
	if c.Capabilities != nil {
		t.Errorf("oversized capabilities were sealed: %d bytes", len(c.Capabilities))
	}
	small := seal.Seal(Sealed{Path: "/mcp", Actor: "bob", ClientName: "claude-code", ClientVersion: "2.1.0", Protocol: "2025-11-25"})
	if c, ok := seal.Open(small); !ok || c.ClientName != "claude-code" || c.ClientVersion != "2.1.0" || c.Protocol != "2025-11-25" {
		t.Errorf("ordinary client info changed on the way: %+v", c)
	}
}
