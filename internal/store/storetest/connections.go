package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolgate/toolgate/core"
)

// ConnectionConformance checks core.ConnectionStore on two handles of one
// store (the same handle twice for a store that cannot be shared): what one
// handle stores the other reads, a reconnect replaces the actor's
// connection, and of racing updates over one version exactly one wins
// (UI-3).
func ConnectionConformance(t *testing.T, a, b core.ConnectionStore) {
	ctx := context.Background()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	conn := func(id, upstream, actor string) core.Connection {
		return core.Connection{ID: id, Upstream: upstream, ActorID: actor, Scopes: []string{"crm.read", "crm.write"},
			Expiry: at.Add(time.Hour), CreatedAt: at, Sealed: []byte("sealed-" + id + "\x00\xff"), KeyID: "k1"}
	}
	if _, err := a.ConnectionFor(ctx, "crm", "alice"); !errors.Is(err, core.ErrNoConnection) {
		t.Fatalf("ConnectionFor on an empty store: %v, want ErrNoConnection", err)
	}
	if _, err := a.PutConnection(ctx, core.Connection{ID: "x", Upstream: "crm", ActorID: "alice"}); err == nil {
		t.Fatal("a connection without sealed tokens was stored")
	}
	alice := conn("c-alice", "crm", "alice")
	if old, err := a.PutConnection(ctx, alice); err != nil || old != "" {
		t.Fatalf("PutConnection = %q, %v", old, err)
	}
	for _, c := range []core.Connection{conn("c-bob", "crm", "bob"), conn("c-shared", "docs", core.SharedActor)} {
		if _, err := b.PutConnection(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	alice.Version = 1
	got, err := b.ConnectionFor(ctx, "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	timeEq := cmpopts.EquateApproxTime(time.Microsecond)
	if diff := cmp.Diff(alice, got, timeEq); diff != "" {
		t.Fatalf("read back (-want +got):\n%s", diff)
	}
	if got, err := a.ConnectionByID(ctx, "c-bob"); err != nil || got.ActorID != "bob" {
		t.Fatalf("ConnectionByID = %+v, %v", got, err)
	}
	list, err := a.Connections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	if diff := cmp.Diff([]string{"c-alice", "c-bob", "c-shared"}, ids); diff != "" {
		t.Fatalf("Connections order (-want +got):\n%s", diff)
	}

	// A reconnect replaces the actor's connection.
	again := conn("c-alice-2", "crm", "alice")
	if old, err := b.PutConnection(ctx, again); err != nil || old != "c-alice" {
		t.Fatalf("reconnect PutConnection = %q, %v; want c-alice replaced", old, err)
	}
	if _, err := a.ConnectionByID(ctx, "c-alice"); !errors.Is(err, core.ErrNoConnection) {
		t.Fatalf("the replaced connection is still there: %v", err)
	}

	// Of racing refreshes over one version exactly one writes.
	var wins atomic.Int64
	var wg sync.WaitGroup
	for i := range 10 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			next := again
			next.Sealed = []byte{byte(i), 1, 2}
			next.Expiry = at.Add(2 * time.Hour)
			ok, err := s.UpdateConnection(ctx, next, 1)
			if err != nil {
				t.Errorf("UpdateConnection: %v", err)
			}
			if ok {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d of 10 racing updates over version 1 won, want 1", wins.Load())
	}
	got, err = b.ConnectionFor(ctx, "crm", "alice")
	if err != nil || got.Version != 2 || len(got.Sealed) != 3 || !got.Expiry.Equal(at.Add(2*time.Hour)) {
		t.Fatalf("after the update: %+v, %v", got, err)
	}
	if err := a.TouchConnection(ctx, got.ID, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ = b.ConnectionByID(ctx, got.ID)
	if !got.LastUsed.Equal(at.Add(time.Minute)) || got.Version != 2 {
		t.Fatalf("after a touch: lastUsed %v version %d", got.LastUsed, got.Version)
	}
	broken := got
	broken.Broken = "the authorization server refused the refresh token (invalid_grant)"
	if ok, err := b.UpdateConnection(ctx, broken, 2); !ok || err != nil {
		t.Fatalf("marking broken: %v, %v", ok, err)
	}
	if got, _ := a.ConnectionByID(ctx, got.ID); got.Broken != broken.Broken {
		t.Fatalf("broken = %q", got.Broken)
	}

	if ok, err := a.DeleteConnection(ctx, "c-bob"); !ok || err != nil {
		t.Fatalf("DeleteConnection = %v, %v", ok, err)
	}
	if ok, err := b.DeleteConnection(ctx, "c-bob"); ok || err != nil {
		t.Fatalf("second DeleteConnection = %v, %v; want false", ok, err)
	}
	if ok, err := b.UpdateConnection(ctx, conn("c-bob", "crm", "bob"), 1); ok || err != nil {
		t.Fatalf("UpdateConnection of a deleted connection = %v, %v; want false", ok, err)
	}
	if _, err := b.ConnectionFor(ctx, "crm", "bob"); !errors.Is(err, core.ErrNoConnection) {
		t.Fatalf("deleted connection read back: %v", err)
	}
}

// TokenSpender is a store whose spent ids can be looked at without
// spending them.
type TokenSpender interface {
	UseToken(ctx context.Context, tokenID string, expires time.Time) (bool, error)
	TokenSpent(ctx context.Context, tokenID string) (bool, error)
}

// TokenSpentConformance checks TokenSpent on two handles of one store:
// looking never spends, however often; once one handle spends an id both
// see it spent (UI-2).
func TokenSpentConformance(t *testing.T, a, b TokenSpender) {
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	for range 3 {
		for _, s := range []TokenSpender{a, b} {
			if spent, err := s.TokenSpent(ctx, "upstream-oauth/connect/x1"); err != nil || spent {
				t.Fatalf("TokenSpent of an unused id = %v, %v", spent, err)
			}
		}
	}
	if first, err := a.UseToken(ctx, "upstream-oauth/connect/x1", exp); err != nil || !first {
		t.Fatalf("UseToken after looking = %v, %v; looking spent it", first, err)
	}
	for _, s := range []TokenSpender{a, b} {
		if spent, err := s.TokenSpent(ctx, "upstream-oauth/connect/x1"); err != nil || !spent {
			t.Fatalf("TokenSpent of a spent id = %v, %v", spent, err)
		}
		if spent, err := s.TokenSpent(ctx, "upstream-oauth/connect/x2"); err != nil || spent {
			t.Fatalf("TokenSpent of another id = %v, %v", spent, err)
		}
	}
}
