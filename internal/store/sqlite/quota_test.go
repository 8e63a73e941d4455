package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/internal/store/storetest"
)

// PO-3, OP-5: three gateways' limits on three handles of one file lease a
// quota without running past it.
func TestReplicasLeaseQuota(t *testing.T) {
	path := tempPath(t)
	storetest.QuotaLeaseReplicas(t, mustOpen(t, path), mustOpen(t, path), mustOpen(t, path))
}

// BenchmarkLimitsQuota is what a quota counted in a store file costs a
// call against a rate alone (PO-3): none is a rate only; quota adds the
// quota of the bench's gateway (1000000000/day per actor).
func BenchmarkLimitsQuota(b *testing.B) {
	ctx := context.Background()
	in := &policy.Input{Actor: core.Actor{ID: "alice", Tenant: "acme"}, Tool: &core.Tool{Name: "echo"}}
	rate := policy.LimitSpec{ID: "rate", Per: policy.PerActor, Rate: 1e9, Burst: 1e9}
	quota := policy.LimitSpec{ID: "quota", Per: policy.PerActor, Quota: 1e9, Window: 24 * time.Hour}
	for _, c := range []struct {
		name  string
		specs []policy.LimitSpec
	}{{"none", []policy.LimitSpec{rate}}, {"quota", []policy.LimitSpec{rate, quota}}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := Open(ctx, filepath.Join(b.TempDir(), "toolgate.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			l, err := policy.NewLimits(c.specs, s)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := l.Take(ctx, in); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
