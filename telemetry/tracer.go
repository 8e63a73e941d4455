package telemetry

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// defaultTracerName is the scope of a tracer asked for without a name, as
// the SDK names it.
const defaultTracerName = "go.opentelemetry.io/otel/sdk/tracer"

// tracerProvider records spans itself (OP-9). The SDK's spans are objects
// that live until their batch is exported: each ended span is copied into
// a snapshot with its attributes, deduplicated through a map, and a
// gateway makes two for every call, so at full load they and their
// collection were most of what tracing cost. These spans hold what they
// record until End, then are written in the OTLP wire format into the
// recorder's buffers, which hold no pointers, and their attribute arrays
// are reused. What a span does follows the SDK's span: the same sampler
// (the SDK's own), the same limits (the SDK's, from the OTEL_SPAN_*
// environment), the same treatment of repeated keys, dropped attributes,
// events and links; the tests hold the two to the same messages.
type tracerProvider struct {
	embedded.TracerProvider
	sampler sdktrace.Sampler
	limits  sdktrace.SpanLimits
	ids     sdktrace.IDGenerator
	rec     *recorder

	mu      sync.Mutex
	tracers []*tracer
}

func newTracerProvider(rec *recorder, sampler sdktrace.Sampler, limits sdktrace.SpanLimits, ids sdktrace.IDGenerator) *tracerProvider {
	if ids == nil {
		ids = randomIDs{}
	}
	return &tracerProvider{sampler: sampler, limits: limits, ids: ids, rec: rec}
}

// Tracer is the tracer of the scope name and opts describe, one per scope.
func (p *tracerProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	if name == "" {
		name = defaultTracerName
	}
	c := trace.NewTracerConfig(opts...)
	attrs := c.InstrumentationAttributes()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.tracers {
		if t.name == name && t.version == c.InstrumentationVersion() && t.schemaURL == c.SchemaURL() && t.attrs.Equals(&attrs) {
			return t
		}
	}
	t := &tracer{p: p, name: name, version: c.InstrumentationVersion(), schemaURL: c.SchemaURL(), attrs: attrs}
	t.scope = p.rec.addScope(name, t.version, t.schemaURL, attrs)
	p.tracers = append(p.tracers, t)
	return t
}

type tracer struct {
	embedded.Tracer
	p                        *tracerProvider
	name, version, schemaURL string
	attrs                    attribute.Set
	scope                    int // the recorder's index of this scope
}

// Start opens a span as the SDK's tracer does: a child of the span in ctx
// unless opts make it a new root, sampled as the provider's sampler says.
func (t *tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if ctx == nil {
		ctx = context.Background()
	}
	c := trace.NewSpanStartConfig(opts...)
	s := t.start(ctx, name, c.SpanKind(), c.NewRoot(), c.Timestamp(), c.Attributes(), c.Links())
	return trace.ContextWithSpan(ctx, s), s
}

// start is Start without the options.
func (t *tracer) start(ctx context.Context, name string, kind trace.SpanKind, newRoot bool, at time.Time, attrs []attribute.KeyValue, links []trace.Link) trace.Span {
	var psc trace.SpanContext
	if newRoot {
		ctx = trace.ContextWithSpanContext(ctx, psc)
	} else {
		psc = trace.SpanContextFromContext(ctx)
	}
	var tid trace.TraceID
	var sid trace.SpanID
	if psc.TraceID().IsValid() {
		tid = psc.TraceID()
		sid = t.p.ids.NewSpanID(ctx, tid)
	} else {
		tid, sid = t.p.ids.NewIDs(ctx)
	}
	kind = trace.ValidateSpanKind(kind)
	sr := t.p.sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: tid, Name: name, Kind: kind, Attributes: attrs, Links: links})
	flags := psc.TraceFlags() &^ trace.FlagsSampled
	if sr.Decision == sdktrace.RecordAndSample {
		flags |= trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, TraceState: sr.Tracestate})
	if sr.Decision == sdktrace.Drop {
		return &nonRecording{sc: sc, p: t.p}
	}
	if at.IsZero() {
		at = time.Now()
	}
	s := &span{tracer: t, buf: takeAttrs(), d: spanData{sc: sc, parent: psc, name: name, kind: kind, start: at}}
	s.d.attrs = s.buf.kvs
	for _, l := range links {
		s.addLink(l)
	}
	s.setAttributes(sr.Attributes)
	s.setAttributes(attrs)
	return s
}

// StartKind opens a span of kind with attrs through tr, as tr.Start with
// those options would, and as a child of the span in ctx; with toolgate's
// tracer it makes no options and keeps attrs off the heap: a gateway
// opens two spans a call. Its sampler never reads attributes, so they are
// set after it has decided.
func StartKind(ctx context.Context, tr trace.Tracer, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	t, ok := tr.(*tracer)
	if !ok {
		return tr.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(slices.Clone(attrs)...))
	}
	s := t.start(ctx, name, kind, false, time.Time{}, nil, nil)
	if s.IsRecording() {
		setAttributes(s, attrs)
	}
	return trace.ContextWithSpan(ctx, s), s
}

// setAttributes sets attrs on s; on toolgate's span without letting
// attrs escape (an interface's variadic call makes its caller's slice).
func setAttributes(s trace.Span, attrs []attribute.KeyValue) {
	if sp, ok := s.(*span); ok {
		sp.mu.Lock()
		if !sp.ended.Load() {
			sp.setAttributes(attrs)
		}
		sp.mu.Unlock()
		return
	}
	s.SetAttributes(slices.Clone(attrs)...)
}

// spanData is what a span records, and what the encoder writes.
type spanData struct {
	sc, parent    trace.SpanContext
	name          string
	kind          trace.SpanKind
	start, end    time.Time
	attrs         []attribute.KeyValue
	droppedAttrs  int
	events        []sdktrace.Event
	droppedEvents int
	links         []sdktrace.Link
	droppedLinks  int
	status        sdktrace.Status
}

// span is a recording span. After End every method but SpanContext does
// nothing, so that its attribute array can serve the next span.
type span struct {
	embedded.Span
	tracer *tracer
	ended  atomic.Bool
	mu     sync.Mutex
	buf    *attrBuf // d.attrs's, back to the pool at End
	d      spanData
}

var _ trace.Span = (*span)(nil)

func (s *span) SpanContext() trace.SpanContext { return s.d.sc }

func (s *span) IsRecording() bool { return !s.ended.Load() }

func (s *span) TracerProvider() trace.TracerProvider { return s.tracer.p }

// End records the span (when it is sampled) with the end time opts give,
// else now on the clock the start was read from.
func (s *span) End(opts ...trace.SpanEndOption) {
	var end time.Time
	if len(opts) > 0 {
		c := trace.NewSpanEndConfig(opts...)
		end = c.Timestamp()
	}
	if end.IsZero() {
		end = s.d.start.Add(time.Since(s.d.start))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended.Swap(true) {
		return
	}
	s.d.end = end
	if s.d.sc.IsSampled() {
		s.tracer.p.rec.record(s.tracer.scope, &s.d)
	}
	s.buf.put(s.d.attrs)
	s.buf, s.d.attrs, s.d.events, s.d.links = nil, nil, nil, nil
}

// SetStatus sets the status as the SDK's span does: Ok is final, Error
// keeps its description, Unset changes nothing set before.
func (s *span) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended.Load() || s.d.status.Code > code {
		return
	}
	st := sdktrace.Status{Code: code}
	if code == codes.Error {
		st.Description = description
	}
	s.d.status = st
}

func (s *span) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended.Load() {
		s.d.name = name
	}
}

func (s *span) SetAttributes(kvs ...attribute.KeyValue) {
	if len(kvs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended.Load() {
		s.setAttributes(kvs)
	}
}

// setAttributes adds kvs: a key set before takes the new value in its
// place; an invalid attribute, or a new key past the count limit, is
// counted as dropped; values are cut to the length limit.
func (s *span) setAttributes(kvs []attribute.KeyValue) {
	limits := &s.tracer.p.limits
	for _, a := range kvs {
		if !a.Valid() {
			s.d.droppedAttrs++
			continue
		}
		a = truncateAttr(limits.AttributeValueLengthLimit, a)
		if i := indexOfKey(s.d.attrs, a.Key); i >= 0 {
			s.d.attrs[i] = a
			continue
		}
		if limits.AttributeCountLimit >= 0 && len(s.d.attrs) >= limits.AttributeCountLimit {
			s.d.droppedAttrs++
			continue
		}
		s.d.attrs = append(s.d.attrs, a)
	}
}

func indexOfKey(kvs []attribute.KeyValue, k attribute.Key) int {
	for i := range kvs {
		if kvs[i].Key == k {
			return i
		}
	}
	return -1
}

// AddEvent adds an event; past the event limit the oldest is dropped.
func (s *span) AddEvent(name string, opts ...trace.EventOption) {
	c := trace.NewEventConfig(opts...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended.Load() {
		s.addEvent(name, c)
	}
}

func (s *span) addEvent(name string, c trace.EventConfig) {
	limits := &s.tracer.p.limits
	e := sdktrace.Event{Name: name, Attributes: c.Attributes(), Time: c.Timestamp()}
	if n := limits.AttributePerEventCountLimit; n >= 0 && len(e.Attributes) > n {
		e.DroppedAttributeCount = len(e.Attributes) - n
		e.Attributes = e.Attributes[:n]
	}
	s.d.events, s.d.droppedEvents = addEvicting(s.d.events, e, limits.EventCountLimit, s.d.droppedEvents)
}

// RecordError records err as an exception event with its type only: an
// error's text may quote what a caller sent, and spans never carry that.
func (s *span) RecordError(err error, opts ...trace.EventOption) {
	if err == nil || !s.IsRecording() {
		return
	}
	opts = append(opts, trace.WithAttributes(semconv.ExceptionType(typeName(err))))
	s.AddEvent(semconv.ExceptionEventName, opts...)
}

func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// AddLink adds a link; past the link limit the oldest is dropped.
func (s *span) AddLink(l trace.Link) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended.Load() {
		s.addLink(l)
	}
}

func (s *span) addLink(l trace.Link) {
	if !l.SpanContext.IsValid() && len(l.Attributes) == 0 && l.SpanContext.TraceState().Len() == 0 {
		return
	}
	limits := &s.tracer.p.limits
	link := sdktrace.Link{SpanContext: l.SpanContext, Attributes: l.Attributes}
	if n := limits.AttributePerLinkCountLimit; n >= 0 && len(link.Attributes) > n {
		link.DroppedAttributeCount = len(link.Attributes) - n
		link.Attributes = link.Attributes[:n]
	}
	s.d.links, s.d.droppedLinks = addEvicting(s.d.links, link, limits.LinkCountLimit, s.d.droppedLinks)
}

// addEvicting appends v to q, dropping the oldest past limit (none kept
// at 0, no limit below 0), and counts what it dropped.
func addEvicting[T any](q []T, v T, limit, dropped int) ([]T, int) {
	switch {
	case limit == 0:
		return q, dropped + 1
	case limit > 0 && len(q) >= limit:
		copy(q, q[1:])
		q[len(q)-1] = v
		return q, dropped + 1
	}
	return append(q, v), dropped
}

// truncateAttr cuts a string value, or each of a string slice's, to
// limit characters, leaving out invalid UTF-8 bytes; no limit below 0.
func truncateAttr(limit int, a attribute.KeyValue) attribute.KeyValue {
	if limit < 0 {
		return a
	}
	switch a.Value.Type() {
	case attribute.STRING:
		if s := a.Value.AsString(); len(s) > limit {
			a.Value = attribute.StringValue(truncate(limit, s))
		}
	case attribute.STRINGSLICE:
		ss := a.Value.AsStringSlice()
		changed := false
		for i, s := range ss {
			if len(s) > limit {
				ss[i], changed = truncate(limit, s), true
			}
		}
		if changed {
			a.Value = attribute.StringSliceValue(ss)
		}
	}
	return a
}

func truncate(limit int, s string) string {
	if len(s) <= limit {
		return s
	}
	if utf8.ValidString(s) {
		n := 0
		for i := range s {
			if n == limit {
				return s[:i]
			}
			n++
		}
		return s
	}
	b := make([]byte, 0, len(s))
	for i, n := 0, 0; i < len(s) && n < limit; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size > 1 {
			b = append(b, s[i:i+size]...)
			n++
		}
		i += size
	}
	return string(b)
}

// attrBufs are spans' attribute arrays, reused: a span is done with its
// array once End has encoded it.
var attrBufs = sync.Pool{New: func() any { return &attrBuf{kvs: make([]attribute.KeyValue, 0, attrBufCap)} }}

// attrBufCap is an attribute array's first capacity: a request span's
// whole set fits.
const attrBufCap = 16

type attrBuf struct{ kvs []attribute.KeyValue }

func takeAttrs() *attrBuf { return attrBufs.Get().(*attrBuf) }

func (b *attrBuf) put(kvs []attribute.KeyValue) {
	if cap(kvs) > 8*attrBufCap {
		return // a rare large set is not kept
	}
	clear(kvs) // the pool keeps no value alive
	b.kvs = kvs[:0]
	attrBufs.Put(b)
}

// nonRecording is a span the sampler dropped: it carries its context on,
// unsampled, and records nothing.
type nonRecording struct {
	embedded.Span
	sc trace.SpanContext
	p  *tracerProvider
}

func (n *nonRecording) SpanContext() trace.SpanContext          { return n.sc }
func (n *nonRecording) IsRecording() bool                       { return false }
func (n *nonRecording) End(...trace.SpanEndOption)              {}
func (n *nonRecording) SetStatus(codes.Code, string)            {}
func (n *nonRecording) SetName(string)                          {}
func (n *nonRecording) SetAttributes(...attribute.KeyValue)     {}
func (n *nonRecording) AddEvent(string, ...trace.EventOption)   {}
func (n *nonRecording) AddLink(trace.Link)                      {}
func (n *nonRecording) RecordError(error, ...trace.EventOption) {}
func (n *nonRecording) TracerProvider() trace.TracerProvider    { return n.p }

// randomIDs makes trace and span ids from the runtime's random source,
// which is seeded from the system's and safe to share.
type randomIDs struct{}

func (randomIDs) NewIDs(context.Context) (tid trace.TraceID, sid trace.SpanID) {
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomSpanID()
}

func (randomIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return randomSpanID() }

func randomSpanID() (sid trace.SpanID) {
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
