package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// The OTLP messages of spans built through the generated types, field by
// field: what the exporter sent before it wrote the wire format itself,
// kept as the reference its encoding is held equal to.

// messages is the OTLP messages of one export, kept for the next. Slices
// of messages grow by replacement, never by append, so no message is
// copied (they must not be).
type messages struct {
	resources []*tracepb.ResourceSpans
	spans     []tracepb.Span
	statuses  []tracepb.Status
	kvs       []commonpb.KeyValue
	kvPtrs    []*commonpb.KeyValue
	values    []commonpb.AnyValue
	strs      []commonpb.AnyValue_StringValue
	ints      []commonpb.AnyValue_IntValue
	doubles   []commonpb.AnyValue_DoubleValue
	bools     []commonpb.AnyValue_BoolValue
	ids       []byte
	// Per resource and scope, the messages made once: a gateway's spans
	// come from one provider and one scope.
	groups []group
}

type group struct {
	res                              *resourcepb.Resource
	resKey                           attribute.Distinct
	scope                            *commonpb.InstrumentationScope
	name, version, schema, resSchema string
	rs                               tracepb.ResourceSpans
	ss                               tracepb.ScopeSpans
	ssPtr                            []*tracepb.ScopeSpans
	used                             bool
}

// fill makes spans' OTLP messages, reusing the last export's.
func (m *messages) fill(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	n, attrs := 0, 0
	for _, s := range spans {
		if s != nil {
			n++
			attrs += len(s.Attributes())
		}
	}
	if n == 0 {
		return nil
	}
	if cap(m.spans) < n {
		m.spans = make([]tracepb.Span, 2*n)
		m.statuses = make([]tracepb.Status, 2*n)
		m.ids = make([]byte, 2*n*32)
	}
	if cap(m.kvs) < attrs {
		m.kvs = make([]commonpb.KeyValue, 2*attrs)
		m.kvPtrs = make([]*commonpb.KeyValue, 2*attrs)
		m.values = make([]commonpb.AnyValue, 2*attrs)
		m.strs = make([]commonpb.AnyValue_StringValue, 2*attrs)
		m.ints = make([]commonpb.AnyValue_IntValue, 2*attrs)
		m.doubles = make([]commonpb.AnyValue_DoubleValue, 2*attrs)
		m.bools = make([]commonpb.AnyValue_BoolValue, 2*attrs)
	}
	for i := range m.groups {
		g := &m.groups[i]
		g.used = false
		g.ss.Spans = g.ss.Spans[:0]
	}
	m.resources = m.resources[:0]
	si, ai := 0, 0
	for _, sd := range spans {
		if sd == nil {
			continue
		}
		g := m.group(sd)
		s := &m.spans[si]
		*s = tracepb.Span{}
		sc := sd.SpanContext()
		ids := m.ids[si*32 : si*32+32 : si*32+32]
		tid, sid := sc.TraceID(), sc.SpanID()
		s.TraceId = append(ids[:0:16], tid[:]...)
		s.SpanId = append(ids[16:16:24], sid[:]...)
		if psid := sd.Parent().SpanID(); psid.IsValid() {
			s.ParentSpanId = append(ids[24:24:32], psid[:]...)
		}
		if ts := sc.TraceState(); ts.Len() > 0 {
			s.TraceState = ts.String()
		}
		s.Flags = uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
		if sd.Parent().IsRemote() {
			s.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
		s.Name = sd.Name()
		s.Kind = spanKind(sd.SpanKind())
		s.StartTimeUnixNano = uint64(max(0, sd.StartTime().UnixNano()))
		s.EndTimeUnixNano = uint64(max(0, sd.EndTime().UnixNano()))
		st := &m.statuses[si]
		*st = tracepb.Status{}
		switch status := sd.Status(); status.Code {
		case codes.Ok:
			st.Code = tracepb.Status_STATUS_CODE_OK
		case codes.Error:
			st.Code, st.Message = tracepb.Status_STATUS_CODE_ERROR, status.Description
		}
		s.Status = st
		as := sd.Attributes()
		s.Attributes = m.kvPtrs[ai : ai+len(as) : ai+len(as)]
		for j, a := range as {
			s.Attributes[j] = m.keyValue(ai+j, a)
		}
		ai += len(as)
		s.DroppedAttributesCount = clamp(sd.DroppedAttributes())
		s.Events = events(sd.Events())
		s.DroppedEventsCount = clamp(sd.DroppedEvents())
		s.Links = links(sd.Links())
		s.DroppedLinksCount = clamp(sd.DroppedLinks())
		g.ss.Spans = append(g.ss.Spans, s)
		si++
	}
	for i := range m.groups {
		if g := &m.groups[i]; g.used {
			m.resources = append(m.resources, &g.rs)
		}
	}
	return m.resources
}

// group is the resource and scope sd belongs to, made on first sight.
func (m *messages) group(sd sdktrace.ReadOnlySpan) *group {
	res, scope := sd.Resource(), sd.InstrumentationScope()
	key := res.Equivalent()
	for i := range m.groups {
		g := &m.groups[i]
		if g.resKey == key && g.name == scope.Name && g.version == scope.Version && g.schema == scope.SchemaURL {
			g.used = true
			return g
		}
	}
	// A new group: rare (one per provider and scope), so the groups slice
	// is made anew rather than appended to, and the pointers into the
	// old one are fixed up.
	groups := make([]group, len(m.groups)+1)
	for i := range m.groups {
		old := &m.groups[i]
		g := &groups[i]
		g.res, g.resKey, g.scope, g.name, g.version, g.schema, g.resSchema, g.used =
			old.res, old.resKey, old.scope, old.name, old.version, old.schema, old.resSchema, old.used
		g.ss.Spans = old.ss.Spans
		g.link()
	}
	g := &groups[len(m.groups)]
	g.resKey, g.name, g.version, g.schema, g.used = key, scope.Name, scope.Version, scope.SchemaURL, true
	g.res = &resourcepb.Resource{Attributes: plainKeyValues(res.Attributes())}
	g.resSchema = res.SchemaURL()
	if scope.Name != "" || scope.Version != "" || scope.SchemaURL != "" || scope.Attributes.Len() > 0 {
		g.scope = &commonpb.InstrumentationScope{Name: scope.Name, Version: scope.Version, Attributes: plainKeyValues(scope.Attributes.ToSlice())}
	}
	g.link()
	m.groups = groups
	return g
}

// link points g's resource message at its scope message.
func (g *group) link() {
	g.rs.Resource, g.rs.SchemaUrl = g.res, g.resSchema
	g.ss.Scope, g.ss.SchemaUrl = g.scope, g.schema
	g.ssPtr = []*tracepb.ScopeSpans{&g.ss}
	g.rs.ScopeSpans = g.ssPtr
}

// keyValue is a as the i-th kept KeyValue.
func (m *messages) keyValue(i int, a attribute.KeyValue) *commonpb.KeyValue {
	kv, v := &m.kvs[i], &m.values[i]
	*v = commonpb.AnyValue{}
	switch a.Value.Type() {
	case attribute.STRING:
		m.strs[i].StringValue = a.Value.AsString()
		v.Value = &m.strs[i]
	case attribute.INT64:
		m.ints[i].IntValue = a.Value.AsInt64()
		v.Value = &m.ints[i]
	case attribute.FLOAT64:
		m.doubles[i].DoubleValue = a.Value.AsFloat64()
		v.Value = &m.doubles[i]
	case attribute.BOOL:
		m.bools[i].BoolValue = a.Value.AsBool()
		v.Value = &m.bools[i]
	default:
		v.Value = plainValue(a.Value).Value // slices: rare, made new
	}
	*kv = commonpb.KeyValue{Key: string(a.Key), Value: v}
	return kv
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
