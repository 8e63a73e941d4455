package gateway_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
)

// ruleStats finds the report's row of rule id.
func ruleStats(t *testing.T, rep core.PolicyReport, id string) core.PolicyRuleStats {
	t.Helper()
	for _, r := range rep.Rules {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no rule %q in %+v", id, rep.Rules)
	return core.PolicyRuleStats{}
}

// The in-process console lists the config's rules with the calls each
// decided in the last hour, counted from the real store's audit records:
// two denied searches count on their rule, an allowed one on none of the
// listed rules, and a record older than the window not at all.
//
// Covers PO-4.
func TestConsolePoliciesCountsAuditHits(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	g := newGateway(t, loadConfig(t, policyYAML(store, serveDemo(t, "notes"), firstPolicies)), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	for range 2 {
		if res := call(t, ctx, s, "notes_search", map[string]any{"query": "secret"}); !res.IsError {
			t.Fatalf("a search for secrets was not denied: %+v", res)
		}
	}
	call(t, ctx, s, "notes_search", map[string]any{"query": "welcome"})
	old := core.AuditRecord{Time: time.Now().Add(-2 * time.Hour), Endpoint: "/mcp", ActorID: "alice", Tool: "notes_side_effects",
		Outcome: "refused", Rule: "no-counters"}
	if err := g.Store().AppendAudit(ctx, old); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}

	rep, err := g.Console().Policies(ctx)
	if err != nil {
		t.Fatalf("Policies: %v", err)
	}
	if len(rep.Rules) != 4 {
		t.Errorf("want the 4 configured rules, got %+v", rep.Rules)
	}
	deny := ruleStats(t, rep, "no-secret-search")
	if deny.Hits != 2 || deny.LastHit.IsZero() || deny.Effect != "deny" || deny.When == "" || deny.Reason != "searching for secrets is not allowed" {
		t.Errorf("no-secret-search: %+v", deny)
	}
	if c := ruleStats(t, rep, "no-counters"); c.Hits != 0 || !c.LastHit.IsZero() {
		t.Errorf("a hit older than the window counted: %+v", c)
	}
	if time.Since(rep.Since) < core.PolicyHitWindow-time.Minute {
		t.Errorf("window starts at %v", rep.Since)
	}

	// The dry run decides without calling: nothing new is audited.
	trial, err := g.Console().TryPolicy(ctx, core.PolicyQuestion{Actor: "alice", Tool: "notes_search", Args: json.RawMessage(`{"query":"secret"}`)})
	if err != nil {
		t.Fatalf("TryPolicy: %v", err)
	}
	if trial.Rule != "no-secret-search" || trial.Effect != "deny" || !trial.Listed || trial.Actor.ID != "alice" {
		t.Errorf("trial: %+v", trial)
	}
	hidden, err := g.Console().TryPolicy(ctx, core.PolicyQuestion{Actor: "alice", Tool: "notes_side_effects"})
	if err != nil || hidden.Listed || hidden.Rule != "no-counters" {
		t.Errorf("a hidden tool's trial: %+v, %v", hidden, err)
	}
	if _, err := g.Console().TryPolicy(ctx, core.PolicyQuestion{Actor: "alice", Tool: "notes_search", Args: json.RawMessage(`{"query":`)}); err == nil {
		t.Error("broken JSON arguments were tried")
	}
	if _, err := g.Console().TryPolicy(ctx, core.PolicyQuestion{Actor: "alice", Tool: "no_such_tool"}); err == nil {
		t.Error("an unknown tool was tried")
	}
	// DS-2: this endpoint has no tool search, so no call goes through it.
	if _, err := g.Console().TryPolicy(ctx, core.PolicyQuestion{Actor: "alice", Tool: "notes_search", Via: "call_tool"}); err == nil || !strings.Contains(err.Error(), "discovery mode is not search") {
		t.Errorf("a trial via call_tool on an endpoint without search: %v", err)
	}
	again, err := g.Console().Policies(ctx)
	if err != nil || ruleStats(t, again, "no-secret-search").Hits != 2 {
		t.Errorf("a dry run counted as a hit: %+v, %v", again, err)
	}
}

// GET /v1/policy over loopback from a real gateway, read by the attached
// console (CO-9): the rules with their hits; the dry run goes through
// POST /v1/policy/test.
func TestAdminPoliciesRoute(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, "", func(y string) string { return y + firstPolicies })
	s := connect(t, ctx, env.mcpURL(), testKey)
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": "secret"}); !res.IsError {
		t.Fatalf("a search for secrets was not denied: %+v", res)
	}
	c, err := admin.NewClient("http://"+env.g.AdminAddr(), adminAliceKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := admin.NewRemoteConsole(c, nil)
	rep, err := rc.Policies(ctx)
	if err != nil {
		t.Fatalf("Policies: %v", err)
	}
	if r := ruleStats(t, rep, "no-secret-search"); r.Hits != 1 || r.LastHit.IsZero() || r.Effect != "deny" {
		t.Errorf("no-secret-search over the admin API: %+v", r)
	}
	if r := ruleStats(t, rep, "ask-to-list"); r.Hits != 0 || r.Effect != "approve" {
		t.Errorf("ask-to-list over the admin API: %+v", r)
	}
	trial, err := rc.TryPolicy(ctx, core.PolicyQuestion{Actor: "alice", Tool: "notes_list_notes"})
	if err != nil {
		t.Fatalf("TryPolicy: %v", err)
	}
	if trial.Rule != "ask-to-list" || trial.Effect != "approve" || trial.Reason != "listing every note needs an operator" || !trial.Listed {
		t.Errorf("trial over the admin API: %+v", trial)
	}
	if _, err := rc.TryPolicy(ctx, core.PolicyQuestion{Actor: "alice", Tool: "notes_search", Args: json.RawMessage(`[1]`)}); err == nil {
		t.Error("arguments that are not an object were tried")
	}
	// Without a key the route is refused like every other.
	bad, err := admin.NewClient("http://"+env.g.AdminAddr(), "wrong-key-0000000000000000", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Policies(ctx); err == nil {
		t.Error("GET /v1/policy answered a wrong key")
	}
}

// PO-4, CO-8: GET /v1/policy carries each quota's current window and its
// heaviest users, as an attached console reads them.
func TestAdminPoliciesRouteQuotaUsage(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, "", func(y string) string {
		return y + "limits:\n  - {id: daily-searches, per: actor, match: tool.name == \"notes_search\", quota: 5/day}\n"
	})
	s := connect(t, ctx, env.mcpURL(), testKey)
	for range 2 {
		if res := call(t, ctx, s, "notes_search", map[string]any{"query": "welcome"}); res.IsError {
			t.Fatalf("a search: %+v", res)
		}
	}
	c, err := admin.NewClient("http://"+env.g.AdminAddr(), adminAliceKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := admin.NewRemoteConsole(c, nil).Policies(ctx)
	if err != nil {
		t.Fatalf("Policies: %v", err)
	}
	if len(rep.Quotas) != 1 {
		t.Fatalf("quotas over the admin API: %+v", rep.Quotas)
	}
	q := rep.Quotas[0]
	// A window of a day from midnight UTC.
	if q.Limit != "daily-searches" || q.Per != "actor" || q.Quota != 5 || !q.Start.Equal(q.Start.UTC().Truncate(24*time.Hour)) || q.End.Sub(q.Start) != 24*time.Hour ||
		len(q.Top) != 1 || q.Top[0].Count != 2 || len(q.Top[0].Parts) != 2 || q.Top[0].Parts[1] != "alice" {
		t.Fatalf("the quota over the admin API: %+v", q)
	}
}

// OP-10, CO-7: an attached console reads one call's audit record with its
// chain check over the admin API: the record of a served call is found by
// its call id, holds the arguments' hash and not their value, and its
// links verify; an unknown call has no record.
func TestAdminAuditOfACall(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, "", nil)
	_, sub := env.g.Registry().Bus().Subscribe(256)
	defer sub.Close()
	s := connect(t, ctx, env.mcpURL(), testKey)
	const value = "audit-arg-5d0c7e"
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": value}); res.IsError {
		t.Fatalf("notes_search: %q", resultText(res))
	}
	var callID string
	for callID == "" {
		select {
		case ev := <-sub.C():
			if d, ok := ev.Data.(core.CallFinished); ok && d.Record.Tool == "notes_search" {
				callID = d.Record.CallID
			}
		case <-ctx.Done():
			t.Fatalf("no call of notes_search finished: %v", ctx.Err())
		}
	}
	c, err := admin.NewClient("http://"+env.g.AdminAddr(), adminAliceKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := admin.NewRemoteConsole(c, nil)
	checks, err := rc.AuditOf(ctx, callID)
	if err != nil {
		t.Fatalf("AuditOf: %v", err)
	}
	if len(checks) != 1 {
		t.Fatalf("AuditOf %s: %d records, want 1: %+v", callID, len(checks), checks)
	}
	ch := checks[0]
	if !ch.Verified || ch.Problem != "" || ch.Chain == "" || ch.Seq < 1 || len(ch.Hash) != 64 ||
		ch.Record.CallID != callID || ch.Record.ArgsHash == "" || ch.Record.Outcome != "ok" {
		t.Errorf("AuditOf %s: %+v", callID, ch)
	}
	if raw, _ := json.Marshal(checks); strings.Contains(string(raw), value) {
		t.Errorf("the audit view holds the argument value: %s", raw)
	}
	if checks, err := rc.AuditOf(ctx, "no-such-call"); err != nil || len(checks) != 0 {
		t.Errorf("an unknown call: %+v, %v", checks, err)
	}
}
