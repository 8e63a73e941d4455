package sqlite

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// IN-3, OP-5: a store file written before flow labels were kept (every
// migration but the flow table's applied, an approval recorded) opens,
// migrates, keeps what it held and keeps flow labels from then on,
// through a reopen too.
func TestOldFileMigratesToFlowLabelsIN3(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	last := len(migrations) - 1
	stmts := append(slices.Clone(migrations[:last]),
		`INSERT INTO approvals VALUES ('notes', 'search', 'fp', 'approved', 'olivia', '2026-01-01T00:00:00Z')`,
		fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", last, applicationID))
	rawExec(t, path, stmts...)

	s := mustOpen(t, path)
	if a, err := s.Approvals(ctx); err != nil || len(a) != 1 || a[0].By != "olivia" {
		t.Fatalf("the old file's approvals after migrating = %+v, %v", a, err)
	}
	now := time.Now()
	if err := s.AddFlowLabels(ctx, "k", []string{"untrusted", "private"}, now, now.Add(time.Hour)); err != nil {
		t.Fatalf("AddFlowLabels on the migrated file: %v", err)
	}
	_ = s.Close()
	labels, _, err := mustOpen(t, path).FlowLabels(ctx, "k", now)
	if err != nil || !slices.Equal(labels, []string{"private", "untrusted"}) {
		t.Errorf("flow labels after reopening = %q, %v", labels, err)
	}
}
