// Package telemetry is toolgate's OpenTelemetry tracing (OP-9): the
// exporter built from the config, the W3C trace context read from callers
// and handed to upstreams, and the small helpers the serving code opens its
// spans with.
//
// No span is opened from a global: the request's span carries the provider
// that made it, and Start asks that one. Without tracing the context holds
// no span and every helper costs a context lookup.
package telemetry

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every toolgate span.
const ScopeName = "github.com/toolgate/toolgate"

// Settings are telemetry.traces, resolved.
type Settings struct {
	// Endpoint is the collector's URL; empty: the OTEL_EXPORTER_OTLP_*
	// environment's, and with none there, no tracing.
	Endpoint string
	// Protocol is "http" or "grpc"; empty: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
	// or OTEL_EXPORTER_OTLP_PROTOCOL, else http.
	Protocol string
	// Headers go with every export. Their values are secrets: they are
	// handed to the exporter and never logged.
	Headers map[string]string
	// SampleRatio is the share of new traces recorded; a caller's sampled
	// flag is followed.
	SampleRatio float64
	// ServiceVersion is the service.version resource attribute.
	ServiceVersion string
	// OnExportError is told when exports start failing (the error) and
	// when they succeed again (nil); nil: not told.
	OnExportError func(error)
}

// Enabled reports whether s, with the environment, asks for traces.
func (s Settings) Enabled() bool {
	return s.Endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

func (s Settings) protocol() string {
	p := s.Protocol
	if p == "" {
		p = os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	}
	if p == "" {
		p = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if p == "grpc" {
		return "grpc"
	}
	return "http"
}

// Provider is a running tracer provider and its exporter.
type Provider struct {
	tp     *tracerProvider
	tracer trace.Tracer
}

// New builds the provider s describes, or returns nil (no tracing) when
// s is not Enabled. Nothing is dialled yet: spans are exported in batches
// from the first one on.
func New(ctx context.Context, s Settings) (*Provider, error) {
	if !s.Enabled() {
		return nil, nil
	}
	client, err := newClient(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("telemetry.traces: %w", err)
	}
	attrs := []attribute.KeyValue{semconv.ServiceVersion(s.ServiceVersion)}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		attrs = append(attrs, semconv.ServiceName("toolgate"))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		res = resource.NewSchemaless(attrs...)
	}
	tp := newTracerProvider(newRecorder(client, res, s.OnExportError),
		sdktrace.ParentBased(sdktrace.TraceIDRatioBased(s.SampleRatio)), sdktrace.NewSpanLimits(), nil)
	return &Provider{tp: tp, tracer: tp.Tracer(ScopeName)}, nil
}

// newClient starts the OTLP client s asks for.
func newClient(ctx context.Context, s Settings) (otlptrace.Client, error) {
	var client otlptrace.Client
	if s.protocol() == "grpc" {
		var opts []otlptracegrpc.Option
		if s.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(s.Endpoint))
		}
		if len(s.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(s.Headers))
		}
		client = otlptracegrpc.NewClient(opts...)
	} else {
		var opts []otlptracehttp.Option
		if s.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(endpointURL(s.Endpoint)))
		}
		if len(s.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(s.Headers))
		}
		client = otlptracehttp.NewClient(opts...)
	}
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	return client, nil
}

// endpointURL is the traces URL of an OTLP/HTTP endpoint given as the
// collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is: a bare
// http://host:4318 gets the signal's path.
func endpointURL(endpoint string) string {
	rest := endpoint
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if !strings.Contains(rest, "/") {
		return strings.TrimSuffix(endpoint, "/") + "/v1/traces"
	}
	if strings.HasSuffix(rest, "/") && strings.Count(rest, "/") == 1 {
		return endpoint + "v1/traces"
	}
	return endpoint
}

// Tracer is the provider's tracer; nil for a nil provider.
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tracer
}

// Shutdown flushes what is buffered and stops the exporter, within ctx.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.rec.shutdown(ctx)
}

// flush exports what is held now, within ctx.
func (p *Provider) flush(ctx context.Context) error { return p.tp.rec.flush(ctx) }

// Propagator reads and writes the W3C traceparent and tracestate.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Start opens a child of the span in ctx, with the provider that made that
// span. Where ctx holds no recording span (tracing off, or this trace not
// sampled) it opens nothing and returns ctx and that span, on which End and
// the setters do nothing.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return tracerOf(parent).Start(ctx, name, opts...)
}

// tracerOf is the tracer to open a child of parent with: the one that
// opened parent when it is toolgate's.
func tracerOf(parent trace.Span) trace.Tracer {
	if p, ok := parent.(*span); ok {
		return p.tracer
	}
	return parent.TracerProvider().Tracer(ScopeName)
}

// End ends span, marking it failed when err is not nil. Only the error's
// kind is recorded, never its text: that may quote an argument.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, "")
		setAttributes(span, []attribute.KeyValue{semconv.ErrorTypeKey.String(ErrorType(err))})
	}
	span.End()
}

// ErrorType is the error.type of err: a word for a cancelled or timed-out
// call, else "_OTHER".
func ErrorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// TraceID is the id of the sampled trace ctx belongs to, in hex; empty
// when there is none.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// Context is ctx's trace context as W3C traceparent and tracestate values;
// empty when ctx holds none.
func Context(ctx context.Context) (traceparent, tracestate string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	// What propagation.TraceContext writes, without its map.
	tid, sid := sc.TraceID(), sc.SpanID()
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b[:]), sc.TraceState().String()
}

// SetHeaders puts a trace context on h as the W3C headers; nothing when
// traceparent is empty.
func SetHeaders(h map[string][]string, traceparent, tracestate string) {
	if traceparent == "" {
		return
	}
	h["Traceparent"] = []string{traceparent}
	if tracestate != "" {
		h["Tracestate"] = []string{tracestate}
	}
}

// ToolCall names the request span in ctx after the tools/call it serves,
// as the MCP conventions do ("tools/call {tool}"), with the tool's name
// and the request's id; never its arguments. Where ctx holds the span's
// Request (WithRequest) they are noted there, for its End.
func ToolCall(ctx context.Context, tool, requestID string) {
	if r, _ := ctx.Value(requestKey{}).(*Request); r != nil {
		r.mu.Lock()
		r.tool, r.requestID, r.toolCall = tool, requestID, true
		r.mu.Unlock()
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetName(string(mcpToolsCall) + " " + tool)
	span.SetAttributes(toolCallAttrs(tool, requestID)...)
}

func toolCallAttrs(tool, requestID string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.McpMethodNameToolsCall, semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(tool), semconv.JSONRPCRequestID(requestID)}
}

// Stage is a step a request goes through inside the gateway. The MCP
// conventions make a request one server span (OP-9): its steps are not
// spans of their own but attributes of that span, each the seconds the
// step took (a double, as OpenTelemetry's durations are).
type Stage uint8

// The stages a request's span reports.
const (
	StageAuth     Stage = iota // the endpoint's authentication
	StagePolicy                // policy rules and limits
	StageValidate              // the arguments against the tool's schema
	StageConfirm               // an action's confirm gate, an operator's wait included
	StageAudit                 // the audit record, written or queued
	stages
)

// The attribute each stage's duration is reported under.
var stageKeys = [stages]attribute.Key{
	"toolgate.auth.duration", "toolgate.policy.duration", "toolgate.validate.duration",
	"toolgate.confirm.duration", "toolgate.audit.duration",
}

// Attribute keys of the request span's that the conventions have none for.
const (
	// AuthOutcomeKey is "refused" on a request the authentication
	// turned away (its HTTP status says how).
	AuthOutcomeKey = attribute.Key("toolgate.auth.outcome")
	// OutcomeOfCallKey is a tools/call's outcome in the audit's words
	// (preview, denied, limited, refused, invalid, error …) when it is
	// not ok: an ok call's span has none.
	OutcomeOfCallKey = attribute.Key("toolgate.call.outcome")
)

// toolErrorType is the error.type the MCP conventions give a tools/call
// answered with isError: the JSON-RPC answer is a success, the call not.
const toolErrorType = "tool_error"

// Request is what a recorded request span learns while it is served (the
// tools/call it turns out to be, its stages' durations, its outcome), set
// on the span when it ends, with the attributes known only then.
// A nil *Request notes nothing: its methods are what the serving code
// calls whether the request is traced or not.
type Request struct {
	mu              sync.Mutex
	tool, requestID string
	toolCall        bool
	outcome         string
	failed          bool
	authRefused     bool
	begun           [stages]time.Time
	took            [stages]time.Duration
	noted           uint8 // a bit per stage whose duration is noted
}

type requestKey struct{}

// WithRequest returns ctx holding r, which ToolCall and the stages fill.
func WithRequest(ctx context.Context, r *Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestOf is the Request ctx holds; nil when the request is not traced.
func RequestOf(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}

// Now is the start of a stage of r, for Took: the zero time, and no clock
// read, when r is nil.
func (r *Request) Now() time.Time {
	if r == nil {
		return time.Time{}
	}
	return time.Now()
}

// Took notes that stage s of r ran from start to now; a stage run twice
// reports the sum.
func (r *Request) Took(s Stage, start time.Time) {
	if r == nil || start.IsZero() {
		return
	}
	d := time.Since(start)
	r.mu.Lock()
	r.took[s] += d
	r.noted |= 1 << s
	r.mu.Unlock()
}

// Begin notes now as the start of stage s, which Done ends: for a stage
// that starts in one handler and ends in another.
func (r *Request) Begin(s Stage) {
	if r == nil {
		return
	}
	now := time.Now()
	r.mu.Lock()
	r.begun[s] = now
	r.mu.Unlock()
}

// Done notes stage s's duration since Begin and reports whether it did:
// false when s was not begun, or is done already.
func (r *Request) Done(s Stage) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.begun[s].IsZero() {
		return false
	}
	r.took[s] += time.Since(r.begun[s])
	r.noted |= 1 << s
	r.begun[s] = time.Time{}
	return true
}

// AuthRefused notes that the authentication turned the request away.
func (r *Request) AuthRefused() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.authRefused = true
	r.mu.Unlock()
}

// Outcome notes a tools/call's outcome in the audit's words; failed: the
// caller was answered with isError, which marks the span failed with the
// conventions' error.type tool_error.
func (r *Request) Outcome(outcome string, failed bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.outcome, r.failed = outcome, failed
	r.mu.Unlock()
}

// End ends span, the request span r was noted for, with what r noted and
// attrs; failed when failed.
func (r *Request) End(span trace.Span, failed bool, attrs ...attribute.KeyValue) {
	if span.IsRecording() {
		buf := takeAttrs()
		r.mu.Lock()
		attrs = append(buf.kvs, attrs...)
		if r.toolCall {
			span.SetName(string(mcpToolsCall) + " " + r.tool)
			attrs = append(attrs, semconv.McpMethodNameToolsCall, semconv.GenAIOperationNameExecuteTool,
				semconv.GenAIToolName(r.tool), semconv.JSONRPCRequestID(r.requestID))
		}
		for s := range stages {
			if r.noted&(1<<s) != 0 {
				attrs = append(attrs, stageKeys[s].Float64(r.took[s].Seconds()))
			}
		}
		if r.authRefused {
			attrs = append(attrs, AuthOutcomeKey.String("refused"))
		}
		if r.outcome != "" && r.outcome != "ok" {
			attrs = append(attrs, OutcomeOfCallKey.String(r.outcome))
		}
		if r.failed {
			attrs = append(attrs, semconv.ErrorTypeKey.String(toolErrorType))
			failed = true
		}
		r.mu.Unlock()
		setAttributes(span, attrs)
		buf.put(attrs)
		if failed {
			span.SetStatus(codes.Error, "")
		}
	}
	span.End()
}

const mcpToolsCall = "tools/call"

// Attribute keys of toolgate's own, where the conventions have none.
const (
	UpstreamKey  = attribute.Key("toolgate.upstream.name")
	AttemptKey   = attribute.Key("toolgate.upstream.attempt")
	OutcomeKey   = attribute.Key("toolgate.upstream.outcome")
	TransportKey = attribute.Key("toolgate.upstream.transport")
)

// Attempt opens the span of one attempt of a tools/call on an upstream:
// which upstream, over which transport, the attempt's number from 1.
func Attempt(ctx context.Context, upstream, transport, remoteTool string, attempt int) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return StartKind(ctx, tracerOf(parent), mcpToolsCall+" "+remoteTool, trace.SpanKindClient,
		semconv.McpMethodNameToolsCall, semconv.GenAIToolName(remoteTool),
		UpstreamKey.String(upstream), TransportKey.String(transport), AttemptKey.Int(attempt))
}

// EndAttempt ends an attempt's span with its outcome: ok, tool_error (a
// result with isError, which the MCP conventions mark failed with
// error.type tool_error) or error.
func EndAttempt(span trace.Span, toolError bool, err error) {
	if span.IsRecording() {
		outcome := "ok"
		switch {
		case err != nil:
			outcome = "error"
		case toolError:
			outcome = toolErrorType
			span.SetStatus(codes.Error, "")
			setAttributes(span, []attribute.KeyValue{OutcomeKey.String(outcome), semconv.ErrorTypeKey.String(toolErrorType)})
			span.End()
			return
		}
		setAttributes(span, []attribute.KeyValue{OutcomeKey.String(outcome)})
	}
	End(span, err)
}

// Inject puts ctx's trace context on h as the W3C headers; nothing when
// ctx holds none.
func Inject(ctx context.Context, h map[string][]string) {
	traceparent, tracestate := Context(ctx)
	SetHeaders(h, traceparent, tracestate)
}

// Findings notes on the call's span what inspection found and did (IN-2):
// kinds, detectors, places and actions, one entry per finding in the same
// order in each list; never a value.
func Findings(ctx context.Context, types, detectors, paths, actions []string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.StringSlice("toolgate.inspect.types", types),
		attribute.StringSlice("toolgate.inspect.detectors", detectors),
		attribute.StringSlice("toolgate.inspect.paths", paths),
		attribute.StringSlice("toolgate.inspect.actions", actions),
	)
}
