package pgstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/sqlitestore"
	"github.com/toolgate/toolgate/core/storetest"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// BenchmarkConfirmedCall is the store's share of one confirmed action call
// (CF-4, OP-6): spend the token, then commit the audit record, on
// PostgreSQL and on SQLite in one run, so their ratio is measured on one
// machine at one moment. PostgreSQL runs with its default durability
// (fsync, synchronous_commit on); SQLite in WAL with synchronous=NORMAL, as
// the embedded store runs. Sequential is one caller; parallel is 16 per
// CPU, where both stores' group commit of the audit log shares
// transactions.
func BenchmarkConfirmedCall(b *testing.B) {
	srv := pgtest.Start(b, &pgtest.Options{Durable: true})
	open := map[string]func(b *testing.B) core.Store{
		"postgres": func(b *testing.B) core.Store {
			s, err := Open(context.Background(), srv.NewDatabase(b))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		"sqlite": func(b *testing.B) core.Store {
			s, err := sqlitestore.Open(context.Background(), b.TempDir()+"/bench.db")
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name+"/sequential", func(b *testing.B) {
			s := open[name](b)
			defer s.Close()
			ctx := context.Background()
			exp := time.Now().Add(time.Hour)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				confirmedCall(b, ctx, s, fmt.Sprint("seq-", i), exp)
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			s := open[name](b)
			defer s.Close()
			ctx := context.Background()
			exp := time.Now().Add(time.Hour)
			b.ReportAllocs()
			b.SetParallelism(16)
			var n atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprint("par-", n.Add(1))
					confirmedCall(b, ctx, s, id, exp)
				}
			})
		})
	}
}

func confirmedCall(b *testing.B, ctx context.Context, s core.Store, id string, exp time.Time) {
	first, err := s.UseToken(ctx, id, exp)
	if err != nil || !first {
		b.Errorf("UseToken(%s) = %v, %v", id, first, err)
		return
	}
	if err := s.AppendAudit(ctx, storetest.FullAuditRecord(time.Now(), id)); err != nil {
		b.Error(err)
	}
}
