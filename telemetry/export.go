package telemetry

import (
	"context"
	"fmt"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// exporter is the OTLP exporter (OP-9) over the OTLP/HTTP or gRPC client
// of the OpenTelemetry module, which keeps their configuration (the
// OTEL_EXPORTER_OTLP_* environment, headers, TLS, retries). What it does
// differently is turn spans into OTLP: the module's exporter makes new
// messages for every span and three allocations for every attribute, and
// the protobuf library then marshals them field by field; this one writes
// the wire format itself into buffers it keeps from export to export (see
// wire). Exports run one at a time (the batcher's), and the client has
// encoded a batch by the time UploadTraces returns, so the buffers are
// free again then.
type exporter struct {
	client otlptrace.Client
	wire   wire
}

var _ sdktrace.SpanExporter = (*exporter)(nil)

func newOTLPExporter(ctx context.Context, client otlptrace.Client) (*exporter, error) {
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	return &exporter{client: client}, nil
}

func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	rs := e.wire.encode(spans)
	if len(rs) == 0 {
		return nil
	}
	if err := e.client.UploadTraces(ctx, rs); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

func (e *exporter) Shutdown(ctx context.Context) error { return e.client.Stop(ctx) }

// wire is the OTLP encoding of one export, kept for the next (OP-9). The
// spans are written in the protobuf wire format straight from the SDK's
// ended spans; the client sends each resource's encoding as the raw fields
// of a ResourceSpans message it marshals (unknown fields are marshalled as
// they are). Building the messages and having the protobuf library marshal
// them was most of a traced call's export cost, and the messages, kept
// from export to export, were a pointer-laden heap the collector scanned
// on every cycle; these buffers hold no pointers.
type wire struct {
	span   []byte // one span's fields, while they are written
	nested []byte // an event's, a link's or the status's fields
	value  []byte // an attribute value's fields
	groups []*wireGroup
	out    []*tracepb.ResourceSpans
}

// wireGroup is the spans of one resource and scope: a gateway's come from
// one provider and one scope.
type wireGroup struct {
	resKey                attribute.Distinct
	name, version, schema string
	// head is the ResourceSpans fields before its ScopeSpans: the resource.
	// scope is the ScopeSpans fields before its spans: the scope. tail is
	// what follows the spans: the ScopeSpans's schema URL. Made once.
	head, scope, scopeTail, tail []byte
	spans                        []byte // this export's, each a ScopeSpans field
	body                         []byte // the ResourceSpans fields
	msg                          tracepb.ResourceSpans
	used                         bool
}

// The field numbers of the OTLP trace messages (opentelemetry/proto/trace/v1,
// common/v1, resource/v1) the encoder writes.
const (
	fResourceSpansResource   protowire.Number = 1
	fResourceSpansScopeSpans protowire.Number = 2
	fResourceSpansSchemaURL  protowire.Number = 3
	fScopeSpansScope         protowire.Number = 1
	fScopeSpansSpans         protowire.Number = 2
	fScopeSpansSchemaURL     protowire.Number = 3
	fScopeName               protowire.Number = 1
	fScopeVersion            protowire.Number = 2
	fScopeAttributes         protowire.Number = 3
	fResourceAttributes      protowire.Number = 1

	fSpanTraceID            protowire.Number = 1
	fSpanSpanID             protowire.Number = 2
	fSpanTraceState         protowire.Number = 3
	fSpanParentSpanID       protowire.Number = 4
	fSpanName               protowire.Number = 5
	fSpanKind               protowire.Number = 6
	fSpanStart              protowire.Number = 7
	fSpanEnd                protowire.Number = 8
	fSpanAttributes         protowire.Number = 9
	fSpanDroppedAttributes  protowire.Number = 10
	fSpanEvents             protowire.Number = 11
	fSpanDroppedEvents      protowire.Number = 12
	fSpanLinks              protowire.Number = 13
	fSpanDroppedLinks       protowire.Number = 14
	fSpanStatus             protowire.Number = 15
	fSpanFlags              protowire.Number = 16
	fEventTime              protowire.Number = 1
	fEventName              protowire.Number = 2
	fEventAttributes        protowire.Number = 3
	fEventDroppedAttributes protowire.Number = 4
	fLinkTraceID            protowire.Number = 1
	fLinkSpanID             protowire.Number = 2
	fLinkTraceState         protowire.Number = 3
	fLinkAttributes         protowire.Number = 4
	fLinkDroppedAttributes  protowire.Number = 5
	fLinkFlags              protowire.Number = 6
	fStatusMessage          protowire.Number = 2
	fStatusCode             protowire.Number = 3
	fKeyValueKey            protowire.Number = 1
	fKeyValueValue          protowire.Number = 2
	fAnyString              protowire.Number = 1
	fAnyBool                protowire.Number = 2
	fAnyInt                 protowire.Number = 3
	fAnyDouble              protowire.Number = 4
	fAnyArray               protowire.Number = 5
	fArrayValues            protowire.Number = 1
)

// encode writes spans' OTLP encoding, reusing the last export's buffers,
// and returns one message per resource and scope carrying it. Fields
// holding their zero value are left out, as the protobuf library leaves
// them out, except where it writes them too: a span's status, and an
// attribute's value of any type.
func (w *wire) encode(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	for _, g := range w.groups {
		g.used = false
		g.spans = g.spans[:0]
	}
	seen := false
	for _, sd := range spans {
		if sd == nil {
			continue
		}
		seen = true
		g := w.group(sd)
		w.span = w.appendSpan(w.span[:0], sd)
		g.spans = appendMessage(g.spans, fScopeSpansSpans, w.span)
	}
	if !seen {
		return nil
	}
	w.out = w.out[:0]
	for _, g := range w.groups {
		if !g.used {
			continue
		}
		b := append(g.body[:0], g.head...)
		b = protowire.AppendTag(b, fResourceSpansScopeSpans, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(g.scope)+len(g.spans)+len(g.scopeTail)))
		b = append(b, g.scope...)
		b = append(b, g.spans...)
		b = append(b, g.scopeTail...)
		b = append(b, g.tail...)
		g.body = b
		g.msg.ProtoReflect().SetUnknown(protoreflect.RawFields(b))
		w.out = append(w.out, &g.msg)
	}
	return w.out
}

// group is the resource and scope sd belongs to, made on first sight.
func (w *wire) group(sd sdktrace.ReadOnlySpan) *wireGroup {
	res, scope := sd.Resource(), sd.InstrumentationScope()
	key := res.Equivalent()
	for _, g := range w.groups {
		if g.resKey == key && g.name == scope.Name && g.version == scope.Version && g.schema == scope.SchemaURL {
			g.used = true
			return g
		}
	}
	g := &wireGroup{resKey: key, name: scope.Name, version: scope.Version, schema: scope.SchemaURL, used: true}
	var r []byte
	for _, a := range res.Attributes() {
		r = w.appendKeyValue(r, fResourceAttributes, a)
	}
	g.head = appendMessage(nil, fResourceSpansResource, r)
	if scope.Name != "" || scope.Version != "" || scope.SchemaURL != "" || scope.Attributes.Len() > 0 {
		var sc []byte
		sc = appendString(sc, fScopeName, scope.Name)
		sc = appendString(sc, fScopeVersion, scope.Version)
		for _, a := range scope.Attributes.ToSlice() {
			sc = w.appendKeyValue(sc, fScopeAttributes, a)
		}
		g.scope = appendMessage(nil, fScopeSpansScope, sc)
	}
	g.scopeTail = appendString(nil, fScopeSpansSchemaURL, scope.SchemaURL)
	g.tail = appendString(nil, fResourceSpansSchemaURL, res.SchemaURL())
	w.groups = append(w.groups, g)
	return g
}

// appendSpan appends sd's Span fields to b.
func (w *wire) appendSpan(b []byte, sd sdktrace.ReadOnlySpan) []byte {
	sc := sd.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, fSpanTraceID, tid[:])
	b = appendBytes(b, fSpanSpanID, sid[:])
	if ts := sc.TraceState(); ts.Len() > 0 {
		b = appendString(b, fSpanTraceState, ts.String())
	}
	parent := sd.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytes(b, fSpanParentSpanID, psid[:])
	}
	b = appendString(b, fSpanName, sd.Name())
	b = appendVarint(b, fSpanKind, uint64(spanKind(sd.SpanKind())))
	b = appendFixed64(b, fSpanStart, uint64(max(0, sd.StartTime().UnixNano())))
	b = appendFixed64(b, fSpanEnd, uint64(max(0, sd.EndTime().UnixNano())))
	for _, a := range sd.Attributes() {
		b = w.appendKeyValue(b, fSpanAttributes, a)
	}
	b = appendVarint(b, fSpanDroppedAttributes, uint64(clamp(sd.DroppedAttributes())))
	for _, e := range sd.Events() {
		n := appendFixed64(w.nested[:0], fEventTime, uint64(max(0, e.Time.UnixNano())))
		n = appendString(n, fEventName, e.Name)
		for _, a := range e.Attributes {
			n = w.appendKeyValue(n, fEventAttributes, a)
		}
		n = appendVarint(n, fEventDroppedAttributes, uint64(clamp(e.DroppedAttributeCount)))
		w.nested = n
		b = appendMessage(b, fSpanEvents, n)
	}
	b = appendVarint(b, fSpanDroppedEvents, uint64(clamp(sd.DroppedEvents())))
	for _, l := range sd.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		n := appendBytes(w.nested[:0], fLinkTraceID, ltid[:])
		n = appendBytes(n, fLinkSpanID, lsid[:])
		n = appendString(n, fLinkTraceState, l.SpanContext.TraceState().String())
		for _, a := range l.Attributes {
			n = w.appendKeyValue(n, fLinkAttributes, a)
		}
		n = appendVarint(n, fLinkDroppedAttributes, uint64(clamp(l.DroppedAttributeCount)))
		n = appendFixed32(n, fLinkFlags, remoteFlags(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()))
		w.nested = n
		b = appendMessage(b, fSpanLinks, n)
	}
	b = appendVarint(b, fSpanDroppedLinks, uint64(clamp(sd.DroppedLinks())))
	n := w.nested[:0]
	switch status := sd.Status(); status.Code {
	case codes.Ok:
		n = appendVarint(n, fStatusCode, uint64(tracepb.Status_STATUS_CODE_OK))
	case codes.Error:
		n = appendString(n, fStatusMessage, status.Description)
		n = appendVarint(n, fStatusCode, uint64(tracepb.Status_STATUS_CODE_ERROR))
	}
	w.nested = n
	b = appendMessage(b, fSpanStatus, n) // present even when empty, as the messages had it
	return appendFixed32(b, fSpanFlags, remoteFlags(sc.TraceFlags(), parent.IsRemote()))
}

// remoteFlags is a span's or link's OTLP flags: the W3C trace flags, and
// whether the parent (or linked span) is remote, which is known.
func remoteFlags(f trace.TraceFlags, remote bool) uint32 {
	flags := uint32(f) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if remote {
		flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return flags
}

// appendKeyValue appends a as a KeyValue field num to b.
func (w *wire) appendKeyValue(b []byte, num protowire.Number, a attribute.KeyValue) []byte {
	w.value = appendAnyValue(w.value[:0], a.Value)
	size := protowire.SizeTag(fKeyValueValue) + protowire.SizeBytes(len(w.value))
	if a.Key != "" {
		size += protowire.SizeTag(fKeyValueKey) + protowire.SizeBytes(len(a.Key))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	b = appendString(b, fKeyValueKey, string(a.Key))
	return appendMessage(b, fKeyValueValue, w.value)
}

// appendAnyValue appends v's AnyValue fields to b: the field of its type,
// written even when it holds the zero value (it is a oneof).
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.STRING:
		return protowire.AppendString(protowire.AppendTag(b, fAnyString, protowire.BytesType), v.AsString())
	case attribute.BOOL:
		return protowire.AppendVarint(protowire.AppendTag(b, fAnyBool, protowire.VarintType), protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		return protowire.AppendVarint(protowire.AppendTag(b, fAnyInt, protowire.VarintType), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return protowire.AppendFixed64(protowire.AppendTag(b, fAnyDouble, protowire.Fixed64Type), math.Float64bits(v.AsFloat64()))
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), attribute.StringValue)
	}
	return protowire.AppendString(protowire.AppendTag(b, fAnyString, protowire.BytesType), "INVALID")
}

// appendArray appends vs as an ArrayValue field of an AnyValue: rare
// (slices), so its elements are written into a buffer of their own.
func appendArray[T any](b []byte, vs []T, value func(T) attribute.Value) []byte {
	var arr, elem []byte
	for _, v := range vs {
		elem = appendAnyValue(elem[:0], value(v))
		arr = appendMessage(arr, fArrayValues, elem)
	}
	return appendMessage(b, fAnyArray, arr)
}

// appendMessage appends the message whose fields are m as field num.
func appendMessage(b []byte, num protowire.Number, m []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
}

// appendBytes, appendString, appendVarint, appendFixed64 and appendFixed32
// append field num unless v is its zero value.
func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return appendMessage(b, num, v)
}

func appendString(b []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), v)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
}

func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), v)
}

func spanKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

func clamp(v int) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}
