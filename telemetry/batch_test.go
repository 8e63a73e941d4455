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
	entered chan struct{} // closed when an export first waits on block
	once    sync.Once
}

func (e *recordingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	block := e.block
	e.mu.Unlock()
	if block != nil {
		e.once.Do(func() { close(e.entered) })
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
	exp := &recordingExporter{block: make(chan struct{}), entered: make(chan struct{})}
	var reports []error
	b := newBatcher(exp, func(err error) { reports = append(reports, err) })
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	tr := tp.Tracer("test")
	ctx := context.Background()
	// The first full batch's export hangs: the rest pile up to the bound.
	for range batchSize {
		_, s := tr.Start(ctx, "s")
		s.End()
	}
	<-exp.entered
	for range maxQueued + 10 {
		_, s := tr.Start(ctx, "s")
		s.End()
	}
	if n := b.Dropped(); n != 10 {
		t.Errorf("dropped %d spans, want the 10 over the bound", n)
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
	mark := len(exp.batches)
	exp.mu.Unlock()
	for range 3 {
		_, s := tr.Start(ctx, "s")
		s.End()
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	exp.mu.Lock()
	defer exp.mu.Unlock()
	if !exp.shut {
		t.Error("the exporter was not shut down")
	}
	if after := exp.batches[mark:]; sum(after) != 3 {
		t.Errorf("batches %v after the failure: the last 3 spans were not all exported by Shutdown", after)
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

func sum(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}
