package gateway

import (
	"context"
	"net/http"
	"slices"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/telemetry"
)

// traceFlush bounds the last export at Close: a collector that is gone
// must not hold the shutdown.
const traceFlush = 5 * time.Second

// startTracing builds the tracer provider telemetry.traces asks for (OP-9);
// none when neither the config nor the environment names a collector.
func (g *Gateway) startTracing(ctx context.Context, cfg *config.Config) error {
	t := cfg.Telemetry.Traces
	headers := make(map[string]string, len(t.Headers))
	for k, v := range t.Headers {
		headers[k] = v.Reveal()
	}
	p, err := telemetry.New(ctx, telemetry.Settings{
		Endpoint: t.Endpoint, Protocol: t.Protocol, Headers: headers, SampleRatio: t.Ratio(),
		ServiceVersion: config.BuildVersion(),
		OnExportError: func(err error) {
			if err != nil {
				g.log.Warn("exporting traces failing; spans are dropped until the collector answers", "err", err)
				return
			}
			g.log.Info("exporting traces again")
		},
	})
	if err != nil {
		return err
	}
	g.traces = p
	return nil
}

// stopTracing exports what is still buffered, within traceFlush.
func (g *Gateway) stopTracing() {
	if g.traces == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), traceFlush)
	defer cancel()
	if err := g.traces.Shutdown(ctx); err != nil {
		g.log.Warn("exporting the last traces", "err", err)
	}
}

// traced opens the span of each request h serves (OP-9), continuing the
// caller's trace when the request carries a W3C traceparent. A request of
// revision 2026-07-28 without the header may carry it in its _meta: its
// span waits for the endpoint to read the body (telemetry.Resume). Without
// tracing it is h.
func (g *Gateway) traced(path string, h http.Handler) http.Handler {
	tracer := g.traces.Tracer()
	if tracer == nil {
		return h
	}
	names := map[string]string{}
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		names[m] = m + " " + path
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := telemetry.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		var attrBuf [3]attribute.KeyValue
		attrs := append(attrBuf[:0], semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(path))
		if v := r.Header.Get(mcpgo.HeaderProtocolVersion); v != "" && len(v) <= 32 {
			attrs = append(attrs, semconv.McpProtocolVersion(v))
		}
		name, ok := names[r.Method]
		if !ok {
			name = "HTTP " + path // a method of the client's invention is not a span name
		}
		var span trace.Span
		var deferred *telemetry.Deferred
		sw := &statusWriter{ResponseWriter: w}
		if r.Method == http.MethodPost && r.Header.Get("traceparent") == "" && mcpgo.IsModernProtocol(r.Header.Get(mcpgo.HeaderProtocolVersion)) {
			ctx, deferred = telemetry.Defer(ctx, tracer, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(slices.Clone(attrs)...))
		} else {
			ctx, span = telemetry.StartKind(ctx, tracer, name, trace.SpanKindServer, attrs...)
		}
		if deferred != nil || span.IsRecording() {
			// The request's stages (authentication, policy …) are
			// noted in sw.req and end up as attributes of its one
			// span; an unsampled request notes nothing.
			ctx = telemetry.WithRequest(ctx, &sw.req)
		}
		defer func() {
			if deferred != nil {
				span = deferred.Span()
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			sw.req.End(span, status >= 500, semconv.HTTPResponseStatusCode(status))
		}()
		h.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// statusWriter notes the status a handler answered with; Flush and Unwrap
// keep event streams and response controllers working through it.
type statusWriter struct {
	http.ResponseWriter
	status int
	req    telemetry.Request // the request span's, for its End
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// authStarts notes when the endpoint's authentication, next, starts, on
// the request span's Request; if next returns without passing the request
// on (authPassed), it was refused. The authentication is the span's
// attribute, not a span (OP-9).
func authStarts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := telemetry.RequestOf(r.Context())
		if req == nil {
			next.ServeHTTP(w, r)
			return
		}
		req.Begin(telemetry.StageAuth)
		next.ServeHTTP(w, r)
		if req.Done(telemetry.StageAuth) {
			req.AuthRefused()
		}
	})
}

// authPassed ends the authentication's stage as the request,
// authenticated, reaches next.
func authPassed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		telemetry.RequestOf(r.Context()).Done(telemetry.StageAuth)
		next.ServeHTTP(w, r)
	})
}
