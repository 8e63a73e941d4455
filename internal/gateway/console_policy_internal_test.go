package gateway

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
)

// A top-level rule counts on every endpoint, an endpoint's own rule only on
// its endpoint (two endpoints may each have a rule of the same id), a limit
// everywhere; a confirmed call's intent record and operators' actions are
// not hits, and the last hit is the latest.
//
// Covers PO-4.
func TestPolicyReportScopesHits(t *testing.T) {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	cfg := &config.Config{
		Policies: &config.Policies{Rules: []config.PolicyRule{{ID: "everywhere", When: "true", Effect: "deny", Reason: "no"}}},
		Endpoints: []config.Endpoint{
			{Path: "/a", Policies: &config.Policies{Rules: []config.PolicyRule{{ID: "local", When: "false", Effect: "approve"}}}},
			{Path: "/b", Policies: &config.Policies{Rules: []config.PolicyRule{{ID: "local", When: "true", Effect: "allow"}}}},
			{Path: "/c"},
		},
		Limits: []config.Limit{{ID: "per-actor", Per: "actor", Rate: "10/s"}},
	}
	rec := func(endpoint, rule, outcome string, ago time.Duration) core.AuditRecord {
		return core.AuditRecord{Time: now.Add(-ago), Endpoint: endpoint, ActorID: "alice", Tool: "t", Outcome: outcome, Rule: rule}
	}
	recs := []core.AuditRecord{
		rec("/a", "everywhere", "refused", 30*time.Minute),
		rec("/c", "everywhere", "refused", 5*time.Minute),
		rec("/a", "local", core.AuditIntent, 4*time.Minute),
		rec("/a", "local", "ok", 3*time.Minute),
		rec("/b", "local", "ok", 2*time.Minute),
		rec("/b", "local", "ok", time.Minute),
		rec("/c", "per-actor", "refused", 10*time.Minute),
		rec("/a", "default", "ok", time.Minute),
		rec(AdminEndpoint, "local", "ok", time.Minute),
	}
	rep := policyReport(cfg, recs, now.Add(-time.Hour))
	type row struct {
		endpoint, id, effect string
		hits                 int
		ago                  time.Duration
	}
	want := []row{
		{"", "everywhere", "deny", 2, 5 * time.Minute},
		{"/a", "local", "approve", 1, 3 * time.Minute},
		{"/b", "local", "allow", 2, time.Minute},
		{"", "per-actor", "limit", 1, 10 * time.Minute},
	}
	if len(rep.Rules) != len(want) {
		t.Fatalf("rules: %+v", rep.Rules)
	}
	for i, w := range want {
		r := rep.Rules[i]
		if r.Endpoint != w.endpoint || r.ID != w.id || r.Effect != w.effect || r.Hits != w.hits || !r.LastHit.Equal(now.Add(-w.ago)) {
			t.Errorf("row %d: %+v, want %+v", i, r, w)
		}
	}
	if rep.Rules[0].Reason != "no" || rep.Rules[0].When != "true" {
		t.Errorf("the rule's text: %+v", rep.Rules[0])
	}
	if empty := policyReport(&config.Config{}, recs, now); empty.Rules == nil || len(empty.Rules) != 0 {
		t.Errorf("no rules: %+v", empty.Rules)
	}
}

// BenchmarkPolicyReport counts an hour of 100 000 audit records over ten
// rules: the cost of showing the Policies pane once the records are read.
func BenchmarkPolicyReport(b *testing.B) {
	now := time.Now()
	var rules []config.PolicyRule
	for i := range 10 {
		rules = append(rules, config.PolicyRule{ID: "rule-" + string(rune('a'+i)), When: "true", Effect: "deny"})
	}
	cfg := &config.Config{Policies: &config.Policies{Rules: rules}, Endpoints: []config.Endpoint{{Path: "/mcp"}}}
	recs := make([]core.AuditRecord, 100_000)
	for i := range recs {
		recs[i] = core.AuditRecord{Time: now.Add(-time.Duration(i) * 30 * time.Millisecond), Endpoint: "/mcp", Outcome: "ok", Rule: rules[i%10].ID}
	}
	b.ReportAllocs()
	for b.Loop() {
		policyReport(cfg, recs, now.Add(-time.Hour))
	}
}
