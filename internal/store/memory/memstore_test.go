package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

// CF-4: the in-memory ledger prunes by the clock it is given, never an id
// whose expiry (plus grace) is still ahead.
func TestMemStorePruneUsesClockCF4(t *testing.T) {
	m := NewMemStore()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return now }
	ctx := context.Background()
	if first, _ := m.UseToken(ctx, "a", now.Add(time.Minute)); !first {
		t.Fatal("first use not first")
	}
	// Time passes beyond a's expiry and the grace; fillers trigger a prune.
	now = now.Add(time.Minute + core.SpentTokenGrace + time.Second)
	for i := range core.PruneEvery {
		_, _ = m.UseToken(ctx, fmt.Sprint("filler-", i), now.Add(time.Hour))
	}
	m.mu.Lock()
	_, kept := m.tokens["a"]
	n := len(m.tokens)
	m.mu.Unlock()
	if kept {
		t.Error("expired id still kept after a prune")
	}
	if n != core.PruneEvery {
		t.Errorf("%d ids kept, want the %d unexpired ones", n, core.PruneEvery)
	}
}
