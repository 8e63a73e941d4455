package sqlite

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/internal/store/storetest"
)

// UI-3: upstream connections on a real file, through two handles as two
// gateway processes on one file have.
func TestConnectionConformance(t *testing.T) {
	path := tempPath(t)
	a := mustOpen(t, path)
	b, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	storetest.ConnectionConformance(t, a, b)
}

// UI-2: a connect link's id is looked at without being spent, and a spend
// through one handle shows through another on the same file.
func TestTokenSpent(t *testing.T) {
	path := tempPath(t)
	a := mustOpen(t, path)
	b, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	storetest.TokenSpentConformance(t, a, b)
}
