package postgres

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
)

// IN-3, OP-5: a database migrated by a toolgate from before flow labels
// were kept (the schema one version back, without the table) is brought
// up to date by the next Open, keeping what it held, and keeps flow
// labels from then on.
func TestOldSchemaMigratesToFlowLabelsIN3(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).NewDatabase(t)
	s := mustOpen(t, dsn)
	id := s.id
	for _, q := range []string{`DROP TABLE toolgate.flow_labels`, `UPDATE toolgate.schema_version SET version = ` + strconv.Itoa(len(migrations)-1)} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Close()

	s = mustOpen(t, dsn)
	var version int
	if err := s.pool.QueryRow(ctx, `SELECT version FROM toolgate.schema_version`).Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("schema version after reopening = %d, %v; want %d", version, err, len(migrations))
	}
	if s.id != id {
		t.Errorf("the store's identity changed in the migration: %s, then %s", id, s.id)
	}
	now := time.Now()
	if err := s.AddFlowLabels(ctx, "k", []string{"untrusted", "private"}, now, now.Add(time.Hour)); err != nil {
		t.Fatalf("AddFlowLabels after migrating: %v", err)
	}
	if got, _, err := s.FlowLabels(ctx, "k", now); err != nil || !slices.Equal(got, []string{"private", "untrusted"}) {
		t.Errorf("flow labels after migrating = %q, %v", got, err)
	}
}
