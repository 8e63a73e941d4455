package telemetry

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// encoder writes spans in the OTLP wire format (OP-9), into buffers it
// keeps: span is one span's fields while they are written, nested an
// event's, a link's or the status's, value an attribute value's. Fields
// holding their zero value are left out, as the protobuf library leaves
// them out, except where it writes them too: a span's status, and an
// attribute's value of any type.
type encoder struct {
	span   []byte
	nested []byte
	value  []byte
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

// appendSpan appends d's Span fields to b.
func (w *encoder) appendSpan(b []byte, d *spanData) []byte {
	sc := d.sc
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, fSpanTraceID, tid[:])
	b = appendBytes(b, fSpanSpanID, sid[:])
	if ts := sc.TraceState(); ts.Len() > 0 {
		b = appendString(b, fSpanTraceState, ts.String())
	}
	parent := d.parent
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytes(b, fSpanParentSpanID, psid[:])
	}
	b = appendString(b, fSpanName, d.name)
	b = appendVarint(b, fSpanKind, uint64(spanKind(d.kind)))
	b = appendFixed64(b, fSpanStart, uint64(max(0, d.start.UnixNano())))
	b = appendFixed64(b, fSpanEnd, uint64(max(0, d.end.UnixNano())))
	for _, a := range d.attrs {
		b = w.appendKeyValue(b, fSpanAttributes, a)
	}
	b = appendVarint(b, fSpanDroppedAttributes, uint64(clamp(d.droppedAttrs)))
	for _, e := range d.events {
		n := appendFixed64(w.nested[:0], fEventTime, uint64(max(0, e.Time.UnixNano())))
		n = appendString(n, fEventName, e.Name)
		for _, a := range e.Attributes {
			n = w.appendKeyValue(n, fEventAttributes, a)
		}
		n = appendVarint(n, fEventDroppedAttributes, uint64(clamp(e.DroppedAttributeCount)))
		w.nested = n
		b = appendMessage(b, fSpanEvents, n)
	}
	b = appendVarint(b, fSpanDroppedEvents, uint64(clamp(d.droppedEvents)))
	for _, l := range d.links {
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
	b = appendVarint(b, fSpanDroppedLinks, uint64(clamp(d.droppedLinks)))
	n := w.nested[:0]
	switch status := d.status; status.Code {
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
func (w *encoder) appendKeyValue(b []byte, num protowire.Number, a attribute.KeyValue) []byte {
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
