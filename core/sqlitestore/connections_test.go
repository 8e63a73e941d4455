package sqlitestore

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/core/storetest"
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
