package telemetry

import (
	"context"
	"errors"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// testClient is an OTLP client that marshals each export as a real one
// does and keeps what it decodes; it fails while fail is set.
type testClient struct {
	mu      sync.Mutex
	sent    []*coltracepb.ExportTraceServiceRequest
	fail    bool
	stopped bool
	block   chan struct{} // while open, exports wait
	entered chan struct{} // closed when an export first waits on block
	once    sync.Once
}

func (c *testClient) Start(context.Context) error { return nil }

func (c *testClient) Stop(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	return nil
}

func (c *testClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	wire, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rs})
	if err != nil {
		return err
	}
	c.mu.Lock()
	block := c.block
	c.mu.Unlock()
	if block != nil {
		c.once.Do(func() { close(c.entered) })
		<-block
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		return errors.New("collector unavailable")
	}
	var got coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(wire, &got); err != nil {
		return err
	}
	c.sent = append(c.sent, &got)
	return nil
}

// batches is the span count of each export received.
func (c *testClient) batches() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n []int
	for _, req := range c.sent {
		k := 0
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				k += len(ss.Spans)
			}
		}
		n = append(n, k)
	}
	return n
}

// OP-9: the recorder exports in batches of at most batchSize, flushes what
// it holds at shutdown and stops the client, drops what is over its bound
// instead of waiting, and tells of a failing collector once, and again
// once it answers.
func TestRecorderBatches(t *testing.T) {
	client := &testClient{block: make(chan struct{}), entered: make(chan struct{})}
	var reports []error
	rec := newRecorder(client, nil, func(err error) { reports = append(reports, err) })
	tp := newTracerProvider(rec, sdktrace.AlwaysSample(), sdktrace.NewSpanLimits(), nil)
	tr := tp.Tracer("test")
	ctx := context.Background()
	// The first full batch's export hangs: the rest pile up to the bound.
	for range batchSize {
		_, s := tr.Start(ctx, "s")
		s.End()
	}
	<-client.entered
	for range maxQueued + 10 {
		_, s := tr.Start(ctx, "s")
		s.End()
	}
	if n := rec.Dropped(); n != 10 {
		t.Errorf("dropped %d spans, want the 10 over the bound", n)
	}
	client.mu.Lock()
	close(client.block)
	client.block = nil
	client.fail = true
	client.mu.Unlock()
	_, s := tr.Start(ctx, "s")
	s.End()
	_ = rec.flush(ctx)
	client.mu.Lock()
	client.fail = false
	mark := len(client.sent)
	client.mu.Unlock()
	for range 3 {
		_, s := tr.Start(ctx, "s")
		s.End()
	}
	if err := rec.shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !client.stopped {
		t.Error("the client was not stopped")
	}
	batches := client.batches()
	if after := batches[mark:]; sum(after) != 3 {
		t.Errorf("batches %v after the failure: the last 3 spans were not all exported at shutdown", after)
	}
	for _, n := range batches {
		if n > batchSize {
			t.Errorf("a batch of %d spans, over %d", n, batchSize)
		}
	}
	if len(reports) != 2 || reports[0] == nil || reports[1] != nil {
		t.Errorf("reports %v, want the failure then nil", reports)
	}
	// After shutdown nothing is taken.
	_, s = tr.Start(ctx, "late")
	s.End()
	if err := rec.shutdown(ctx); err != nil {
		t.Errorf("a second shutdown: %v", err)
	}
	if n := sum(client.batches()); n != sum(batches) {
		t.Errorf("%d spans exported after shutdown", n-sum(batches))
	}
}

func sum(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}
