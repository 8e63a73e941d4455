package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/store/sqlite"
	"github.com/toolgate/toolgate/internal/store/storetest"
)

// BenchmarkConfirmedCall is the store's share of one confirmed action call
// (CF-4, OP-6): spend the token, then commit the audit record. Each
// iteration makes one such call on SQLite and one on PostgreSQL, timed
// apart, so both see the same machine at the same moment and the ratio
// holds however loaded it is (QB-2): reported as sqlite-µs/call,
// postgres-µs/call and pg/sqlite. PostgreSQL keeps its default durability
// (fsync, synchronous_commit on); SQLite runs in WAL with
// synchronous=NORMAL, as the embedded store does. Sequential is one caller;
// parallel is 16 callers per CPU, where both stores' group commit of the
// audit log shares transactions.
func BenchmarkConfirmedCall(b *testing.B) {
	srv := pgtest.Start(b, &pgtest.Options{Durable: true})
	open := func(b *testing.B) (lite, pg core.Store) {
		var err error
		if lite, err = sqlite.Open(context.Background(), b.TempDir()+"/bench.db"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { lite.Close() })
		if pg, err = Open(context.Background(), srv.NewDatabase(b)); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { pg.Close() })
		return lite, pg
	}
	var ids atomic.Int64
	exp := time.Now().Add(time.Hour)
	// pair makes one call on each store, adding each one's time.
	pair := func(b *testing.B, lite, pg core.Store, liteNs, pgNs *atomic.Int64) {
		id := fmt.Sprint("call-", ids.Add(1))
		t0 := time.Now()
		confirmedCall(b, lite, id, exp)
		t1 := time.Now()
		confirmedCall(b, pg, id, exp)
		liteNs.Add(int64(t1.Sub(t0)))
		pgNs.Add(int64(time.Since(t1)))
	}
	report := func(b *testing.B, liteNs, pgNs *atomic.Int64) {
		n := float64(b.N)
		b.ReportMetric(float64(liteNs.Load())/n/1e3, "sqlite-µs/call")
		b.ReportMetric(float64(pgNs.Load())/n/1e3, "postgres-µs/call")
		b.ReportMetric(float64(pgNs.Load())/float64(liteNs.Load()), "pg/sqlite")
	}
	b.Run("sequential", func(b *testing.B) {
		lite, pg := open(b)
		var liteNs, pgNs atomic.Int64
		for b.Loop() {
			pair(b, lite, pg, &liteNs, &pgNs)
		}
		report(b, &liteNs, &pgNs)
	})
	b.Run("parallel", func(b *testing.B) {
		lite, pg := open(b)
		var liteNs, pgNs atomic.Int64
		b.SetParallelism(16)
		b.RunParallel(func(p *testing.PB) {
			for p.Next() {
				pair(b, lite, pg, &liteNs, &pgNs)
			}
		})
		// Summed over callers: per call of one caller, not wall time.
		report(b, &liteNs, &pgNs)
	})
}

func confirmedCall(b *testing.B, s core.Store, id string, exp time.Time) {
	ctx := context.Background()
	first, err := s.UseToken(ctx, id, exp)
	if err != nil || !first {
		b.Errorf("UseToken(%s) = %v, %v", id, first, err)
		return
	}
	if err := s.AppendAudit(ctx, storetest.FullAuditRecord(time.Now(), id)); err != nil {
		b.Error(err)
	}
}
