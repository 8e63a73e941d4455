package mcp

import (
	"fmt"
	"testing"
	"time"
)

// SV-2: tombstones are bounded; one dropped to make room raises the floor
// of issue times that may be adopted to its own, so the id it stood for is
// refused, and so is any older one, while newer ids are not.
func TestTombstoneDroppedForRoomRaisesTheFloorSV2(t *testing.T) {
	seal, err := newSessionSeal([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	var g tombstones
	g.init(time.Minute, seal)
	now := time.Unix(1_800_000_000, 0)
	// The oldest-issued id ends last, so an eviction by end time would
	// keep it.
	first := now.Add(-time.Hour)
	ids := make([]string, 0, maxTombstones+1)
	for i := range maxTombstones {
		ids = append(ids, seal.seal(sealedSession{Path: "/mcp", Actor: fmt.Sprint(i), Issued: now.Add(-time.Duration(maxTombstones-i) * time.Millisecond).Unix()}))
	}
	oldest := seal.seal(sealedSession{Path: "/mcp", Actor: "oldest", Issued: first.Unix()})
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
