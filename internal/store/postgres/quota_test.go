package postgres

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/store/storetest"
)

// PO-3, OP-5: two replicas' limits on one PostgreSQL database share a
// daily quota per actor, with the keys the limits really write, and both
// read the same usage.
func TestReplicasShareDailyQuota(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	a, b := mustOpen(t, dsn), mustOpen(t, dsn)
	spec := []policy.LimitSpec{{ID: "daily-writes", Per: policy.PerActor, Quota: 3, Window: 24 * time.Hour}}
	la, err := policy.NewLimits(spec, a)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := policy.NewLimits(spec, b)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tool := &core.Tool{Name: "notes_create_note", Kind: core.KindAction}
	alice := &policy.Input{Actor: core.Actor{ID: "alice", Tenant: "acme"}, Tool: tool}
	bob := &policy.Input{Actor: core.Actor{ID: "bob"}, Tool: tool}
	for i, l := range []*policy.Limits{la, lb, la} {
		if err := l.Take(ctx, alice); err != nil {
			t.Fatalf("take %d of 3: %v", i+1, err)
		}
	}
	for _, l := range []*policy.Limits{la, lb} {
		var le *policy.LimitedError
		if err := l.Take(ctx, alice); !errors.As(err, &le) || le.ID != "daily-writes" {
			t.Fatalf("a fourth take of 3: %v; want the quota's refusal", err)
		}
	}
	if err := lb.Take(ctx, bob); err != nil {
		t.Fatalf("bob's first: %v", err)
	}
	for _, l := range []*policy.Limits{la, lb} {
		u := l.Usage(ctx, 10)
		if len(u) != 1 || u[0].Err != "" || u[0].Quota != 3 || len(u[0].Top) != 2 {
			t.Fatalf("Usage = %+v", u)
		}
		if top := u[0].Top; !slices.Equal(top[0].Parts, []string{"acme", "alice"}) || top[0].Count != 3 ||
			!slices.Equal(top[1].Parts, []string{"", "bob"}) || top[1].Count != 1 {
			t.Fatalf("Usage top = %+v", top)
		}
	}
}

// PO-3, OP-5: three replicas' limits on three handles of one PostgreSQL
// database lease a quota without running past it.
func TestReplicasLeaseQuota(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	storetest.QuotaLeaseReplicas(t, mustOpen(t, dsn), mustOpen(t, dsn), mustOpen(t, dsn))
}
