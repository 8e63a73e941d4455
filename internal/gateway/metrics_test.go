package gateway_test

import (
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/toolgate/toolgate/internal/metrics/metricstest"
)

// metricsText GETs base/metrics, requires a 200 in the Prometheus text
// format, and returns it parsed and as text.
func metricsText(t *testing.T, base string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	code, body := httpGet(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v\n%s", err, body)
	}
	return fams, body
}

// sample is metricstest.Value.
var sample = metricstest.Value

func wantSample(t *testing.T, fams map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	t.Helper()
	got, ok := sample(fams, name, labels...)
	if !ok || got != want {
		var have []string
		for _, m := range fams[name].GetMetric() {
			have = append(have, m.String())
		}
		sort.Strings(have)
		t.Errorf("%s%v = %v (present %v), want %v; the family has:\n%s", name, labels, got, ok, want, strings.Join(have, "\n"))
	}
}

// OP-7: /metrics on the listen address parses as Prometheus text and moves
// with real calls through a real gateway: calls and latency by tool,
// upstream and outcome, the upstream's state, live sessions, auth refusals
// by reason, the audit queue. No argument value and no secret is in it.
func TestMetricsMoveWithCallsOP7(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	store := filepath.Join(t.TempDir(), "toolgate.db")
	g := newGateway(t, loadConfig(t, gatewayYAML(store, upstreamYAML("notes", notes, true))), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	base := "http://" + g.Addr()

	fams, _ := metricsText(t, base)
	wantSample(t, fams, 1, "toolgate_upstream_state", "upstream", "notes", "state", "connected")
	wantSample(t, fams, 4, "toolgate_upstream_tools", "upstream", "notes")
	wantSample(t, fams, 1, "toolgate_refreshes_total", "upstream", "notes")
	wantSample(t, fams, 0, "toolgate_sessions", "endpoint", "/mcp")
	wantSample(t, fams, 0, "toolgate_confirmations_pending")
	if _, ok := sample(fams, "toolgate_audit_queue_depth"); !ok {
		t.Error("no toolgate_audit_queue_depth for the SQLite store")
	}
	if _, ok := sample(fams, "toolgate_calls_total", "tool", "notes_search", "upstream", "notes", "outcome", "ok"); ok {
		t.Fatal("a call is counted before any was made")
	}

	// AU-4: refusals are counted by reason; the key presented is not shown.
	const wrongKey = "wrong-key-9d4e2b7a61c3"
	for _, key := range []string{"", wrongKey} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("key %q: %d, want 401", key, resp.StatusCode)
		}
	}

	// A distinctive argument value: it must reach the upstream and never
	// the metrics.
	const argValue = "arg-VALUE-5e7d1c9b"
	s := connect(t, ctx, base+"/mcp", testKey)
	waitServed(t, ctx, s, notesTools, nil)
	call(t, ctx, s, "notes_search", map[string]any{"query": argValue})
	fams, _ = metricsText(t, base)
	wantSample(t, fams, 1, "toolgate_calls_total", "tool", "notes_search", "upstream", "notes", "outcome", "ok")
	wantSample(t, fams, 1, "toolgate_call_duration_seconds", "tool", "notes_search", "upstream", "notes", "outcome", "ok")
	wantSample(t, fams, 1, "toolgate_sessions", "endpoint", "/mcp")
	wantSample(t, fams, 1, "toolgate_sessions_started_total", "endpoint", "/mcp")
	wantSample(t, fams, 1, "toolgate_auth_refusals_total", "endpoint", "/mcp", "reason", "missing_token")
	wantSample(t, fams, 1, "toolgate_auth_refusals_total", "endpoint", "/mcp", "reason", "invalid_token")

	// CF-1: an action without its confirm token is a preview.
	call(t, ctx, s, "notes_create_note", map[string]any{"text": argValue})
	call(t, ctx, s, "notes_search", map[string]any{"query": argValue})
	fams, text := metricsText(t, base)
	wantSample(t, fams, 2, "toolgate_calls_total", "tool", "notes_search", "upstream", "notes", "outcome", "ok")
	wantSample(t, fams, 1, "toolgate_calls_total", "tool", "notes_create_note", "upstream", "notes", "outcome", "preview")

	for _, secret := range []string{argValue, testKey, testSecret, wrongKey} {
		if strings.Contains(text, secret) {
			t.Errorf("/metrics contains %q", secret)
		}
	}
	for name := range fams {
		if !strings.HasPrefix(name, "toolgate_") {
			t.Errorf("family %s does not start with toolgate_", name)
		}
	}
}

// OP-7: gateway.metrics: {enabled: false} serves no /metrics (404), and
// the rest of the gateway is unchanged.
func TestMetricsDisabledOP7(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	store := filepath.Join(t.TempDir(), "toolgate.db")
	yaml := strings.Replace(gatewayYAML(store, upstreamYAML("notes", notes, true)), "gateway:\n", "gateway:\n  metrics: {enabled: false}\n", 1)
	g := newGateway(t, loadConfig(t, yaml), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	base := "http://" + g.Addr()
	if code, _ := httpGet(t, base+"/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics with metrics off: %d, want 404", code)
	}
	if g.Metrics() != nil {
		t.Error("metrics are built although they are off")
	}
	if code, _ := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	s := connect(t, ctx, base+"/mcp", testKey)
	waitServed(t, ctx, s, notesTools, nil)
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": "toolgate"}); res.IsError {
		t.Errorf("notes_search with metrics off: %q", resultText(res))
	}
}
