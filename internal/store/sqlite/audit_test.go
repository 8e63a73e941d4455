package sqlite

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditchain"
	"github.com/toolgate/toolgate/core/auditqueue"
	"github.com/toolgate/toolgate/internal/store/storetest"
	"github.com/toolgate/toolgate/internal/waittest"
)

func auditIDs(t *testing.T, s *Store) map[string]int {
	t.Helper()
	recs, err := s.Audit(context.Background(), core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, r := range recs {
		ids[r.CallID]++
	}
	return ids
}

// OP-6: queued records are committed on Close, and found after a reopen;
// records queued by many goroutines at once are each written once.
func TestQueuedAuditSurvivesCloseOP6(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	s := mustOpen(t, path)
	const writers, each = 8, 300
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), fmt.Sprintf("w%d-%d", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), "late")); !errors.Is(err, core.ErrStoreClosed) {
		t.Errorf("QueueAudit after Close = %v, want ErrStoreClosed", err)
	}
	ids := auditIDs(t, mustOpen(t, path))
	if len(ids) != writers*each {
		t.Fatalf("%d records after reopen, want %d", len(ids), writers*each)
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("record %s written %d times", id, n)
		}
	}
}

// OP-6: Close while writers are still queueing loses nothing that was
// accepted: every QueueAudit that returned nil is in the file.
func TestCloseDuringQueueingOP6(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	s := mustOpen(t, path)
	var mu sync.Mutex
	accepted := map[string]bool{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				err := s.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), id))
				if err != nil {
					if !errors.Is(err, core.ErrStoreClosed) {
						t.Error(err)
					}
					return
				}
				mu.Lock()
				accepted[id] = true
				mu.Unlock()
			}
		})
	}
	// Close once every writer is queueing, not after a pause a loaded
	// machine may spend before any of them ran.
	waittest.Eventually(t, time.Minute, "every writer to have a record accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for w := range 4 {
			if !accepted[fmt.Sprintf("w%d-0", w)] {
				return false
			}
		}
		return true
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	ids := auditIDs(t, mustOpen(t, path))
	for id := range accepted {
		if ids[id] != 1 {
			t.Errorf("accepted record %s written %d times", id, ids[id])
		}
	}
	if len(accepted) == 0 {
		t.Fatal("nothing was queued before Close")
	}
}

// OP-6: AppendAudit returns only once its record is committed: another
// handle on the file (another process, say) sees it at once. A queued
// record reaches the file moments later without anybody asking.
func TestAppendCommitsQueueFollowsOP6(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	a, b := mustOpen(t, path), mustOpen(t, path)
	if err := a.AppendAudit(ctx, storetest.FullAuditRecord(time.Now(), "appended")); err != nil {
		t.Fatal(err)
	}
	if ids := auditIDs(t, b); ids["appended"] != 1 {
		t.Fatalf("another handle does not see an appended record: %v", ids)
	}
	if err := a.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), "queued")); err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, 5*time.Second, "the queued record to reach the file", func() bool { return auditIDs(t, b)["queued"] == 1 })
	// The handle that queued sees its own records at once.
	for i := range 20 {
		if err := a.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), fmt.Sprint("q", i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(auditIDs(t, a)); n != 22 {
		t.Fatalf("Audit on the queueing handle sees %d records, want 22", n)
	}
}

// OP-6: a full queue makes writers wait (backpressure) instead of dropping
// records; a waiting writer whose context ends gives up with its error and
// its record is not written.
func TestFullQueueWaitsOP6(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	s := mustOpen(t, path)
	// Another handle holds SQLite's write lock, so the flusher cannot
	// write and the queue fills.
	blocker := mustOpen(t, path)
	conn, err := blocker.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer release()

	// The first record is taken by the flusher, which then waits for the
	// lock; the next auditqueue.Max fill the queue.
	if err := s.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), "first")); err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, 5*time.Second, "the flusher to take the first record", s.audit.Writing)
	for i := range auditqueue.Max {
		if err := s.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), fmt.Sprint("fill-", i))); err != nil {
			t.Fatal(err)
		}
	}

	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.QueueAudit(cctx, storetest.FullAuditRecord(time.Now(), "gave-up")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("QueueAudit on a full queue = %v, want it to wait until its context ends", err)
	}

	done := make(chan error, 1)
	go func() { done <- s.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), "waited")) }()
	select {
	case err := <-done:
		t.Fatalf("QueueAudit on a full queue returned %v without waiting", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(busyTimeout):
		t.Fatal("QueueAudit still waits after the queue drained")
	}
	ids := auditIDs(t, s)
	if len(ids) != auditqueue.Max+2 || ids["first"] != 1 || ids["waited"] != 1 || ids["gave-up"] != 0 {
		t.Fatalf("%d records (first %d, waited %d, gave-up %d), want %d", len(ids), ids["first"], ids["waited"], ids["gave-up"], auditqueue.Max+2)
	}
}

// OP-6: a batch is written as several multi-row inserts; every record lands
// once, whole, in the batch's order, whatever the batch's size.
func TestBatchSizesOP6(t *testing.T) {
	s := mustOpen(t, tempPath(t))
	at := time.Now().UTC()
	var want []core.AuditRecord
	for _, n := range []int{1, 2, 3, 7, 8, 45, 128, 129, 300} {
		batch := make([]core.AuditRecord, n)
		for i := range batch {
			// One time for all: only seq orders them.
			batch[i] = storetest.FullAuditRecord(at, fmt.Sprintf("b%d-%d", n, i))
			batch[i].Latency = time.Duration(n*1000 + i)
		}
		if err := s.insertAudit(batch); err != nil {
			t.Fatalf("batch of %d: %v", n, err)
		}
		want = append(want, batch...)
	}
	requireAudit(t, s, want)
}

// OP-6: a batch that fails part way commits none of its records, and
// leaves the write connection outside any transaction: the next batch and
// the other writes work, and the failed batch's records stay out. The
// inserts are INSERT OR FAIL (no statement journal): a row that fails
// leaves the statement's earlier rows in the transaction, which the writer
// then rolls back whole; RAISE(FAIL) is that case, RAISE(ABORT) the one
// where SQLite undoes the statement itself.
func TestFailedBatchRollsBackOP6(t *testing.T) {
	for _, raise := range []string{"ABORT", "FAIL"} {
		t.Run(raise, func(t *testing.T) {
			ctx := context.Background()
			path := tempPath(t)
			s := mustOpen(t, path)
			rawExec(t, path, `CREATE TRIGGER refuse BEFORE INSERT ON audit WHEN NEW.call_id = 'bad'
		BEGIN SELECT RAISE(`+raise+`, 'refused'); END`)
			batch := make([]core.AuditRecord, 200) // 128 + 64 + 8: the bad one in the second statement
			for i := range batch {
				batch[i] = storetest.FullAuditRecord(time.Now(), fmt.Sprint("failed-", i))
			}
			batch[150].CallID = "bad"
			if err := s.insertAudit(batch); err == nil || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("insertAudit of a batch with a refused record = %v, want the trigger's error", err)
			}
			if err := s.AppendAudit(ctx, storetest.FullAuditRecord(time.Now(), "after")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.UseToken(ctx, "tok", time.Now().Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			// Another handle sees only what was committed.
			o := mustOpen(t, path)
			ids := auditIDs(t, o)
			if len(ids) != 1 || ids["after"] != 1 {
				t.Fatalf("records after a failed batch: %v, want only the next one", ids)
			}
			// The chain went on from before the failed batch (OP-10).
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			rep, err := auditchain.VerifyStore(ctx, o, nil)
			if err != nil || !rep.Intact() || len(rep.Chains) != 1 {
				t.Fatalf("verify after a failed batch: %+v, %v", rep, err)
			}
		})
	}
}

// OP-6, OP-10: the writer boxes a column's value once and uses it again
// while the column repeats; every record still lands with its own values,
// whatever runs of equal, different and empty values its columns hold,
// within a batch and from one batch to the next, and the chain verifies.
// Every string field of core.AuditRecord is set, so a field added there is
// covered.
func TestRepeatedColumnValuesOP6(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, tempPath(t))
	values := []string{"", "a", "a", "b", "", "", "a", "ü-longer value", "b"}
	at := time.Now().UTC()
	var want []core.AuditRecord
	for batch, n := range []int{1, 5, 16, 9, 2, 37} {
		recs := make([]core.AuditRecord, n)
		for i := range recs {
			r := reflect.ValueOf(&recs[i]).Elem()
			for f := range r.NumField() {
				if r.Field(f).Kind() == reflect.String {
					// Each field walks values at its own pace, so runs
					// and changes fall at different records per column.
					r.Field(f).SetString(values[(len(want)+i)*(f+1)/(f%3+1)%len(values)])
				}
			}
			recs[i].CallID = fmt.Sprintf("c%d-%d", batch, i) // read back in seq order below
			recs[i].Time = at.Add(time.Duration(len(want)+i) * time.Millisecond)
			recs[i].Latency = time.Duration(i)
		}
		if err := s.insertAudit(recs); err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		want = append(want, recs...)
	}
	requireAudit(t, s, want)
	entries, err := auditchain.Entries(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if e.Chain != s.AuditChain().ID() || e.Seq != int64(i+1) {
			t.Fatalf("entry %d in chain %q at %d, want %q at %d", i, e.Chain, e.Seq, s.AuditChain().ID(), i+1)
		}
	}
	rep, err := auditchain.VerifyStore(ctx, s, nil)
	if err != nil || !rep.Intact() {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// requireAudit fails the test unless s's audit reads back as want, record
// for record in seq order.
func requireAudit(t *testing.T, s *Store, want []core.AuditRecord) {
	t.Helper()
	got, err := s.Audit(context.Background(), core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
