package telemetry

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The recorder's bounds: spans per export, spans held at most (more are
// dropped, never waited for), the longest a span waits to be exported,
// and the longest one export may take.
const (
	batchSize     = 512
	maxQueued     = 8192
	batchInterval = 2 * time.Second
	exportTimeout = 10 * time.Second
)

// recorder holds ended spans in the OTLP wire format until they are
// exported (OP-9), in batches of batchSize, through the OTLP/HTTP or gRPC
// client of the OpenTelemetry module, which keeps their configuration
// (the OTEL_EXPORTER_OTLP_* environment, headers, TLS, retries). A span
// is encoded when it ends, so what waits for an export is bytes, which the
// collector never scans. The client is handed one ResourceSpans message
// per export whose raw (unknown) fields are the encoding: the protobuf
// library marshals unknown fields as they are, so what goes on the wire is
// an ordinary export. The exporter goroutine wakes once per batch, not per
// span.
type recorder struct {
	client  otlptrace.Client
	onError func(error) // nil-safe: called with nil once exports succeed again
	// resource is the ResourceSpans fields before its ScopeSpans (the
	// resource), resourceTail those after (its schema URL); made once.
	resource, resourceTail []byte

	mu      sync.Mutex
	scopes  []scopeFields // by tracer
	cur     *batch
	full    []*batch
	free    []*batch
	held    int // spans in cur and full
	dropped int

	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	stopped atomic.Bool

	exporting sync.Mutex // one export at a time; guards the rest
	failing   bool
	body      []byte
	msg       tracepb.ResourceSpans
}

// scopeFields are a ScopeSpans's fields before its spans (the scope) and
// after them (its schema URL).
type scopeFields struct{ head, tail []byte }

// batch is up to batchSize spans, each scope's as the ScopeSpans spans
// fields they are written as.
type batch struct {
	spans [][]byte // by scope
	n     int
}

func newRecorder(client otlptrace.Client, res *resource.Resource, onError func(error)) *recorder {
	r := &recorder{client: client, onError: onError, cur: &batch{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	var e encoder
	var fields []byte
	if res != nil {
		for _, a := range res.Attributes() {
			fields = e.appendKeyValue(fields, fResourceAttributes, a)
		}
		r.resourceTail = appendString(nil, fResourceSpansSchemaURL, res.SchemaURL())
	}
	r.resource = appendMessage(nil, fResourceSpansResource, fields)
	go r.run()
	return r
}

// addScope encodes a tracer's scope and returns its index.
func (r *recorder) addScope(name, version, schemaURL string, attrs attribute.Set) int {
	var sf scopeFields
	if name != "" || version != "" || schemaURL != "" || attrs.Len() > 0 {
		var e encoder
		var sc []byte
		sc = appendString(sc, fScopeName, name)
		sc = appendString(sc, fScopeVersion, version)
		for _, a := range attrs.ToSlice() {
			sc = e.appendKeyValue(sc, fScopeAttributes, a)
		}
		sf.head = appendMessage(nil, fScopeSpansScope, sc)
	}
	sf.tail = appendString(nil, fScopeSpansSchemaURL, schemaURL)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scopes = append(r.scopes, sf)
	return len(r.scopes) - 1
}

// encoders are the scratch buffers spans are encoded in before they are
// copied into a batch, outside the recorder's lock.
var encoders = sync.Pool{New: func() any { return new(encoder) }}

// record adds d, an ended span of scope, to the batch; dropped when
// maxQueued spans wait already, or after Shutdown.
func (r *recorder) record(scope int, d *spanData) {
	if r.stopped.Load() {
		return
	}
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.span = e.appendSpan(e.span[:0], d)
	r.mu.Lock()
	if r.held >= maxQueued {
		r.dropped++
		r.mu.Unlock()
		return
	}
	b := r.cur
	for len(b.spans) <= scope {
		b.spans = append(b.spans, nil)
	}
	b.spans[scope] = appendMessage(b.spans[scope], fScopeSpansSpans, e.span)
	b.n++
	r.held++
	full := b.n == batchSize
	if full {
		r.full = append(r.full, b)
		r.cur = r.newBatch()
	}
	r.mu.Unlock()
	if full {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// newBatch is an empty batch, reusing an exported one's buffers. r.mu is
// held.
func (r *recorder) newBatch() *batch {
	if n := len(r.free); n > 0 {
		b := r.free[n-1]
		r.free = r.free[:n-1]
		return b
	}
	return &batch{}
}

// run exports what has gathered every batchInterval, or as soon as a batch
// is full, until Shutdown.
func (r *recorder) run() {
	defer close(r.done)
	t := time.NewTicker(batchInterval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		case <-r.kick:
		}
		_ = r.flush(context.Background())
	}
}

// flush exports every span held, a batch at a time, within ctx. After a
// failed export the rest of what was held is lost, as the SDK's would be.
func (r *recorder) flush(ctx context.Context) error {
	r.exporting.Lock()
	defer r.exporting.Unlock()
	r.mu.Lock()
	batches := r.full
	r.full = nil
	if r.cur.n > 0 {
		batches = append(batches, r.cur)
		r.cur = r.newBatch()
	}
	r.held = 0
	scopes := r.scopes
	r.mu.Unlock()
	var err error
	for _, b := range batches {
		if err == nil {
			err = r.export(ctx, scopes, b)
			r.report(err)
		}
		for i := range b.spans {
			b.spans[i] = b.spans[i][:0]
		}
		b.n = 0
	}
	r.mu.Lock()
	r.free = append(r.free, batches...)
	r.mu.Unlock()
	return err
}

// export sends one batch. The client has marshalled it by the time
// UploadTraces returns, so its buffers are free again then.
func (r *recorder) export(ctx context.Context, scopes []scopeFields, b *batch) error {
	body := append(r.body[:0], r.resource...)
	for i, spans := range b.spans {
		if len(spans) == 0 {
			continue
		}
		sf := scopes[i]
		body = protowire.AppendTag(body, fResourceSpansScopeSpans, protowire.BytesType)
		body = protowire.AppendVarint(body, uint64(len(sf.head)+len(spans)+len(sf.tail)))
		body = append(body, sf.head...)
		body = append(body, spans...)
		body = append(body, sf.tail...)
	}
	body = append(body, r.resourceTail...)
	r.body = body
	r.msg.ProtoReflect().SetUnknown(protoreflect.RawFields(body))
	ectx, cancel := context.WithTimeout(ctx, exportTimeout)
	defer cancel()
	if err := r.client.UploadTraces(ectx, []*tracepb.ResourceSpans{&r.msg}); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// report tells onError when exports start failing and when they work
// again, not at every failure.
func (r *recorder) report(err error) {
	if (err != nil) == r.failing {
		return
	}
	r.failing = err != nil
	if r.onError != nil {
		r.onError(err)
	}
}

// shutdown stops the recorder, exports what it holds and stops the client,
// all within ctx. Spans that end after it are dropped.
func (r *recorder) shutdown(ctx context.Context) error {
	if r.stopped.Swap(true) {
		return nil
	}
	close(r.stop)
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := r.flush(ctx)
	if serr := r.client.Stop(ctx); err == nil {
		err = serr
	}
	return err
}

// Dropped is how many spans were dropped because too many waited.
func (r *recorder) Dropped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}
