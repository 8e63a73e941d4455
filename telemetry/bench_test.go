package telemetry

import (
	"context"
	"testing"

	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/internal/otlptest"
)

// BenchmarkCallSpans is what the spans of one tools/call cost the tracer and
// the OTLP/HTTP exporter alone (OP-9): the request span with its stages
// (authentication, policy, validation, the audit write) noted as its
// attributes, and one upstream attempt's client span (with the trace
// context it hands on), opened and ended as the gateway does, exported in
// batches to a counting receiver. It is the floor under the gateway's
// cost of tracing a call; profile it (-cpuprofile) to see the tracer's share
// and the exporter's (flush). Each batch is exported in the loop, as soon
// as it is full: spans made faster than exported would be dropped and not
// measured.
func BenchmarkCallSpans(b *testing.B) {
	rcv := otlptest.StartCounting(b)
	p, err := New(context.Background(), Settings{Endpoint: rcv.URL, SampleRatio: 1})
	if err != nil {
		b.Fatal(err)
	}
	tracer := p.Tracer()
	const spansPerCall = 2
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var r Request
		ctx, span := StartKind(context.Background(), tracer, "POST /mcp", trace.SpanKindServer,
			semconv.HTTPRequestMethodKey.String("POST"), semconv.URLPath("/mcp"), semconv.McpProtocolVersion("2025-06-18"))
		ctx = WithRequest(ctx, &r)
		req := RequestOf(ctx)
		req.Begin(StageAuth)
		req.Done(StageAuth)
		ToolCall(ctx, "http_echo", "7")
		t0 := req.Now()
		req.Took(StagePolicy, t0)
		t0 = req.Now()
		req.Took(StageValidate, t0)
		actx, attempt := Attempt(ctx, "http", "http", "echo", 1)
		Context(actx)
		EndAttempt(attempt, false, nil)
		req.Outcome("ok", false)
		t0 = req.Now()
		req.Took(StageAudit, t0)
		TraceID(ctx)
		r.End(span, false, semconv.HTTPResponseStatusCode(200))
		if i++; i%(batchSize/spansPerCall) == 0 {
			if err := p.flush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if err := p.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	if n := rcv.Count(); n != spansPerCall*i {
		b.Errorf("the receiver got %d spans of %d", n, spansPerCall*i)
	}
}
