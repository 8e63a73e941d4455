package sqlitestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/storetest"
)

func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(context.Background(), b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkAppendAudit is one caller appending and waiting for each commit.
func BenchmarkAppendAudit(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := s.AppendAudit(ctx, storetest.FullAuditRecord(time.Now(), fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendAuditParallel is 16 callers per CPU: group commit shares
// transactions between them.
func BenchmarkAppendAuditParallel(b *testing.B) {
	s := benchStore(b)
	benchParallel(b, s.AppendAudit)
}

// benchParallel runs write from 16 callers per CPU, each record new.
func benchParallel(b *testing.B, write func(context.Context, core.AuditRecord) error) {
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if err := write(ctx, storetest.FullAuditRecord(time.Now(), fmt.Sprint(i))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkQueueAudit is one caller queueing without waiting, the flusher
// writing behind it; the time includes committing the last record.
func BenchmarkQueueAudit(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := s.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
	s.audit.Flush()
}

// BenchmarkQueueAuditParallel is BenchmarkQueueAudit with 16 callers per CPU.
func BenchmarkQueueAuditParallel(b *testing.B) {
	s := benchStore(b)
	benchParallel(b, s.QueueAudit)
	s.audit.Flush()
}

// BenchmarkInsertAuditBatch is the write of one batch of 64 records, per
// record.
func BenchmarkInsertAuditBatch(b *testing.B) {
	s := benchStore(b)
	recs := make([]core.AuditRecord, 64)
	for i := range recs {
		recs[i] = storetest.FullAuditRecord(time.Now(), fmt.Sprint(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.insertAudit(recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}
