package memstore_test

import (
	"testing"

	"github.com/toolgate/toolgate/core/memstore"
	"github.com/toolgate/toolgate/core/storetest"
)

// UI-3: the in-memory store keeps upstream connections like the
// persistent ones.
func TestConnectionConformance(t *testing.T) {
	m := memstore.NewMemStore()
	defer m.Close()
	storetest.ConnectionConformance(t, m, m)
}

// UI-2: a connect link's id is looked at without being spent.
func TestTokenSpent(t *testing.T) {
	m := memstore.NewMemStore()
	defer m.Close()
	storetest.TokenSpentConformance(t, m, m)
}
