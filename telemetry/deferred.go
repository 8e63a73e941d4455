package telemetry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Deferred is a request span not opened yet (OP-9). A request of revision
// 2026-07-28 may carry its caller's trace context in its body's _meta
// rather than in a header, and the body is read once, after
// authentication: the span opens when the body has been read (Resume),
// back-dated to the request's arrival, so that it continues the caller's
// trace. What ran before (the authentication) is in its Request, as for
// any request span.
type Deferred struct {
	mu     sync.Mutex
	tracer trace.Tracer
	name   string
	opts   []trace.SpanStartOption
	parent context.Context
	span   trace.Span
}

type deferredKey struct{}

// Defer stands for the span tracer would open as name with opts, as of
// now; ctx, returned with it, holds it for Resume.
func Defer(ctx context.Context, tracer trace.Tracer, name string, opts ...trace.SpanStartOption) (context.Context, *Deferred) {
	d := &Deferred{tracer: tracer, name: name, parent: ctx,
		opts: append(opts, trace.WithTimestamp(time.Now()))}
	return context.WithValue(ctx, deferredKey{}, d), d
}

// DeferredFrom is the span ctx defers; nil when none, or when it is open.
func DeferredFrom(ctx context.Context) *Deferred {
	d, _ := ctx.Value(deferredKey{}).(*Deferred)
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.span != nil {
		return nil
	}
	return d
}

// Resume opens the span ctx defers, a child of the W3C traceparent and
// tracestate given (a request's _meta's) when they are valid, and returns
// ctx holding it. ctx is returned as it is when it defers no span.
func Resume(ctx context.Context, traceparent, tracestate string) context.Context {
	d, _ := ctx.Value(deferredKey{}).(*Deferred)
	if d == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, d.open(traceparent, tracestate))
}

// Span is the deferred span, opened now without a caller's context if
// Resume did not open it.
func (d *Deferred) Span() trace.Span { return d.open("", "") }

func (d *Deferred) open(traceparent, tracestate string) trace.Span {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.span != nil {
		return d.span
	}
	parent := d.parent
	if traceparent != "" {
		parent = Propagator.Extract(parent, propagation.MapCarrier{"traceparent": traceparent, "tracestate": tracestate})
	}
	_, span := d.tracer.Start(parent, d.name, d.opts...)
	d.span = span
	return span
}
