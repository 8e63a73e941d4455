package auditqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/core"
)

// TestMain fails the run if any goroutine outlives the package's tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// OP-6: queued records whose write failed are reported to the next
// QueueAudit (wrapping core.ErrAuditLost, with the count); a caller that
// waited for its record gets the error itself and is not counted again.
func TestLostQueuedRecordsAreReportedOP6(t *testing.T) {
	q := New()
	fail := errors.New("disk full")
	var mu sync.Mutex
	failing := true
	var written []string
	go q.Run(func(recs []core.AuditRecord) error {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return fail
		}
		for _, r := range recs {
			written = append(written, r.CallID)
		}
		return nil
	})
	ctx := context.Background()
	rec := func(id string) core.AuditRecord { return core.AuditRecord{Time: time.Now(), CallID: id} }

	b, _, err := q.Put(ctx, rec("waited"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); !errors.Is(err, fail) {
		t.Fatalf("waiting caller got %v, want the write error", err)
	}
	for _, id := range []string{"q1", "q2"} {
		if _, lost, err := q.Put(ctx, rec(id), false); err != nil || lost != nil {
			t.Fatalf("put %s: %v, %v", id, lost, err)
		}
	}
	q.Flush()
	mu.Lock()
	failing = false
	mu.Unlock()
	_, lost, err := q.Put(ctx, rec("q3"), false)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(lost, core.ErrAuditLost) || !errors.Is(lost, fail) {
		t.Fatalf("next put reports %v, want ErrAuditLost wrapping the write error", lost)
	}
	if want := "2 record(s)"; !strings.Contains(lost.Error(), want) {
		t.Errorf("report %q does not count %s", lost, want)
	}
	if _, lost, _ := q.Put(ctx, rec("q4"), false); lost != nil {
		t.Errorf("a loss was reported twice: %v", lost)
	}
	q.Close()
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(written) != "[q3 q4]" {
		t.Errorf("written after the failure: %v, want [q3 q4]", written)
	}
}

// OP-7: the queue depth counts the records the flusher has not taken yet,
// and is 0 again once they are written.
func TestAuditQueueDepthOP7(t *testing.T) {
	q := New()
	ctx := context.Background()
	if d := q.Depth(); d != 0 {
		t.Fatalf("empty queue: depth %d", d)
	}
	for i := range 3 {
		if _, _, err := q.Put(ctx, core.AuditRecord{Time: time.Now(), CallID: fmt.Sprint(i)}, false); err != nil {
			t.Fatal(err)
		}
	}
	// No flusher runs yet: all three wait.
	if d := q.Depth(); d != 3 {
		t.Fatalf("depth %d with three records queued, want 3", d)
	}
	go q.Run(func([]core.AuditRecord) error { return nil })
	q.Flush()
	if d := q.Depth(); d != 0 {
		t.Errorf("depth %d after the flush, want 0", d)
	}
	q.Close()
}
