package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The batcher's bounds: spans per export, spans held at most (more are
// dropped, never waited for), the longest a span waits to be exported,
// and the longest one export may take.
const (
	batchSize     = 512
	maxQueued     = 8192
	batchInterval = 2 * time.Second
	exportTimeout = 10 * time.Second
)

// batcher is a span processor that exports in batches, as the SDK's
// BatchSpanProcessor does, but wakes its exporter once per batch rather
// than once per span: the SDK's hands every ended span to its goroutine
// through a channel, a wake-up per span that on a busy machine cost more
// than the spans themselves (a tools/call had seven when it was written).
type batcher struct {
	exp     sdktrace.SpanExporter
	onError func(error) // nil-safe: called with nil once exports succeed again

	mu      sync.Mutex
	buf     []sdktrace.ReadOnlySpan
	dropped int

	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	stopped atomic.Bool

	exporting sync.Mutex // one export at a time; guards failing
	failing   bool
}

func newBatcher(exp sdktrace.SpanExporter, onError func(error)) *batcher {
	b := &batcher{exp: exp, onError: onError, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if b.stopped.Load() || !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if len(b.buf) >= maxQueued {
		b.dropped++
		b.mu.Unlock()
		return
	}
	b.buf = append(b.buf, s)
	full := len(b.buf) == batchSize
	b.mu.Unlock()
	if full {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

// run exports what has gathered every batchInterval, or as soon as a batch
// is full, until Shutdown.
func (b *batcher) run() {
	defer close(b.done)
	t := time.NewTicker(batchInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.kick:
		}
		_ = b.flush(context.Background())
	}
}

// flush exports every span held, in batches, within ctx.
func (b *batcher) flush(ctx context.Context) error {
	b.exporting.Lock()
	defer b.exporting.Unlock()
	b.mu.Lock()
	spans := b.buf
	b.buf = make([]sdktrace.ReadOnlySpan, 0, min(len(spans), maxQueued))
	b.mu.Unlock()
	for i := 0; i < len(spans); i += batchSize {
		ectx, cancel := context.WithTimeout(ctx, exportTimeout)
		err := b.exp.ExportSpans(ectx, spans[i:min(i+batchSize, len(spans))])
		cancel()
		b.report(err)
		if err != nil {
			return err // the rest of this batch is lost, as the SDK's would be
		}
	}
	return nil
}

// report tells onError when exports start failing and when they work
// again, not at every failure.
func (b *batcher) report(err error) {
	if (err != nil) == b.failing {
		return
	}
	b.failing = err != nil
	if b.onError != nil {
		b.onError(err)
	}
}

func (b *batcher) ForceFlush(ctx context.Context) error { return b.flush(ctx) }

// Shutdown stops the batcher, exports what it holds and shuts the exporter
// down, all within ctx.
func (b *batcher) Shutdown(ctx context.Context) error {
	if b.stopped.Swap(true) {
		return nil
	}
	close(b.stop)
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := b.flush(ctx)
	if serr := b.exp.Shutdown(ctx); err == nil {
		err = serr
	}
	return err
}

// Dropped is how many spans were dropped because too many waited.
func (b *batcher) Dropped() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}
