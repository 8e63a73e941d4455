package memory_test

import (
	"testing"

	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/internal/store/storetest"
)

// UI-3: the in-memory store keeps upstream connections like the
// persistent ones.
func TestConnectionConformance(t *testing.T) {
	m := memory.NewMemStore()
	defer m.Close()
	storetest.ConnectionConformance(t, m, m)
}

// UI-2: a connect link's id is looked at without being spent.
func TestTokenSpent(t *testing.T) {
	m := memory.NewMemStore()
	defer m.Close()
	storetest.TokenSpentConformance(t, m, m)
}
