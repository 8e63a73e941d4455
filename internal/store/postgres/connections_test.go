package postgres

import (
	"testing"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/store/storetest"
)

// UI-3: upstream connections on a real server, through two handles on one
// database as two replicas have: a connection made through one serves on
// the other.
func TestConnectionConformance(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	storetest.ConnectionConformance(t, mustOpen(t, dsn), mustOpen(t, dsn))
}

// UI-2: a connect link's id is looked at without being spent, and a spend
// through one replica shows on the other.
func TestTokenSpent(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	storetest.TokenSpentConformance(t, mustOpen(t, dsn), mustOpen(t, dsn))
}
