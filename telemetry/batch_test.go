package telemetry

import (
	"context"
	"errors"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// recordingExporter keeps what it is given; it fails while fail is set.
type recordingExporter struct {
	mu      sync.Mutex
	batches []int
	fail    bool
	shut    bool
	block   chan struct{} // while open, exports wait
}

func (e *recordingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	block := e.block
	e.mu.Unlock()
	if block != nil {
		<-block
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail {
		return errors.New("collector unavailable")
	}
	e.batches = append(e.batches, len(spans))
	return nil
}

func (e *recordingExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shut = true
	return nil
}

// OP-9: the batcher exports in batches of at most batchSize, flushes what
// it holds at Shutdown and shuts the exporter down, drops what is over its
// bound instead of waiting, and tells of a failing collector once, and
// again once it answers.
func TestBatcher(t *testing.T) {
	exp := &recordingExporter{block: make(chan struct{})}
	var reports []error
	b := newBatcher(exp, func(err error) { reports = append(reports, err) })
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	tr := tp.Tracer("test")
	ctx := context.Background()
	// The first full batch's export hangs: the rest pile up to the bound.
	for range batchSize + maxQueued + 10 {
		_, s := tr.Start(ctx, "s")
		s.End()
	}
	exp.mu.Lock()
	close(exp.block)
	exp.block = nil
	exp.fail = true
	exp.mu.Unlock()
	_, s := tr.Start(ctx, "s")
	s.End()
	_ = b.ForceFlush(ctx)
	exp.mu.Lock()
	exp.fail = false
	exp.mu.Unlock()
	for range 3 {
		_, s := tr.Start(ctx, "s")
		s.End()
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Dropped() < 10 {
		t.Errorf("dropped %d spans, want at least the 10 over the bound", b.Dropped())
	}
	exp.mu.Lock()
	defer exp.mu.Unlock()
	if !exp.shut {
		t.Error("the exporter was not shut down")
	}
	if n := len(exp.batches); n == 0 || exp.batches[n-1] != 3 {
		t.Errorf("batches %v: the last 3 spans were not flushed at Shutdown", exp.batches)
	}
	for _, n := range exp.batches {
		if n > batchSize {
			t.Errorf("a batch of %d spans, over %d", n, batchSize)
		}
	}
	if len(reports) != 2 || reports[0] == nil || reports[1] != nil {
		t.Errorf("reports %v, want the failure then nil", reports)
	}
	// After Shutdown nothing is taken.
	_, s = tr.Start(ctx, "late")
	s.End()
	if err := b.Shutdown(ctx); err != nil {
		t.Errorf("a second Shutdown: %v", err)
	}
}
