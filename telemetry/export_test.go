package telemetry

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
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

// seqIDs makes ids from a counter, the same in every run, spread over the
// bits the ratio sampler reads.
type seqIDs struct {
	mu sync.Mutex
	n  uint64
}

func (g *seqIDs) next() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	return g.n
}

func (g *seqIDs) NewIDs(ctx context.Context) (tid trace.TraceID, sid trace.SpanID) {
	binary.BigEndian.PutUint64(tid[8:], g.next()*0x9E3779B97F4A7C15)
	tid[0] = 1
	return tid, g.NewSpanID(ctx, tid)
}

func (g *seqIDs) NewSpanID(context.Context, trace.TraceID) (sid trace.SpanID) {
	binary.BigEndian.PutUint64(sid[:], g.next())
	return sid
}

// traceScenario makes spans through tp, other (a provider of another
// resource) and sampled, a provider sampling half the new traces, with
// every time given, and returns the context of each span it opened, in
// order.
func traceScenario(t *testing.T, tp, other, sampled trace.TracerProvider) []trace.SpanContext {
	t.Helper()
	var opened []trace.SpanContext
	at := func(n int) time.Time { return time.Unix(1_700_000_000, int64(n)*1000) }
	start := func(tr trace.Tracer, ctx context.Context, name string, n int, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
		ctx, s := tr.Start(ctx, name, append(opts, trace.WithTimestamp(at(n)))...)
		opened = append(opened, s.SpanContext())
		return ctx, s
	}
	ctx := context.Background()
	ts, err := trace.ParseTraceState("vendor=abc,other=1")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7, 7}, SpanID: trace.SpanID{7}, Remote: true})
	local := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}})

	tr := tp.Tracer(ScopeName)
	rctx, root := start(tr, trace.ContextWithRemoteSpanContext(ctx, remote), "tools/call probe", 1, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("s", "v"), attribute.String("empty", ""), attribute.Int("i", -7), attribute.Int("zero", 0),
			attribute.Float64("f", 0.25), attribute.Float64("fzero", 0), attribute.Bool("b", true), attribute.Bool("no", false),
			attribute.StringSlice("ss", []string{"x", "", "longer than five"}), attribute.Int64Slice("is", []int64{1, -2, 0}), attribute.Float64Slice("fs", []float64{1.5}),
			attribute.BoolSlice("bs", []bool{true, false}), attribute.StringSlice("none", nil), attribute.String("ünïcode ключ", "値ünïcode")))
	root.SetAttributes(attribute.String("s", "set again"), attribute.String("", "no key"), attribute.String("bad", "\xffab\xfe\xffcdefg"))
	root.SetAttributes(attribute.String("over", "the limit"), attribute.Int("i", 8)) // a new key dropped, a known one set
	_, child := start(tr, rctx, "tools/call echo", 2, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: local}, // the oldest, dropped over the limit
			trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("why", "retry"), attribute.Int("dropped", 1)}},
			trace.Link{}, // nothing to link: not a link
			trace.Link{SpanContext: local}))
	child.AddEvent("first", trace.WithTimestamp(at(3))) // the oldest, dropped over the limit
	child.AddEvent("e", trace.WithAttributes(attribute.String("k", "v"), attribute.Int("dropped", 1)), trace.WithTimestamp(at(4)))
	child.AddEvent("plain", trace.WithTimestamp(at(5)))
	child.AddLink(trace.Link{SpanContext: remote})
	child.SetStatus(codes.Error, "broke")
	child.SetStatus(codes.Unset, "")
	child.SetName("tools/call echo, renamed")
	child.End(trace.WithTimestamp(at(6)))
	child.End(trace.WithTimestamp(at(60))) // a second End changes nothing
	child.SetAttributes(attribute.String("late", "after End"))
	_, ok := start(tr, rctx, "", 7, trace.WithSpanKind(trace.SpanKindInternal))
	ok.SetStatus(codes.Ok, "")
	ok.SetStatus(codes.Error, "after ok")
	ok.End(trace.WithTimestamp(at(8)))
	_, fresh := start(tr, rctx, "a new root", 9, trace.WithNewRoot())
	fresh.End(trace.WithTimestamp(at(10)))
	root.End(trace.WithTimestamp(at(11)))
	uctx, dropped := start(tr, trace.ContextWithRemoteSpanContext(ctx, unsampled), "not sampled", 12)
	_, under := start(tr, uctx, "under it", 13)
	under.End()
	dropped.End()
	_, versioned := start(tp.Tracer("scope-two", trace.WithInstrumentationVersion("1.2.3"), trace.WithSchemaURL("https://example.com/s"),
		trace.WithInstrumentationAttributes(attribute.Bool("scoped", true))), ctx, "in scope two", 14, trace.WithSpanKind(trace.SpanKindProducer))
	versioned.End(trace.WithTimestamp(at(15)))
	_, unscoped := start(tp.Tracer(""), ctx, "no scope", 16, trace.WithSpanKind(trace.SpanKindConsumer))
	unscoped.End(trace.WithTimestamp(at(17)))
	_, elsewhere := start(other.Tracer(ScopeName), ctx, "other resource", 18)
	elsewhere.End(trace.WithTimestamp(at(19)))
	for i := range 8 {
		_, s := start(sampled.Tracer(ScopeName), ctx, fmt.Sprint("maybe ", i), 20+i, trace.WithAttributes(attribute.Int("n", i)))
		s.End(trace.WithTimestamp(at(30 + i)))
	}
	return opened
}

// flatSpan is one exported span with the resource and scope it came under.
type flatSpan struct {
	id  string
	msg *tracepb.ResourceSpans // holding just this span
}

func flatten(reqs ...[]*tracepb.ResourceSpans) []flatSpan {
	var out []flatSpan
	for _, rss := range reqs {
		for _, rs := range rss {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					one := &tracepb.ResourceSpans{Resource: rs.Resource, SchemaUrl: rs.SchemaUrl,
						ScopeSpans: []*tracepb.ScopeSpans{{Scope: ss.Scope, SchemaUrl: ss.SchemaUrl, Spans: []*tracepb.Span{sp}}}}
					out = append(out, flatSpan{hex.EncodeToString(sp.TraceId) + hex.EncodeToString(sp.SpanId), one})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// OP-9: toolgate's spans are the SDK's. The same spans, opened, changed
// and ended the same way through the SDK's provider and through
// toolgate's (the same ids, times, sampler, limits and resources), give
// the same span contexts, and what toolgate's exports, marshalled as an
// OTLP client marshals it, decodes to the very messages the generated
// types make of the SDK's spans: every attribute type, zero values
// included, a key set twice, invalid keys, values cut to the length
// limit (invalid UTF-8 left out), attributes, events and links over their
// limits, a status that cannot go back, a renamed span, trace state,
// remote and local parents, a new root, links without a context, spans a
// sampler dropped and their children, four scopes and two resources.
func TestSpansAreTheSDKsOP9(t *testing.T) {
	limits := sdktrace.NewSpanLimits()
	limits.AttributeCountLimit, limits.EventCountLimit, limits.LinkCountLimit = 14, 2, 2
	limits.AttributePerEventCountLimit, limits.AttributePerLinkCountLimit, limits.AttributeValueLengthLimit = 1, 1, 5
	res, err := resource.New(context.Background(), resource.WithAttributes(attribute.String("service.name", "other"), attribute.Int("replica", 3)),
		resource.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0"))
	if err != nil {
		t.Fatal(err)
	}
	unlimited := sdktrace.NewSpanLimits()
	unlimited.AttributeCountLimit = -1
	half := sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.5))
	always := sdktrace.ParentBased(sdktrace.AlwaysSample())

	rec := tracetest.NewSpanRecorder()
	sdkIDs := &seqIDs{}
	sdk := func(opts ...sdktrace.TracerProviderOption) trace.TracerProvider {
		return sdktrace.NewTracerProvider(append(opts, sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(sdkIDs))...)
	}
	wantOpened := traceScenario(t, sdk(sdktrace.WithRawSpanLimits(limits), sdktrace.WithSampler(always)),
		sdk(sdktrace.WithResource(res), sdktrace.WithSampler(always)), sdk(sdktrace.WithRawSpanLimits(unlimited), sdktrace.WithSampler(half)))

	client := &testClient{}
	ids := &seqIDs{}
	var recs []*recorder
	ours := func(res *resource.Resource, sampler sdktrace.Sampler, limits sdktrace.SpanLimits) trace.TracerProvider {
		r := newRecorder(client, res, nil)
		recs = append(recs, r)
		return newTracerProvider(r, sampler, limits, ids)
	}
	opened := traceScenario(t, ours(resource.Default(), always, limits), ours(res, always, sdktrace.NewSpanLimits()),
		ours(resource.Default(), half, unlimited))
	for _, r := range recs {
		if err := r.shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	if !reflect.DeepEqual(opened, wantOpened) {
		t.Errorf("span contexts\n got %v\nwant %v", opened, wantOpened)
	}
	var sent [][]*tracepb.ResourceSpans
	for _, req := range client.sent {
		sent = append(sent, req.ResourceSpans)
	}
	got, want := flatten(sent...), flatten(referenceMessages(rec.Ended()))
	if len(want) < 10 || len(want) > 16 {
		t.Fatalf("the SDK ended %d sampled spans; the scenario expects 10 to 16", len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("%d spans exported, the SDK's %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i].msg, want[i].msg) {
			t.Errorf("span %s:\n got %v\nwant %v", want[i].id, prototext.Format(got[i].msg), prototext.Format(want[i].msg))
		}
	}
}

// OP-9: an error recorded on a span says its type and never its text,
// which may quote what a caller sent.
func TestRecordErrorKeepsTheTypeOnlyOP9(t *testing.T) {
	client := &testClient{}
	rec := newRecorder(client, nil, nil)
	tp := newTracerProvider(rec, sdktrace.AlwaysSample(), sdktrace.NewSpanLimits(), nil)
	_, s := tp.Tracer(ScopeName).Start(context.Background(), "s")
	s.RecordError(fmt.Errorf("bad argument %q", "secret-value"))
	s.End()
	if err := rec.shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := flatten(client.sent[0].ResourceSpans)
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	text := prototext.Format(spans[0].msg)
	if strings.Contains(text, "secret-value") || !strings.Contains(text, "exception.type") || !strings.Contains(text, "*fmt.wrapError") && !strings.Contains(text, "*errors.errorString") {
		t.Errorf("the recorded error: %s", text)
	}
}
