package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// OP-11: two handles on one database, as two replicas have: each sees
// where the other is reached; an address lives with its replica's beat,
// survives its session syncs, and goes when the replica is dropped or its
// beat is old.
func TestReplicaDirectoryOP11(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	a, b := mustOpen(t, dsn), mustOpen(t, dsn)
	ctx := context.Background()
	now := time.Now()
	if err := a.AdvertiseReplica(ctx, "a", "10.0.0.1:7331", now); err != nil {
		t.Fatal(err)
	}
	// A sync before or after the advertisement keeps the address.
	if err := b.SyncSessions(ctx, "b", now, []core.Session{}); err != nil {
		t.Fatal(err)
	}
	if err := b.AdvertiseReplica(ctx, "b", "10.0.0.2:7331", now); err != nil {
		t.Fatal(err)
	}
	if err := a.SyncSessions(ctx, "a", now, []core.Session{}); err != nil {
		t.Fatal(err)
	}
	got, err := b.ReplicaAddrs(ctx, now.Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a": "10.0.0.1:7331", "b": "10.0.0.2:7331"}, got); diff != "" {
		t.Fatalf("addresses (-want +got):\n%s", diff)
	}
	// Re-advertised elsewhere (a restart on a new address) replaces it.
	if err := a.AdvertiseReplica(ctx, "a", "10.0.0.9:7331", now); err != nil {
		t.Fatal(err)
	}
	// b's beat is older than the window: not listed.
	if err := a.SyncSessions(ctx, "a", now.Add(time.Minute), []core.Session{}); err != nil {
		t.Fatal(err)
	}
	got, err = a.ReplicaAddrs(ctx, now.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a": "10.0.0.9:7331"}, got); diff != "" {
		t.Fatalf("after b's beat aged (-want +got):\n%s", diff)
	}
	if err := a.DropReplica(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	got, err = b.ReplicaAddrs(ctx, now.Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"b": "10.0.0.2:7331"}, got); diff != "" {
		t.Fatalf("after a was dropped (-want +got):\n%s", diff)
	}
}
