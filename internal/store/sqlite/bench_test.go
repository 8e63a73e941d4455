package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/store/storetest"
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
	cpu := processCPU()
	benchParallel(b, s.AppendAudit)
	reportCPU(b, cpu, float64(b.N), "cpu-ns/op")
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
	cpu := processCPU()
	i := 0
	for b.Loop() {
		i++
		if err := s.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
	s.audit.Flush()
	reportCPU(b, cpu, float64(b.N), "cpu-ns/op")
}

// BenchmarkQueueAuditParallel is BenchmarkQueueAudit with 16 callers per CPU.
func BenchmarkQueueAuditParallel(b *testing.B) {
	s := benchStore(b)
	cpu := processCPU()
	benchParallel(b, s.QueueAudit)
	s.audit.Flush()
	reportCPU(b, cpu, float64(b.N), "cpu-ns/op")
}

// BenchmarkQueueAuditPaced is 16 callers per CPU each queueing a record
// every millisecond, as sessions of a gateway do, instead of as fast as
// they can: the flusher lingers for company between batches. Only
// cpu-ns/op says something (it includes the callers' sleeps, the same in
// every run).
func BenchmarkQueueAuditPaced(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(16)
	cpu := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			time.Sleep(time.Millisecond)
			if err := s.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), fmt.Sprint(i))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	s.audit.Flush()
	reportCPU(b, cpu, float64(b.N), "cpu-ns/op")
}

// BenchmarkInsertAuditBatch is the flusher's write of one batch (one
// transaction), per record, at batch sizes group commit produces: a lone
// call, a few concurrent sessions, a busy gateway (45: not one of the
// prepared sizes).
func BenchmarkInsertAuditBatch(b *testing.B) {
	for _, n := range []int{1, 16, 45, 64} {
		b.Run(fmt.Sprint("records=", n), func(b *testing.B) {
			s := benchStore(b)
			recs := make([]core.AuditRecord, n)
			for i := range recs {
				recs[i] = storetest.FullAuditRecord(time.Now(), "")
			}
			// Times rise from batch to batch, as a gateway's do: the
			// index on time is appended to, not written all over. Every
			// record has a call id of its own, random as the endpoint's
			// are: the same ids batch after batch would keep the
			// audit_call index's writes on a few pages.
			at := time.Now()
			ids := callIDs(false)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu := processCPU()
			for b.Loop() {
				for i := range recs {
					at = at.Add(time.Microsecond)
					recs[i].Time, recs[i].CallID = at, ids(at)
				}
				if err := s.insertAudit(recs); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			per := float64(b.N * n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/record")
			reportCPU(b, cpu, per, "cpu-ns/record")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/per, "allocs/record")
		})
	}
}

// BenchmarkInsertAuditSustained is the flusher's CPU per record in a store
// that already holds 48,000 records, batches of 16, by the kind of call id
// the records carry: random (as the endpoint makes them: every record's
// entry in the audit_call index lands on a page of its own, which the
// transaction writes to the WAL and a checkpoint writes again) or
// time-ordered (a random id behind the time: the entries append, as the
// time and chain indexes' do). The chain and the indexes are the same in
// both; only the order of the keys differs (OP-6, OP-10).
func BenchmarkInsertAuditSustained(b *testing.B) {
	for _, ordered := range []bool{false, true} {
		name := "call-ids=random"
		if ordered {
			name = "call-ids=time-ordered"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b)
			ids := callIDs(ordered)
			recs := make([]core.AuditRecord, 16)
			at := time.Now()
			write := func() {
				for i := range recs {
					at = at.Add(time.Microsecond)
					recs[i] = storetest.FullAuditRecord(at, ids(at))
				}
				if err := s.insertAudit(recs); err != nil {
					b.Fatal(err)
				}
			}
			for range 3000 {
				write()
			}
			cpu := processCPU()
			for b.Loop() {
				write()
			}
			reportCPU(b, cpu, float64(b.N*len(recs)), "cpu-ns/record")
		})
	}
}

// callIDs returns a maker of 32-hex-digit call ids: random, or the time in
// nanoseconds followed by random digits.
func callIDs(ordered bool) func(time.Time) string {
	return func(at time.Time) string {
		var id [16]byte
		_, _ = rand.Read(id[:])
		if ordered {
			binary.BigEndian.PutUint64(id[:8], uint64(at.UnixNano()))
		}
		return hex.EncodeToString(id[:])
	}
}

// reportCPU reports the process's CPU time since start (a processCPU
// reading) per unit, where the system measures it.
func reportCPU(b *testing.B, start time.Duration, units float64, name string) {
	if start == 0 || units == 0 {
		return
	}
	b.ReportMetric(float64((processCPU()-start).Nanoseconds())/units, name)
}
