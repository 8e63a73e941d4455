package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/coretest"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/metrics/metricstest"
	"github.com/toolgate/toolgate/internal/waittest"
)

// TestMain fails the run if any goroutine outlives the package's tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a registry and importer over in-memory upstreams, with metrics
// following their bus.
type rig struct {
	reg *core.Registry
	im  *upstreams.Importer
	m   *metrics.Metrics
}

// named is an in-memory upstream under its configured name.
type named struct {
	name string
	up   *coretest.FakeUpstream
}

func fake(name string, tools ...core.RemoteTool) named {
	return named{name, coretest.NewFakeUpstream(name, tools...)}
}

func newRig(t *testing.T, opts metrics.Options, ups ...named) *rig {
	t.Helper()
	reg := core.NewRegistry(nil)
	var specs []upstreams.UpstreamSpec
	for _, u := range ups {
		specs = append(specs, upstreams.UpstreamSpec{Name: u.name, Prefix: u.name, Transport: "fake", Upstream: u.up})
	}
	im := upstreams.NewImporter(reg, specs, &upstreams.ImporterOptions{NoBackground: true, Backoff: func(int) time.Duration { return 0 }})
	opts.Bus = reg.Bus()
	m := metrics.New(opts)
	t.Cleanup(func() {
		_ = im.Close()
		m.Close()
	})
	return &rig{reg: reg, im: im, m: m}
}

// scrape GETs /metrics and parses it as the Prometheus text format.
func scrape(t *testing.T, m *metrics.Metrics) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("/metrics Content-Type %q, want the text format", ct)
	}
	text := rec.Body.String()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("/metrics does not parse as Prometheus text: %v\n%s", err, text)
	}
	return fams, text
}

// value is metricstest.Value.
var value = metricstest.Value

func wantValue(t *testing.T, fams map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	t.Helper()
	got, ok := value(fams, name, labels...)
	if !ok {
		t.Errorf("%s%v: no such series; the family has %s", name, labels, seriesOf(fams[name]))
		return
	}
	if got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

func seriesOf(f *dto.MetricFamily) string {
	var out []string
	for _, m := range f.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		out = append(out, "{"+strings.Join(ls, ",")+"}")
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}

// called is what the endpoint publishes when it has answered a call.
func called(tool, source, outcome string, latency time.Duration) core.CallFinished {
	return core.CallFinished{Record: core.AuditRecord{Tool: tool, Source: source, Outcome: outcome, Latency: latency, ActorID: "alice"}}
}

// OP-7: every family is a toolgate_ one, passes the Prometheus linter, and
// the output parses as the text format.
func TestExpositionOP7(t *testing.T) {
	r := newRig(t, metrics.Options{AuditQueueDepth: func() int { return 3 }}, fake("notes", coretest.FakeTool("search", "Search", "")))
	coretest.Must(t, r.im.Start(context.Background()))
	r.reg.Bus().Publish(called("notes_search", "notes", "ok", 20*time.Millisecond))
	fams, _ := scrape(t, r.m)
	for name := range fams {
		if !strings.HasPrefix(name, "toolgate_") {
			t.Errorf("family %s does not start with toolgate_", name)
		}
	}
	for _, name := range []string{"toolgate_go_goroutines", "toolgate_process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	wantValue(t, fams, 3, "toolgate_audit_queue_depth")
	problems, err := testutil.GatherAndLint(r.m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "toolgate_go_") || strings.HasPrefix(p.Metric, "toolgate_process_") {
			continue // the runtime's own, as client_golang names them
		}
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// OP-7: calls are counted by tool, upstream and outcome, with their
// latency; a scrape right after a call already shows it.
func TestCallsOP7(t *testing.T) {
	r := newRig(t, metrics.Options{}, fake("notes", coretest.FakeTool("search", "Search", ""), coretest.FakeTool("create", "Create", "")))
	coretest.Must(t, r.im.Start(context.Background()))
	bus := r.reg.Bus()
	bus.Publish(called("notes_search", "notes", "ok", 20*time.Millisecond))
	bus.Publish(called("notes_search", "notes", "ok", 3*time.Second))
	bus.Publish(called("notes_search", "notes", "invalid", time.Millisecond))
	bus.Publish(called("notes_create", "notes", "preview", time.Millisecond))
	// The record of a confirmed action's intent is not a finished call.
	bus.Publish(called("notes_create", "notes", core.AuditIntent, 0))
	fams, _ := scrape(t, r.m)
	wantValue(t, fams, 2, "toolgate_calls_total", "tool", "notes_search", "upstream", "notes", "outcome", "ok")
	wantValue(t, fams, 1, "toolgate_calls_total", "tool", "notes_search", "upstream", "notes", "outcome", "invalid")
	wantValue(t, fams, 1, "toolgate_calls_total", "tool", "notes_create", "upstream", "notes", "outcome", "preview")
	if _, ok := value(fams, "toolgate_calls_total", "tool", "notes_create", "upstream", "notes", "outcome", core.AuditIntent); ok {
		t.Error("an intent record was counted as a call")
	}
	h := histogramOf(t, fams, "toolgate_call_duration_seconds", "tool", "notes_search", "upstream", "notes", "outcome", "ok")
	if h.GetSampleCount() != 2 || h.GetSampleSum() < 3.02 || h.GetSampleSum() > 3.0201 {
		t.Errorf("latency histogram: %d samples, sum %v; want 2 and 3.02", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == 0.025 && b.GetCumulativeCount() != 1 {
			t.Errorf("bucket le=0.025 holds %d, want 1", b.GetCumulativeCount())
		}
	}
}

func histogramOf(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Histogram {
	t.Helper()
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if want[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		if m.Histogram != nil {
			return m.Histogram
		}
	}
	t.Fatalf("%s%v: no such histogram; the family has %s", name, labels, seriesOf(fams[name]))
	return nil
}

// OP-7: the tool label is bounded. Only a registered tool gets its own
// label value, and only the first MaxToolLabels of them; every other call
// is counted under "other", as is an upstream that is not configured.
func TestToolLabelsBoundedOP7(t *testing.T) {
	r := newRig(t, metrics.Options{MaxToolLabels: 2}, fake("up",
		coretest.FakeTool("a", "A", ""), coretest.FakeTool("b", "B", ""), coretest.FakeTool("c", "C", "")))
	coretest.Must(t, r.im.Start(context.Background()))
	bus := r.reg.Bus()
	for _, name := range []string{"up_a", "up_b", "up_a", "up_c", "ghost"} {
		bus.Publish(called(name, "up", "ok", time.Millisecond))
	}
	bus.Publish(called("up_a", "not-configured", "ok", time.Millisecond))
	fams, _ := scrape(t, r.m)
	wantValue(t, fams, 2, "toolgate_calls_total", "tool", "up_a", "upstream", "up", "outcome", "ok")
	wantValue(t, fams, 1, "toolgate_calls_total", "tool", "up_b", "upstream", "up", "outcome", "ok")
	wantValue(t, fams, 2, "toolgate_calls_total", "tool", metrics.Other, "upstream", "up", "outcome", "ok")
	wantValue(t, fams, 1, "toolgate_calls_total", "tool", "up_a", "upstream", metrics.Other, "outcome", "ok")
	if n := len(fams["toolgate_calls_total"].GetMetric()); n != 4 {
		t.Errorf("%d call series, want 4: %s", n, seriesOf(fams["toolgate_calls_total"]))
	}

	// A tool that left the registry keeps the series it had, and a new one
	// does not get a label value past the bound.
	coretest.Must(t, r.reg.Unregister("up", "up_b"))
	bus.Publish(called("up_b", "up", "ok", time.Millisecond))
	fams, _ = scrape(t, r.m)
	wantValue(t, fams, 1, "toolgate_calls_total", "tool", "up_b", "upstream", "up", "outcome", "ok")
	wantValue(t, fams, 3, "toolgate_calls_total", "tool", metrics.Other, "upstream", "up", "outcome", "ok")
}

// OP-7: upstream state, last latency and tools, refreshes with their diff
// sizes, drops and collisions.
func TestUpstreamsAndRefreshesOP7(t *testing.T) {
	notes := fake("notes",
		coretest.FakeTool("search", "Search", ""),
		coretest.FakeTool("broken", "bad schema", `{"type":"object","properties":{"n":{"type":"integr"}}}`))
	down := fake("down")
	for range 10 {
		down.up.FailConnect(errors.New("connection refused"))
	}
	r := newRig(t, metrics.Options{}, notes, down)
	_ = r.im.Start(context.Background())
	fams, _ := scrape(t, r.m)
	for _, s := range []string{"disconnected", "connecting", "connected", "failed"} {
		want := 0.0
		if s == "connected" {
			want = 1
		}
		wantValue(t, fams, want, "toolgate_upstream_state", "upstream", "notes", "state", s)
	}
	wantValue(t, fams, 1, "toolgate_upstream_state", "upstream", "down", "state", "failed")
	wantValue(t, fams, 1, "toolgate_upstream_tools", "upstream", "notes")
	wantValue(t, fams, 1, "toolgate_tools_registered", "upstream", "notes")
	wantValue(t, fams, 1, "toolgate_tools_dropped", "upstream", "notes", "kind", "schema")
	wantValue(t, fams, 1, "toolgate_upstream_transitions_total", "upstream", "notes", "state", "connected")
	// Each failed attempt is a transition into connecting and one into failed.
	attempts := float64(down.up.ConnectAttempts())
	wantValue(t, fams, attempts, "toolgate_upstream_transitions_total", "upstream", "down", "state", "connecting")
	wantValue(t, fams, attempts, "toolgate_upstream_transitions_total", "upstream", "down", "state", "failed")
	if _, ok := value(fams, "toolgate_upstream_latency_seconds", "upstream", "notes"); !ok {
		t.Errorf("no latency for notes: %s", seriesOf(fams["toolgate_upstream_latency_seconds"]))
	}
	wantValue(t, fams, 1, "toolgate_refreshes_total", "upstream", "notes")
	wantValue(t, fams, 1, "toolgate_refresh_tools_total", "upstream", "notes", "change", "added")

	// A refresh that adds two tools and removes one.
	notes.up.SetTools(coretest.FakeTool("list", "List", ""), coretest.FakeTool("get", "Get", ""))
	if _, err := r.im.Refresh(context.Background(), "notes"); err != nil {
		t.Fatal(err)
	}
	fams, _ = scrape(t, r.m)
	wantValue(t, fams, 2, "toolgate_refreshes_total", "upstream", "notes")
	wantValue(t, fams, 3, "toolgate_refresh_tools_total", "upstream", "notes", "change", "added")
	wantValue(t, fams, 1, "toolgate_refresh_tools_total", "upstream", "notes", "change", "removed")
	h := histogramOf(t, fams, "toolgate_refresh_diff_tools", "upstream", "notes")
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 4 {
		t.Errorf("refresh diff sizes: %d refreshes, %v tools; want 2 and 1+3", h.GetSampleCount(), h.GetSampleSum())
	}
	wantValue(t, fams, 2, "toolgate_tools_registered", "upstream", "notes")
	if _, ok := value(fams, "toolgate_tools_dropped", "upstream", "notes", "kind", "schema"); ok {
		t.Error("the dropped tool is still counted after a listing without it")
	}
}

// OP-7: collisions are counted by the upstream that was refused the name.
func TestCollisionsOP7(t *testing.T) {
	a := coretest.NewFakeUpstream("a", coretest.FakeTool("search", "a's", ""))
	b := coretest.NewFakeUpstream("b", coretest.FakeTool("search", "b's", ""))
	reg := core.NewRegistry(nil)
	specs := []upstreams.UpstreamSpec{
		{Name: "a", Transport: "fake", Upstream: a}, // no prefix: both claim "search"
		{Name: "b", Transport: "fake", Upstream: b},
	}
	im := upstreams.NewImporter(reg, specs, &upstreams.ImporterOptions{NoBackground: true})
	m := metrics.New(metrics.Options{Bus: reg.Bus()})
	t.Cleanup(func() {
		_ = im.Close()
		m.Close()
	})
	coretest.Must(t, im.Start(context.Background()))
	fams, _ := scrape(t, m)
	wantValue(t, fams, 1, "toolgate_tool_collisions", "upstream", "b")
	if _, ok := value(fams, "toolgate_tool_collisions", "upstream", "a"); ok {
		t.Error("the upstream that kept the name is counted as refused")
	}
}

// OP-7: live sessions per endpoint (0 included), and sessions started and
// ended by whom.
func TestSessionsOP7(t *testing.T) {
	bus := core.NewBus()
	sessions := core.NewSessions(bus)
	sessions.SetEnder("/mcp", func(string) error { return nil })
	m := metrics.New(metrics.Options{Bus: bus, Endpoints: []string{"/mcp", "/admin"}})
	defer m.Close()
	for _, id := range []string{"s1", "s2", "s3"} {
		sessions.Add(core.Session{ID: id, Endpoint: "/mcp", Actor: core.Actor{ID: "alice"}})
	}
	sessions.Remove("s1")
	coretest.Must(t, sessions.End("s2"))
	fams, _ := scrape(t, m)
	wantValue(t, fams, 1, "toolgate_sessions", "endpoint", "/mcp")
	wantValue(t, fams, 0, "toolgate_sessions", "endpoint", "/admin")
	wantValue(t, fams, 3, "toolgate_sessions_started_total", "endpoint", "/mcp")
	wantValue(t, fams, 1, "toolgate_sessions_ended_total", "endpoint", "/mcp", "by", "client")
	wantValue(t, fams, 1, "toolgate_sessions_ended_total", "endpoint", "/mcp", "by", "operator")
}

// OP-7, OP-5: the sessions other replicas serve, which this one lists from
// the shared store, are not counted here: each replica counts its own, so
// the sum over replicas is the total.
func TestSessionsElsewhereNotCountedOP7(t *testing.T) {
	bus := core.NewBus()
	sessions := core.NewSessions(bus)
	var elsewhere []core.Session
	bus.AddSnapshotPart(func(s *core.Snapshot) { s.Sessions = append(s.Sessions, elsewhere...) })
	m := metrics.New(metrics.Options{Bus: bus, Endpoints: []string{"/mcp"}})
	defer m.Close()
	sessions.Add(core.Session{ID: "mine", Endpoint: "/mcp", Actor: core.Actor{ID: "alice"}})
	bus.Commit(func() []core.EventData {
		elsewhere = []core.Session{{ID: "k1", Endpoint: "/mcp", Replica: "b", Elsewhere: true}, {ID: "k2", Endpoint: "/mcp", Replica: "c", Elsewhere: true}}
		return []core.EventData{core.SessionsElsewhere{Sessions: elsewhere}}
	})
	fams, _ := scrape(t, m)
	wantValue(t, fams, 1, "toolgate_sessions", "endpoint", "/mcp")
	wantValue(t, fams, 1, "toolgate_sessions_started_total", "endpoint", "/mcp")
}

// OP-7, CF-5: pending confirmations, decisions and how long they waited.
func TestApprovalsOP7(t *testing.T) {
	bus := core.NewBus()
	q := confirm.NewApprovalQueue(bus)
	m := metrics.New(metrics.Options{Bus: bus})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	decided := make(chan error, 2)
	go func() {
		decided <- q.Wait(ctx, core.PendingConfirmation{ID: "c1", Tool: "notes_create"}, time.Minute, nil)
	}()
	go func() {
		decided <- q.Wait(ctx, core.PendingConfirmation{ID: "c2", Tool: "notes_create"}, time.Minute, nil)
	}()
	waittest.Eventually(t, 30*time.Second, "the confirmations to become pending", func() bool { return len(q.Pending()) >= 2 })
	fams, _ := scrape(t, m)
	wantValue(t, fams, 2, "toolgate_confirmations_pending")
	coretest.Must(t, q.Approve("c1", "operator"))
	coretest.Must(t, q.Reject("c2", "operator", "no"))
	for range 2 {
		<-decided
	}
	fams, _ = scrape(t, m)
	wantValue(t, fams, 0, "toolgate_confirmations_pending")
	wantValue(t, fams, 1, "toolgate_confirmations_decided_total", "decision", "approved")
	wantValue(t, fams, 1, "toolgate_confirmations_decided_total", "decision", "rejected")
	wantValue(t, fams, 1, "toolgate_approval_wait_seconds", "decision", "approved")
	wantValue(t, fams, 1, "toolgate_approval_wait_seconds", "decision", "rejected")
}

// OP-7: auth refusals by endpoint and reason, through the hook the auth
// middleware calls.
func TestAuthRefusalsOP7(t *testing.T) {
	m := metrics.New(metrics.Options{Bus: core.NewBus()})
	defer m.Close()
	hook := m.AuthRefused("/mcp")
	hook("invalid_token")
	hook("invalid_token")
	hook("missing_token")
	fams, _ := scrape(t, m)
	wantValue(t, fams, 2, "toolgate_auth_refusals_total", "endpoint", "/mcp", "reason", "invalid_token")
	wantValue(t, fams, 1, "toolgate_auth_refusals_total", "endpoint", "/mcp", "reason", "missing_token")
}

// Close stops following the bus and is safe twice; the handler still
// answers, at once, with the last values.
func TestCloseOP7(t *testing.T) {
	bus := core.NewBus()
	m := metrics.New(metrics.Options{Bus: bus})
	m.Close()
	m.Close()
	bus.Publish(core.Warning{Source: "x", Message: "after close"})
	start := time.Now()
	scrape(t, m)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a scrape after Close took %v", d)
	}
}

// OP-7: metrics that fall behind the bus say so. Every call published is
// either counted or in toolgate_metrics_events_lost_total, however the
// subscriber's pace and the bursts meet, over several resyncs.
func TestEventsLostAreCountedOP7(t *testing.T) {
	// Nothing but the test publishes on this bus.
	bus := core.NewBus()
	m := metrics.New(metrics.Options{Bus: bus, Buffer: 1})
	defer m.Close()
	const bursts, perBurst = 5, 200
	for range bursts {
		// One commit: the events go out back to back under the bus lock.
		bus.Commit(func() []core.EventData {
			out := make([]core.EventData, perBurst)
			for i := range out {
				out[i] = called("ghost", "nowhere", "ok", time.Millisecond)
			}
			return out
		})
		scrape(t, m) // waits until the metrics caught up with the burst
	}
	fams, _ := scrape(t, m)
	counted, _ := value(fams, "toolgate_calls_total", "tool", metrics.Other, "upstream", metrics.Other, "outcome", "ok")
	lost, _ := value(fams, "toolgate_metrics_events_lost_total")
	if counted+lost != bursts*perBurst {
		t.Errorf("%v calls counted + %v events lost = %v, want the %d published", counted, lost, counted+lost, bursts*perBurst)
	}
	if lost == 0 {
		t.Logf("nothing was lost with a 1-event buffer: the subscriber kept up with %d-event bursts", perBurst)
	}
}

// IN-2: each finding of a finished call is counted by kind and action;
// the record's paths and detectors are not labels.
func TestInspectFindingsIN2(t *testing.T) {
	r := newRig(t, metrics.Options{}, fake("notes", coretest.FakeTool("search", "Search", "")))
	coretest.Must(t, r.im.Start(context.Background()))
	ev := called("notes_search", "notes", "ok", time.Millisecond)
	ev.Record.Findings = `[{"type":"secrets","detector":"github-token","path":"/content/0/text","action":"redact","in":"result"},` +
		`{"type":"pii","detector":"email","path":"/to","action":"flag","in":"arguments"},` +
		`{"type":"secrets","detector":"jwt","path":"/content/1/text","action":"redact","in":"result"}]`
	r.reg.Bus().Publish(ev)
	fams, text := scrape(t, r.m)
	wantValue(t, fams, 2, "toolgate_inspect_findings_total", "type", "secrets", "action", "redact")
	wantValue(t, fams, 1, "toolgate_inspect_findings_total", "type", "pii", "action", "flag")
	for _, s := range []string{"github-token", "/content/0/text"} {
		if strings.Contains(text, s) {
			t.Errorf("the exposition holds %q", s)
		}
	}
}
