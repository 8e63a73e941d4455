package telemetry

import (
	"context"
	"errors"
	"fmt"
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
