// Package metrics serves the gateway's Prometheus metrics at /metrics (OP-7).
//
// Counters and histograms follow the gateway's event bus: calls as they are
// audited (core.CallFinished), sessions, operator decisions, refreshes and
// upstream transitions. Gauges of current state (upstreams, live sessions,
// pending confirmations, drops, collisions, the audit queue) are read at
// scrape time, so they are never out of step with the console. Nothing is
// labelled with an argument value, an actor, a token or an error text: labels
// are tool, upstream and endpoint names from the configuration and the
// registry, and small fixed sets (outcome, state, reason).
//
// Cardinality is bounded: a call's tool label is its registry name only if
// the tool is registered when the call is counted, and only for the first
// MaxToolLabels names seen over the gateway's life; every other call is
// counted under tool="other". Upstream labels are the configured upstreams'
// names, and anything else is "other" too.
package metrics

import (
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolgate/toolgate/core"
)

// DefaultMaxToolLabels bounds the distinct tool label values: a gateway
// importing a few thousand tools keeps its series in the hundreds of
// thousands at worst, which one Prometheus handles.
const DefaultMaxToolLabels = 2000

// Other is the label value of everything outside the bounded label sets. A
// tool or upstream actually named "other" is counted there too.
const Other = "other"

// subscriptionBuffer is the bus buffer: a 2,000-tool import is 2,000
// events in one burst, and a lost event is a call not counted.
const subscriptionBuffer = 4096

// catchUpWait bounds how long a scrape waits for the metrics to reflect
// every event published before it.
const catchUpWait = time.Second

// Options configure New. Bus is required.
type Options struct {
	// Bus is the gateway's event bus; the metrics follow it.
	Bus *core.Bus
	// AuditQueueDepth reports the audit records waiting to be written;
	// nil leaves toolgate_audit_queue_depth out (a store without a queue).
	AuditQueueDepth func() int
	// Endpoints are the served endpoints' paths: each shows its live
	// sessions, 0 included.
	Endpoints []string
	// MaxToolLabels bounds the tool label values; 0 means
	// DefaultMaxToolLabels.
	MaxToolLabels int
	// Buffer is the bus subscription's buffer; 0 means 4096 events.
	Buffer int
}

// Metrics is one gateway's metrics and their registry (not the global one,
// so two gateways in one process, as in tests, never share a series).
// Its methods are safe for concurrent use.
type Metrics struct {
	bus *core.Bus
	sub *core.BusSubscription
	reg *prometheus.Registry
	// registered are the collectors on reg, so their descriptions (HELP
	// texts included) can be read whether or not they have a series yet.
	registered []prometheus.Collector
	handler    http.Handler
	maxTools   int
	done       chan struct{}

	calls          *prometheus.CounterVec
	findings       *prometheus.CounterVec
	callDuration   *prometheus.HistogramVec
	sessionsOpened *prometheus.CounterVec
	sessionsEnded  *prometheus.CounterVec
	decisions      *prometheus.CounterVec
	approvalWait   *prometheus.HistogramVec
	refreshes      *prometheus.CounterVec
	refreshSize    *prometheus.HistogramVec
	refreshTools   *prometheus.CounterVec
	transitions    *prometheus.CounterVec
	authRefusals   *prometheus.CounterVec
	refusals       *prometheus.CounterVec
	eventsLost     prometheus.Counter

	// seen is the Seq of the last event the run goroutine handled.
	seen   atomic.Uint64
	closed atomic.Bool

	mu      sync.Mutex
	waiters int
	caught  chan struct{} // closed and replaced after an event when waiters > 0

	// Owned by the run goroutine.
	lost      uint64                    // the subscription's drops already counted
	tools     map[string]bool           // registered now
	labelled  map[string]bool           // tool label values in use
	upstreams map[string]core.ConnState // configured, with their last state
	pending   map[string]time.Time      // waiting confirmations: when they began
}

// New registers the metrics and starts following opts.Bus. Close stops it.
func New(opts Options) *Metrics {
	m := &Metrics{
		bus: opts.Bus, reg: prometheus.NewRegistry(), maxTools: opts.MaxToolLabels,
		done: make(chan struct{}), caught: make(chan struct{}),
		tools: map[string]bool{}, labelled: map[string]bool{},
		upstreams: map[string]core.ConnState{}, pending: map[string]time.Time{},
	}
	if m.maxTools <= 0 {
		m.maxTools = DefaultMaxToolLabels
	}
	f := factory{m}
	m.calls = f.counter("toolgate_calls_total", "Tool calls served, by tool, upstream and outcome (ok, error, failed, invalid, refused, preview, not-found, outcome-unknown).", "tool", "upstream", "outcome")
	m.callDuration = f.histogram("toolgate_call_duration_seconds", "Time from a tools/call reaching the gateway to its answer, by tool, upstream and outcome.",
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}, "tool", "upstream", "outcome")
	m.sessionsOpened = f.counter("toolgate_sessions_started_total", "Client sessions opened, by endpoint.", "endpoint")
	m.sessionsEnded = f.counter("toolgate_sessions_ended_total", "Client sessions ended, by endpoint and by whom (client or operator).", "endpoint", "by")
	m.decisions = f.counter("toolgate_confirmations_decided_total", "Confirmations that waited for an operator, by decision (approved, rejected, timed-out, abandoned).", "decision")
	m.approvalWait = f.histogram("toolgate_approval_wait_seconds", "How long a confirmation waited for an operator, by decision.",
		[]float64{1, 5, 10, 30, 60, 120, 300, 600, 1800}, "decision")
	m.findings = f.counter("toolgate_inspect_findings_total", "What inspection found in calls' arguments and results, by kind (secrets, pii, injection, links, hook) and action taken (flag, redact, block, approve).", "type", "action")
	m.refreshes = f.counter("toolgate_refreshes_total", "Tool lists applied from an upstream (the first import and every refresh), by upstream.", "upstream")
	m.refreshSize = f.histogram("toolgate_refresh_diff_tools", "Tools added, removed or changed by one applied refresh, by upstream.",
		[]float64{0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500}, "upstream")
	m.refreshTools = f.counter("toolgate_refresh_tools_total", "Tools added, removed or changed by refreshes, by upstream and change.", "upstream", "change")
	m.refusals = f.counter("toolgate_policy_refusals_total", "Calls refused by a policy rule (denied) or a limit (limited), by the rule or limit id.", "rule", "outcome")
	m.transitions = f.counter("toolgate_upstream_transitions_total", "Upstream connection state changes, by upstream and the state entered.", "upstream", "state")
	m.authRefusals = f.counter("toolgate_auth_refusals_total", "Requests refused by authentication, by endpoint and reason.", "endpoint", "reason")
	m.eventsLost = prometheus.NewCounter(prometheus.CounterOpts{Name: "toolgate_metrics_events_lost_total",
		Help: "Gateway events the metrics fell too far behind to count: calls among them are missing from the counters."})
	m.register(m.reg, m.eventsLost, &stateCollector{m: m, queueDepth: opts.AuditQueueDepth, endpoints: opts.Endpoints})
	// The runtime's and the process's own metrics, under the same prefix as
	// the rest, for memory, goroutines and file descriptors.
	own := prometheus.WrapRegistererWithPrefix("toolgate_", m.reg)
	m.register(own, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 4, Timeout: 10 * time.Second,
		// Exemplars (the calls' trace ids) exist only in OpenMetrics.
		EnableOpenMetrics: true,
	})
	buffer := opts.Buffer
	if buffer <= 0 {
		buffer = subscriptionBuffer
	}
	snap, sub := m.bus.Subscribe(buffer)
	m.sub = sub
	m.resync(snap)
	go m.run()
	return m
}

// Registry is the metrics' own registry.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format. A scrape first
// waits (briefly) until every event published before it is counted, so a
// call answered before the scrape is in it.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.catchUp(r)
		m.handler.ServeHTTP(w, r)
	})
}

// AuthRefused returns the hook that counts the refusals of endpoint's
// authentication (auth.EndpointAuth.OnRefusal). reason is one of the auth
// package's fixed refusal reasons.
func (m *Metrics) AuthRefused(endpoint string) func(reason string) {
	return func(reason string) { m.authRefusals.WithLabelValues(endpoint, reason).Inc() }
}

// Close stops following the bus, after counting what was published before.
// The handler keeps serving the last values.
func (m *Metrics) Close() {
	if m.closed.Swap(true) {
		<-m.done
		return
	}
	m.sub.Close()
	<-m.done
}

func (m *Metrics) run() {
	defer close(m.done)
	// A closed subscription still delivers what it had buffered.
	for ev := range m.sub.C() {
		if _, ok := ev.Data.(core.Resync); ok {
			// Dropped counts since the subscription began.
			dropped := m.sub.Dropped()
			m.eventsLost.Add(float64(dropped - m.lost))
			m.lost = dropped
			m.resync(m.sub.Resync())
			m.caughtUp()
			continue
		}
		m.handle(ev)
		m.seen.Store(ev.Seq)
		m.caughtUp()
	}
}

// caughtUp wakes the scrapes waiting for the events handled so far.
func (m *Metrics) caughtUp() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.waiters > 0 {
		close(m.caught)
		m.caught = make(chan struct{})
	}
}

// catchUp waits until the events published before r are handled, the
// metrics are closed, r ends or catchUpWait passes.
func (m *Metrics) catchUp(r *http.Request) {
	target := m.bus.Seq()
	timer := time.NewTimer(catchUpWait)
	defer timer.Stop()
	m.mu.Lock()
	m.waiters++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.waiters--
		m.mu.Unlock()
	}()
	for {
		m.mu.Lock()
		caught := m.caught
		m.mu.Unlock()
		if m.seen.Load() >= target || m.closed.Load() {
			return
		}
		select {
		case <-caught:
		case <-m.done:
			return
		case <-timer.C:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// resync takes snap as the state the events that follow change.
func (m *Metrics) resync(snap core.Snapshot) {
	clear(m.tools)
	for _, t := range snap.Tools {
		m.tools[t.Name] = true
	}
	clear(m.upstreams)
	for _, u := range snap.Upstreams {
		m.upstreams[u.Name] = u.State
	}
	clear(m.pending)
	for _, p := range snap.Pending {
		m.pending[p.ID] = p.Created
	}
	m.seen.Store(snap.Seq)
}

func (m *Metrics) handle(ev core.Event) {
	switch d := ev.Data.(type) {
	case core.ToolRegistered:
		m.tools[d.Tool.Name] = true
	case core.ToolUpdated:
		delete(m.tools, d.Old.Name)
		m.tools[d.New.Name] = true
	case core.ToolUnregistered:
		delete(m.tools, d.Tool.Name)
	case core.CallFinished:
		r := d.Record
		if r.Outcome == core.AuditIntent {
			return // not a finished call: its outcome follows
		}
		labels := []string{m.toolLabel(r.Tool), m.upstreamLabel(r.Source), r.Outcome}
		m.calls.WithLabelValues(labels...).Inc()
		obs := m.callDuration.WithLabelValues(labels...)
		if eo, ok := obs.(prometheus.ExemplarObserver); ok && d.TraceID != "" {
			// The call's trace, one click from its latency (OP-9).
			eo.ObserveWithExemplar(r.Latency.Seconds(), prometheus.Labels{"trace_id": d.TraceID})
		} else {
			obs.Observe(r.Latency.Seconds())
		}
		if r.Findings != "" {
			m.countFindings(r.Findings)
		}
		if (r.Outcome == "denied" || r.Outcome == "limited") && r.Rule != "" {
			// Rule ids come from the config: a bounded label set.
			m.refusals.WithLabelValues(r.Rule, r.Outcome).Inc()
		}
	case core.UpstreamChanged:
		st := d.Status
		if st.Removed {
			delete(m.upstreams, st.Name) // its calls count as "other" from now on
			break
		}
		if prev, ok := m.upstreams[st.Name]; !ok || prev != st.State {
			m.transitions.WithLabelValues(st.Name, string(st.State)).Inc()
		}
		m.upstreams[st.Name] = st.State
	case core.RefreshApplied:
		diff := d.Diff
		up := m.upstreamLabel(diff.Upstream)
		m.refreshes.WithLabelValues(up).Inc()
		m.refreshSize.WithLabelValues(up).Observe(float64(len(diff.Added) + len(diff.Removed) + len(diff.Changed)))
		m.refreshTools.WithLabelValues(up, "added").Add(float64(len(diff.Added)))
		m.refreshTools.WithLabelValues(up, "removed").Add(float64(len(diff.Removed)))
		m.refreshTools.WithLabelValues(up, "changed").Add(float64(len(diff.Changed)))
	case core.SessionStarted:
		m.sessionsOpened.WithLabelValues(d.Session.Endpoint).Inc()
	case core.SessionEnded:
		by := "client"
		if d.ByOperator {
			by = "operator"
		}
		m.sessionsEnded.WithLabelValues(d.Session.Endpoint, by).Inc()
	case core.ConfirmationPending:
		m.pending[d.Pending.ID] = d.Pending.Created
	case core.ConfirmationDecided:
		decision := decisionLabel(d.Decision)
		m.decisions.WithLabelValues(decision).Inc()
		if began, ok := m.pending[d.ID]; ok {
			delete(m.pending, d.ID)
			m.approvalWait.WithLabelValues(decision).Observe(max(ev.Time.Sub(began), 0).Seconds())
		}
	}
}

// toolLabel is name if the tool is registered and has, or may take, one of
// the bounded tool label values; Other otherwise.
func (m *Metrics) toolLabel(name string) string {
	if !m.tools[name] {
		return Other
	}
	if !m.labelled[name] {
		if len(m.labelled) >= m.maxTools {
			return Other
		}
		m.labelled[name] = true
	}
	return name
}

// upstreamLabel is name if it is a configured upstream's, "native" for the
// gateway's own tools, Other otherwise.
func (m *Metrics) upstreamLabel(name string) string {
	if name == "" || name == core.NativeSource {
		return core.NativeSource
	}
	if _, ok := m.upstreams[name]; ok {
		return name
	}
	return Other
}

func decisionLabel(d core.Decision) string {
	switch d {
	case core.DecisionApprove, core.DecisionReject, core.DecisionTimeout, core.DecisionGone:
		return string(d)
	}
	return Other
}

// register registers cs on r (m.reg, or a wrapper of it) and remembers
// them. Only New calls it, before the metrics are shared.
func (m *Metrics) register(r prometheus.Registerer, cs ...prometheus.Collector) {
	r.MustRegister(cs...)
	m.registered = append(m.registered, cs...)
}

// factory registers vectors on one gateway's registry.
type factory struct{ m *Metrics }

func (f factory) counter(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.m.register(f.m.reg, v)
	return v
}

func (f factory) histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.m.register(f.m.reg, v)
	return v
}

// countFindings counts an audit record's findings by kind and action
// (IN-2); both come from fixed sets, so the labels stay bounded.
func (m *Metrics) countFindings(text string) {
	var fs []struct {
		Type   string `json:"type"`
		Action string `json:"action"`
	}
	if json.Unmarshal([]byte(text), &fs) != nil {
		return
	}
	for _, f := range fs {
		m.findings.WithLabelValues(f.Type, f.Action).Inc()
	}
}
