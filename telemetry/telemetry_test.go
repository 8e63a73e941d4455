package telemetry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/otlptest"
)

// OP-9: a collector's base URL gets the traces path, as the OTLP
// environment's base endpoint does; a URL with a path is kept.
func TestEndpointURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":              "http://127.0.0.1:4318/v1/traces",
		"http://127.0.0.1:4318/":             "http://127.0.0.1:4318/v1/traces",
		"https://otel.example:443/v1/traces": "https://otel.example:443/v1/traces",
		"https://otel.example/custom/ingest": "https://otel.example/custom/ingest",
	} {
		if got := endpointURL(in); got != want {
			t.Errorf("endpointURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// OP-9: without an endpoint in the settings or the environment nothing is
// built, and the helpers open no span and carry no context.
func TestOffByDefault(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	p, err := New(context.Background(), Settings{SampleRatio: 1})
	if err != nil || p != nil {
		t.Fatalf("New without an endpoint = %v, %v; want nil, nil", p, err)
	}
	if p.Tracer() != nil || p.Shutdown(context.Background()) != nil {
		t.Error("a nil provider is not inert")
	}
	ctx := context.Background()
	got, span := Start(ctx, "policy")
	if got != ctx || span.IsRecording() || span.SpanContext().IsValid() {
		t.Errorf("Start without a request span opened one: %v", span.SpanContext())
	}
	End(span, errors.New("x"))
	if tp, ts := Context(ctx); tp != "" || ts != "" || TraceID(ctx) != "" {
		t.Errorf("Context without a span = %q %q", tp, ts)
	}
}

// OP-9: the OTEL_EXPORTER_OTLP_* environment alone turns tracing on and
// its headers go with the export; a failed span says the kind of its
// error, never the error's text.
func TestEnvironmentEndpoint(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=blue")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := New(ctx, Settings{SampleRatio: 1, ServiceVersion: "1.2.3"})
	if err != nil || p == nil {
		t.Fatalf("New = %v, %v", p, err)
	}
	rctx, root := p.Tracer().Start(ctx, "request")
	_, child := Start(rctx, "validate")
	End(child, fmt.Errorf("invalid arguments: %s", "argument-value-5d1c"))
	tp, _ := Context(rctx)
	root.End()
	if want := "00-" + root.SpanContext().TraceID().String() + "-" + root.SpanContext().SpanID().String() + "-01"; tp != want || TraceID(rctx) != root.SpanContext().TraceID().String() {
		t.Errorf("Context = %q, want %q", tp, want)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Wait(t, ctx, func(s []otlptest.Span) bool { return len(s) == 2 })
	var failed otlptest.Span
	for _, s := range spans {
		if s.Name == "validate" {
			failed = s
		}
	}
	if !failed.StatusError || failed.Attributes["error.type"] != "_OTHER" || failed.ParentSpanID != root.SpanContext().SpanID().String() {
		t.Errorf("the failed child: %+v", failed)
	}
	if d := otlptest.Dump(spans); strings.Contains(d, "argument-value-5d1c") {
		t.Errorf("an error's text reached a span:\n%s", d)
	}
	if failed.Resource["service.name"] != "toolgate" || failed.Resource["service.version"] != "1.2.3" {
		t.Errorf("resource %v", failed.Resource)
	}
	if h := rcv.Headers(); len(h) == 0 || len(h[0]["x-tenant"]) != 1 || h[0]["x-tenant"][0] != "blue" {
		t.Errorf("export headers %v", h)
	}
}

// OP-9: a request's stages are attributes of its one span, each with the
// seconds it took; a stage begun and not done by the handler that passes
// the request on (a refused authentication) is reported all the same; a
// tools/call answered with isError fails the span with the conventions'
// error.type tool_error and names its outcome (an ok call's does not).
// A nil Request, an untraced request's, notes nothing and reads no clock.
func TestRequestStagesAreAttributes(t *testing.T) {
	var none *Request
	if !none.Now().IsZero() || none.Done(StageAuth) {
		t.Error("a nil Request read the clock or noted a stage")
	}
	none.Took(StagePolicy, time.Now())
	none.Begin(StageAuth)
	none.AuthRefused()
	none.Outcome("denied", true)
	if RequestOf(context.Background()) != nil {
		t.Error("a bare context holds a Request")
	}

	rcv := otlptest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := New(ctx, Settings{Endpoint: rcv.URL, SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, denied := range []bool{false, true} {
		var r Request
		sctx, span := p.Tracer().Start(ctx, "POST /mcp")
		sctx = WithRequest(sctx, &r)
		req := RequestOf(sctx)
		if req != &r {
			t.Fatal("RequestOf is not the Request WithRequest put in")
		}
		req.Begin(StageAuth)
		if !req.Done(StageAuth) || req.Done(StageAuth) {
			t.Error("Done did not end the begun stage exactly once")
		}
		ToolCall(sctx, "notes_search", "7")
		t0 := req.Now()
		req.Took(StagePolicy, t0)
		if denied {
			req.Outcome("denied", true)
		} else {
			req.Took(StageValidate, req.Now())
			req.Took(StageAudit, req.Now())
			req.Outcome("ok", false)
		}
		req.End(span, false)
	}
	var refused Request
	_, span := p.Tracer().Start(ctx, "POST /mcp")
	refused.Begin(StageAuth)
	if refused.Done(StageAuth) {
		refused.AuthRefused()
	}
	refused.End(span, false)
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Wait(t, ctx, func(s []otlptest.Span) bool { return len(s) == 3 })
	seen := map[string]bool{}
	for _, s := range spans {
		// An ok call's span names no outcome; a refused request is no call.
		outcome, named := s.Attributes["toolgate.call.outcome"]
		switch {
		case s.Name == "POST /mcp":
			outcome = ""
		case !named:
			outcome = "ok"
		}
		seen[outcome] = true
		want := map[string][]string{
			"ok":     {"auth", "policy", "validate", "audit"},
			"denied": {"auth", "policy"},
			"":       {"auth"},
		}[outcome]
		for _, stage := range []string{"auth", "policy", "validate", "confirm", "audit"} {
			_, has := s.Attributes["toolgate."+stage+".duration"]
			if has != slices.Contains(want, stage) {
				t.Errorf("%q (%s): stage %s reported %v: %v", s.Name, outcome, stage, has, s.Attributes)
			}
		}
		switch outcome {
		case "":
			if s.Name != "POST /mcp" || s.Attributes["toolgate.auth.outcome"] != "refused" || s.StatusError {
				t.Errorf("the refused request's span: %+v", s)
			}
		default:
			if s.Name != "tools/call notes_search" || s.Attributes["gen_ai.tool.name"] != "notes_search" || s.Attributes["jsonrpc.request.id"] != "7" {
				t.Errorf("a call's span: %+v", s)
			}
			if failed := outcome == "denied"; s.StatusError != failed || (s.Attributes["error.type"] == "tool_error") != failed {
				t.Errorf("the %s call's span failed %v: %v", outcome, s.StatusError, s.Attributes)
			}
		}
	}
	if !seen["ok"] || !seen["denied"] || !seen[""] {
		t.Errorf("spans %v", otlptest.Dump(spans))
	}
}
