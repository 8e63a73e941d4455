package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// referenceMessages is spans' OTLP messages built through the generated
// types, every message new: what the exporter sent before it wrote the
// wire format itself, kept as the reference its encoding is held equal
// to. One ResourceSpans per resource and scope, in the order first seen;
// nil for no span.
func referenceMessages(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	type groupKey struct {
		res                   attribute.Distinct
		name, version, schema string
	}
	var out []*tracepb.ResourceSpans
	groups := map[groupKey]*tracepb.ScopeSpans{}
	for _, sd := range spans {
		if sd == nil {
			continue
		}
		res, scope := sd.Resource(), sd.InstrumentationScope()
		key := groupKey{res.Equivalent(), scope.Name, scope.Version, scope.SchemaURL}
		ss := groups[key]
		if ss == nil {
			ss = &tracepb.ScopeSpans{SchemaUrl: scope.SchemaURL}
			if scope.Name != "" || scope.Version != "" || scope.SchemaURL != "" || scope.Attributes.Len() > 0 {
				ss.Scope = &commonpb.InstrumentationScope{Name: scope.Name, Version: scope.Version, Attributes: plainKeyValues(scope.Attributes.ToSlice())}
			}
			groups[key] = ss
			out = append(out, &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: plainKeyValues(res.Attributes())},
				SchemaUrl: res.SchemaURL(), ScopeSpans: []*tracepb.ScopeSpans{ss}})
		}
		ss.Spans = append(ss.Spans, referenceSpan(sd))
	}
	return out
}

// referenceSpan is sd's Span message.
func referenceSpan(sd sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := sd.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	s := &tracepb.Span{TraceId: tid[:], SpanId: sid[:], Name: sd.Name(), Kind: spanKind(sd.SpanKind()),
		StartTimeUnixNano: uint64(max(0, sd.StartTime().UnixNano())), EndTimeUnixNano: uint64(max(0, sd.EndTime().UnixNano())),
		Attributes: plainKeyValues(sd.Attributes()), DroppedAttributesCount: clamp(sd.DroppedAttributes()),
		Events: events(sd.Events()), DroppedEventsCount: clamp(sd.DroppedEvents()),
		Links: links(sd.Links()), DroppedLinksCount: clamp(sd.DroppedLinks()),
		Flags: uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK), Status: &tracepb.Status{}}
	if sd.Parent().IsRemote() {
		s.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	if psid := sd.Parent().SpanID(); psid.IsValid() {
		s.ParentSpanId = psid[:]
	}
	if ts := sc.TraceState(); ts.Len() > 0 {
		s.TraceState = ts.String()
	}
	switch status := sd.Status(); status.Code {
	case codes.Ok:
		s.Status.Code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		s.Status.Code, s.Status.Message = tracepb.Status_STATUS_CODE_ERROR, status.Description
	}
	return s
}

// plainKeyValues is attrs as new messages, for what is made once or
// rarely.
func plainKeyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, len(attrs))
	for i, a := range attrs {
		out[i] = &commonpb.KeyValue{Key: string(a.Key), Value: plainValue(a.Value)}
	}
	return out
}

func plainValue(v attribute.Value) *commonpb.AnyValue {
	av := &commonpb.AnyValue{}
	switch v.Type() {
	case attribute.BOOL:
		av.Value = &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}
	case attribute.INT64:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}
	case attribute.FLOAT64:
		av.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}
	case attribute.STRING:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: v.AsString()}
	case attribute.BOOLSLICE:
		av.Value = arrayOf(v.AsBoolSlice(), func(b bool) *commonpb.AnyValue { return plainValue(attribute.BoolValue(b)) })
	case attribute.INT64SLICE:
		av.Value = arrayOf(v.AsInt64Slice(), func(n int64) *commonpb.AnyValue { return plainValue(attribute.Int64Value(n)) })
	case attribute.FLOAT64SLICE:
		av.Value = arrayOf(v.AsFloat64Slice(), func(f float64) *commonpb.AnyValue { return plainValue(attribute.Float64Value(f)) })
	case attribute.STRINGSLICE:
		av.Value = arrayOf(v.AsStringSlice(), func(s string) *commonpb.AnyValue { return plainValue(attribute.StringValue(s)) })
	default:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: "INVALID"}
	}
	return av
}

func arrayOf[T any](vs []T, f func(T) *commonpb.AnyValue) *commonpb.AnyValue_ArrayValue {
	out := make([]*commonpb.AnyValue, len(vs))
	for i, v := range vs {
		out[i] = f(v)
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: out}}
}

func events(es []sdktrace.Event) []*tracepb.Span_Event {
	if len(es) == 0 {
		return nil
	}
	out := make([]*tracepb.Span_Event, len(es))
	for i, e := range es {
		out[i] = &tracepb.Span_Event{Name: e.Name, TimeUnixNano: uint64(max(0, e.Time.UnixNano())),
			Attributes: plainKeyValues(e.Attributes), DroppedAttributesCount: clamp(e.DroppedAttributeCount)}
	}
	return out
}

func links(ls []sdktrace.Link) []*tracepb.Span_Link {
	if len(ls) == 0 {
		return nil
	}
	out := make([]*tracepb.Span_Link, len(ls))
	for i, l := range ls {
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		flags := uint32(l.SpanContext.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
		if l.SpanContext.IsRemote() {
			flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
		out[i] = &tracepb.Span_Link{TraceId: tid[:], SpanId: sid[:], TraceState: l.SpanContext.TraceState().String(),
			Attributes: plainKeyValues(l.Attributes), DroppedAttributesCount: clamp(l.DroppedAttributeCount), Flags: flags}
	}
	return out
}
