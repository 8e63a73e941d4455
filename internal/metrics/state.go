package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/core"
)

// The gauges of current state, read from one bus snapshot per scrape: they
// agree with each other and with what the console shows at that moment.
var (
	upstreamStateDesc = prometheus.NewDesc("toolgate_upstream_state",
		"1 for the upstream's current connection state (disconnected, connecting, connected, failed), 0 for the others.",
		[]string{"upstream", "state"}, nil)
	upstreamLatencyDesc = prometheus.NewDesc("toolgate_upstream_latency_seconds",
		"The upstream's last measured round trip (connect, list or health check).", []string{"upstream"}, nil)
	upstreamToolsDesc = prometheus.NewDesc("toolgate_upstream_tools",
		"Tools the upstream's last listing imported.", []string{"upstream"}, nil)
	upstreamNextDesc = prometheus.NewDesc("toolgate_upstream_next_attempt_timestamp_seconds",
		"When the gateway next tries a failed upstream again (Unix time); absent when nothing is scheduled.", []string{"upstream"}, nil)
	toolsDesc = prometheus.NewDesc("toolgate_tools_registered",
		"Tools in the registry, by the upstream they come from.", []string{"upstream"}, nil)
	droppedDesc = prometheus.NewDesc("toolgate_tools_dropped",
		"Listed tools the last listing of an upstream left out, by upstream and why (filter, schema, pattern, invalid).",
		[]string{"upstream", "kind"}, nil)
	collisionsDesc = prometheus.NewDesc("toolgate_tool_collisions",
		"Tool names an upstream was refused because another claimant holds them, by the refused upstream.", []string{"upstream"}, nil)
	sessionsDesc = prometheus.NewDesc("toolgate_sessions",
		"Live client sessions, by endpoint.", []string{"endpoint"}, nil)
	parkedDesc = prometheus.NewDesc("toolgate_sessions_parked",
		"Live client sessions parked while idle (gateway.sessionParkAfter), by endpoint.", []string{"endpoint"}, nil)
	pendingDesc = prometheus.NewDesc("toolgate_confirmations_pending",
		"Confirmations waiting for an operator's decision.", nil, nil)
	auditQueueDesc = prometheus.NewDesc("toolgate_audit_queue_depth",
		"Audit records queued and not yet taken by the store's writer.", nil, nil)
)

var connStates = []core.ConnState{core.StateDisconnected, core.StateConnecting, core.StateConnected, core.StateFailed}

var dropKinds = []core.DropKind{core.DropFilter, core.DropSchema, core.DropPattern, core.DropInvalid}

// stateCollector reads the gateway's current state at scrape time.
type stateCollector struct {
	m          *Metrics
	queueDepth func() int
	endpoints  []string
}

var _ prometheus.Collector = (*stateCollector)(nil)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upstreamStateDesc, upstreamLatencyDesc, upstreamToolsDesc, upstreamNextDesc,
		toolsDesc, droppedDesc, collisionsDesc, sessionsDesc, parkedDesc, pendingDesc} {
		ch <- d
	}
	if c.queueDepth != nil {
		ch <- auditQueueDesc
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.m.bus.Snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	configured := make(map[string]bool, len(snap.Upstreams))
	for _, u := range snap.Upstreams {
		configured[u.Name] = true
		for _, s := range connStates {
			v := 0.0
			if u.State == s {
				v = 1
			}
			gauge(upstreamStateDesc, v, u.Name, string(s))
		}
		gauge(upstreamLatencyDesc, u.Latency.Seconds(), u.Name)
		gauge(upstreamToolsDesc, float64(u.Tools), u.Name)
		if !u.NextAttempt.IsZero() {
			gauge(upstreamNextDesc, float64(u.NextAttempt.UnixNano())/1e9, u.Name)
		}
	}
	upstream := func(name string) string {
		if name == "" || name == core.NativeSource {
			return core.NativeSource
		}
		if configured[name] {
			return name
		}
		return Other
	}

	tools := map[string]int{}
	for _, t := range snap.Tools {
		tools[upstream(t.Source)]++
	}
	for up, n := range tools {
		gauge(toolsDesc, float64(n), up)
	}
	type dropKey struct{ upstream, kind string }
	drops := map[dropKey]int{}
	for _, d := range snap.Dropped {
		kind := Other
		for _, k := range dropKinds {
			if d.Kind == k {
				kind = string(k)
			}
		}
		drops[dropKey{upstream(d.Source), kind}]++
	}
	for k, n := range drops {
		gauge(droppedDesc, float64(n), k.upstream, k.kind)
	}
	collisions := map[string]int{}
	for _, col := range snap.Collisions {
		collisions[upstream(col.Refused.Source)]++
	}
	for up, n := range collisions {
		gauge(collisionsDesc, float64(n), up)
	}
	sessions, parked := map[string]int{}, map[string]int{}
	for _, ep := range c.endpoints {
		sessions[ep], parked[ep] = 0, 0
	}
	for _, s := range snap.Sessions {
		if s.Elsewhere { // another replica's, which counts it itself
			continue
		}
		sessions[s.Endpoint]++
		if s.Parked {
			parked[s.Endpoint]++
		}
	}
	for ep, n := range sessions {
		gauge(sessionsDesc, float64(n), ep)
		gauge(parkedDesc, float64(parked[ep]), ep)
	}
	gauge(pendingDesc, float64(len(snap.Pending)))
	if c.queueDepth != nil {
		gauge(auditQueueDesc, float64(c.queueDepth()))
	}
}
