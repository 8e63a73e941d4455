package gateway

import (
	"net/http"

	"github.com/toolgate/toolgate/internal/metrics"
)

// auditQueue is a store whose audit records wait in a queue before they are
// written (sqlitestore): its depth is a metric.
type auditQueue interface{ AuditQueueDepth() int }

// startMetrics follows the bus for /metrics unless the config turns it off
// (OP-7). It runs before the endpoints are built: their authentication
// reports refusals to it.
func (g *Gateway) startMetrics() {
	if !g.cfg.Gateway.Metrics.On() {
		return
	}
	opts := metrics.Options{Bus: g.reg.Bus()}
	if q, ok := g.store.(auditQueue); ok {
		opts.AuditQueueDepth = q.AuditQueueDepth
	}
	for _, e := range g.cfg.Endpoints {
		opts.Endpoints = append(opts.Endpoints, e.Path)
	}
	g.metrics = metrics.New(opts)
}

// mountMetrics serves /metrics on mux when metrics are on; otherwise the
// path is a 404 like any other unknown one.
func (g *Gateway) mountMetrics(mux *http.ServeMux) {
	if g.metrics != nil {
		mux.Handle("/metrics", g.metrics.Handler())
	}
}

// authRefused is the refusal hook of endpoint path's authentication; nil
// without metrics.
func (g *Gateway) authRefused(path string) func(reason string) {
	if g.metrics == nil {
		return nil
	}
	return g.metrics.AuthRefused(path)
}

// stopMetrics stops following the bus, once the last events are counted.
func (g *Gateway) stopMetrics() {
	if g.metrics != nil {
		g.metrics.Close()
	}
}

// Metrics is the gateway's metrics; nil when they are off or nothing is
// served.
func (g *Gateway) Metrics() *metrics.Metrics { return g.metrics }
