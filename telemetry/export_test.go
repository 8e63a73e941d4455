package telemetry

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
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

// OP-9: the exporter's messages, kept from export to export, say what the
// SDK ended, attribute by attribute and of every type, with the parent,
// kind, status, flags, events and links, and its resource and scope; a
// second, smaller export reusing them carries nothing of the first, and
// the first's encoding, taken before, is untouched.
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
	var m messages
	first := rec.Ended()
	rs := m.fill(first)
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
	encoded, err := proto.Marshal(rs[0])
	if err != nil {
		t.Fatal(err)
	}
	// A second export, one plain span, into the same messages.
	_, plain := tr.Start(ctx, "POST /mcp")
	plain.End()
	second := rec.Ended()[len(first):]
	rs = m.fill(second)
	if spans := rs[0].ScopeSpans[0].Spans; len(spans) != 1 || flat(spans[0]) != want(second[0]) {
		t.Errorf("the second export: %v", rs)
	}
	var again tracepb.ResourceSpans
	if err := proto.Unmarshal(encoded, &again); err != nil || len(again.ScopeSpans[0].Spans) != 2 || flat(again.ScopeSpans[0].Spans[0]) != want(first[0]) {
		t.Errorf("the first export's encoding changed: %v", err)
	}
	if m.fill(nil) != nil {
		t.Error("an empty export has messages")
	}
}
