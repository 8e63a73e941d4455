package telemetry

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// flat is a span message as text, for comparing with what the SDK ended.
func flat(s *tracepb.Span) string {
	out := fmt.Sprintf("%s %s %s %s %v %d %d %v %q flags=%x ev=%d links=%d", s.Name, hex.EncodeToString(s.TraceId), hex.EncodeToString(s.SpanId),
		hex.EncodeToString(s.ParentSpanId), s.Kind, s.StartTimeUnixNano, s.EndTimeUnixNano, s.Status.GetCode(), s.Status.GetMessage(), s.Flags,
		len(s.Events), len(s.Links))
	for _, kv := range s.Attributes {
		out += " " + kv.Key + "=" + anyText(kv.Value)
	}
	return out
}

func anyText(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_ArrayValue:
		s := "["
		for _, e := range x.ArrayValue.GetValues() {
			s += anyText(e) + ","
		}
		return s + "]"
	}
	return fmt.Sprint(v.GetValue())
}

// want is what the message of sd must say.
func want(sd sdktrace.ReadOnlySpan) string {
	tid, sid, psid := sd.SpanContext().TraceID(), sd.SpanContext().SpanID(), sd.Parent().SpanID()
	parent := ""
	if psid.IsValid() {
		parent = hex.EncodeToString(psid[:])
	}
	code := tracepb.Status_STATUS_CODE_UNSET
	msg := ""
	if sd.Status().Code == codes.Error {
		code, msg = tracepb.Status_STATUS_CODE_ERROR, sd.Status().Description
	}
	flags := uint32(sd.SpanContext().TraceFlags()) | 0x100
	if sd.Parent().IsRemote() {
		flags |= 0x200
	}
	out := fmt.Sprintf("%s %s %s %s %v %d %d %v %q flags=%x ev=%d links=%d", sd.Name(), hex.EncodeToString(tid[:]), hex.EncodeToString(sid[:]), parent,
		spanKind(sd.SpanKind()), sd.StartTime().UnixNano(), sd.EndTime().UnixNano(), code, msg, flags, len(sd.Events()), len(sd.Links()))
	for _, a := range sd.Attributes() {
		out += " " + string(a.Key) + "=" + anyText(plainValue(a.Value))
	}
	return out
}

// OP-9: the reference messages the exporter's encoding is held equal to
// say what the SDK ended, attribute by attribute and of every type, with
// the parent, kind, status, flags, events and links, and its resource and
// scope. (Reusing buffers from export to export is the encoder's, tested
// with it below.)
func TestExportMessagesSayWhatEnded(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := tp.Tracer(ScopeName)
	ctx := context.Background()
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled, Remote: true})
	rctx, root := tr.Start(trace.ContextWithRemoteSpanContext(ctx, remote), "tools/call probe", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("s", "v"), attribute.Int("i", -7), attribute.Float64("f", 0.25), attribute.Bool("b", true),
			attribute.StringSlice("ss", []string{"x", "y"}), attribute.Int64Slice("is", []int64{1, 2})))
	_, child := tr.Start(rctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(trace.Link{SpanContext: remote}))
	child.AddEvent("e", trace.WithAttributes(attribute.String("k", "v")))
	child.SetStatus(codes.Error, "broke")
	child.End()
	root.End()
	first := rec.Ended()
	rs := referenceMessages(first)
	if len(rs) != 1 || len(rs[0].ScopeSpans) != 1 || rs[0].ScopeSpans[0].Scope.GetName() != ScopeName || len(rs[0].Resource.GetAttributes()) == 0 {
		t.Fatalf("resource and scope: %v", rs)
	}
	got := rs[0].ScopeSpans[0].Spans
	if len(got) != len(first) {
		t.Fatalf("%d messages for %d spans", len(got), len(first))
	}
	for i, sd := range first {
		if g, w := flat(got[i]), want(sd); g != w {
			t.Errorf("span %d:\n got %s\nwant %s", i, g, w)
		}
	}
	if referenceMessages(nil) != nil {
		t.Error("an empty export has messages")
	}
}

// OP-9: the exporter's own encoding of spans, sent as a client sends it
// (the export request marshalled by the protobuf library), decodes to the
// very messages the generated types make of the same spans: every
// attribute type, zero values included, events, links with their trace
// state, each status, a span's trace state, dropped counts, and spans of
// two resources and four scopes in one export. A second export into the
// same buffers carries nothing of the first, and the first's encoding,
// taken before, is untouched.
func TestExportWireIsTheMessagesOP9(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	limits := sdktrace.NewSpanLimits()
	limits.AttributeCountLimit, limits.EventCountLimit, limits.LinkCountLimit, limits.AttributePerEventCountLimit = 14, 2, 2, 1
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithRawSpanLimits(limits))
	res, err := resource.New(context.Background(), resource.WithAttributes(attribute.String("service.name", "other"), attribute.Int("replica", 3)),
		resource.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0"))
	if err != nil {
		t.Fatal(err)
	}
	other := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	ctx := context.Background()
	ts, err := trace.ParseTraceState("vendor=abc,other=1")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	local := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}})

	tr := tp.Tracer(ScopeName)
	rctx, root := tr.Start(trace.ContextWithRemoteSpanContext(ctx, remote), "tools/call probe", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("s", "v"), attribute.String("empty", ""), attribute.Int("i", -7), attribute.Int("zero", 0),
			attribute.Float64("f", 0.25), attribute.Float64("fzero", 0), attribute.Bool("b", true), attribute.Bool("no", false),
			attribute.StringSlice("ss", []string{"x", ""}), attribute.Int64Slice("is", []int64{1, -2, 0}), attribute.Float64Slice("fs", []float64{1.5}),
			attribute.BoolSlice("bs", []bool{true, false}), attribute.StringSlice("none", nil), attribute.String("ünïcode ключ", "値")))
	root.SetAttributes(attribute.String("over", "the limit"), attribute.Int("over2", 2)) // dropped
	_, child := tr.Start(rctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: local}, // the oldest, dropped over the limit
			trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("why", "retry")}}, trace.Link{SpanContext: local}))
	child.AddEvent("first") // the oldest, dropped over the limit
	child.AddEvent("e", trace.WithAttributes(attribute.String("k", "v"), attribute.Int("dropped", 1)))
	child.AddEvent("plain")
	child.SetStatus(codes.Error, "broke")
	child.End()
	_, ok := tr.Start(rctx, "", trace.WithSpanKind(trace.SpanKindInternal))
	ok.SetStatus(codes.Ok, "")
	ok.End()
	root.End()
	_, versioned := tp.Tracer("scope-two", trace.WithInstrumentationVersion("1.2.3"), trace.WithSchemaURL("https://example.com/s"),
		trace.WithInstrumentationAttributes(attribute.Bool("scoped", true))).Start(ctx, "in scope two", trace.WithSpanKind(trace.SpanKindProducer))
	versioned.End()
	_, unscoped := tp.Tracer("").Start(ctx, "no scope", trace.WithSpanKind(trace.SpanKindConsumer))
	unscoped.End()
	_, elsewhere := other.Tracer(ScopeName).Start(ctx, "other resource")
	elsewhere.End()

	var w wire
	check := func(what string, spans []sdktrace.ReadOnlySpan) []byte {
		t.Helper()
		sent, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: w.encode(spans)})
		if err != nil {
			t.Fatal(err)
		}
		var got coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(sent, &got); err != nil {
			t.Fatalf("%s: the encoding does not decode: %v", what, err)
		}
		want := &coltracepb.ExportTraceServiceRequest{ResourceSpans: referenceMessages(spans)}
		if !proto.Equal(&got, want) {
			t.Errorf("%s: the encoding decodes to\n%v\nwant\n%v", what, prototext.Format(&got), prototext.Format(want))
		}
		return sent
	}
	all := rec.Ended()
	if len(all) != 6 {
		t.Fatalf("%d spans ended", len(all))
	}
	first := check("six spans of two resources and four scopes", all)
	kept := bytes.Clone(first)
	check("one span", all[len(all)-1:])
	check("the first span again", all[:1])
	if !bytes.Equal(first, kept) {
		t.Error("the first export's encoding changed under the next ones")
	}
	if w.encode(nil) != nil || w.encode([]sdktrace.ReadOnlySpan{nil}) != nil {
		t.Error("an empty export has messages")
	}
}
