package gateway_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/mcp/serve"
)

const limitsYAML = `limits:
  - {id: search-rate, per: actor+tool, match: tool.name == "notes_search", rate: 1/h, burst: 2}
  - {id: daily-lists, per: actor, match: tool.name == "notes_list_notes", quota: 2/day}
`

// refusedBy checks res is a limit's refusal naming id, with the wait in
// its text and _meta.
func refusedBy(t *testing.T, res *mcpgo.CallToolResult, id string) {
	t.Helper()
	text := resultText(res)
	m := regexp.MustCompile(`^rate limit reached for (\S+); retry after (\d+)s$`).FindStringSubmatch(text)
	if !res.IsError || m == nil || m[1] != id {
		t.Fatalf("want a refusal by %s, got %+v", id, res)
	}
	if res.Meta == nil || fmt.Sprint(res.Meta.AdditionalFields[serve.RetryAfterMetaKey]) != m[2] {
		t.Fatalf("_meta %+v lacks %s = %s", res.Meta, serve.RetryAfterMetaKey, m[2])
	}
}

// PO-3, PO-4, OP-5: a rate per actor and tool refuses the call past its
// burst and says when to retry; a daily quota is counted in the store, so
// a second gateway on the same store file refuses the call past it. The
// audit and the metrics name the limit.
func TestLimitsEndToEnd(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	yaml := gatewayYAML(store, upstreamYAML("notes", notes, true)) + limitsYAML
	a := newGateway(t, loadConfig(t, yaml), nil)
	b := newGateway(t, loadConfig(t, yaml), nil)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sa := connect(t, ctx, "http://"+a.Addr()+"/mcp", testKey)
	sb := connect(t, ctx, "http://"+b.Addr()+"/mcp", testKey)
	waitServed(t, ctx, sa, []string{"notes_search", "notes_list_notes"}, nil)
	waitServed(t, ctx, sb, []string{"notes_search", "notes_list_notes"}, nil)

	for range 2 {
		if res := call(t, ctx, sa, "notes_search", map[string]any{"query": "welcome"}); res.IsError {
			t.Fatalf("a search within the burst: %+v", res)
		}
	}
	refusedBy(t, call(t, ctx, sa, "notes_search", map[string]any{"query": "welcome"}), "search-rate")
	// Another tool is another bucket; the rate is per replica.
	if res := call(t, ctx, sb, "notes_search", map[string]any{"query": "welcome"}); res.IsError {
		t.Fatalf("a search on the other replica: %+v", res)
	}

	if res := call(t, ctx, sa, "notes_list_notes", map[string]any{}); res.IsError {
		t.Fatalf("first list: %+v", res)
	}
	if res := call(t, ctx, sb, "notes_list_notes", map[string]any{}); res.IsError {
		t.Fatalf("second list, on the other replica: %+v", res)
	}
	refusedBy(t, call(t, ctx, sa, "notes_list_notes", map[string]any{}), "daily-lists")
	refusedBy(t, call(t, ctx, sb, "notes_list_notes", map[string]any{}), "daily-lists")

	// A reload that changes the limits starts the buckets afresh under
	// the open session; the quota's count stays in the store.
	if _, err := a.Reload(ctx, loadConfig(t, yaml+"  - {id: extra, per: endpoint, rate: 100/s}\n")); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if res := call(t, ctx, sa, "notes_search", map[string]any{"query": "welcome"}); res.IsError {
		t.Fatalf("a search after the reload: %+v", res)
	}
	refusedBy(t, call(t, ctx, sa, "notes_list_notes", map[string]any{}), "daily-lists")

	// Both replicas read the quota's use from the store they share.
	for _, g := range []*gateway.Gateway{a, b} {
		rep, err := g.Console().Policies(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Quotas) != 1 || rep.Quotas[0].Limit != "daily-lists" || rep.Quotas[0].Quota != 2 || rep.Quotas[0].Err != "" ||
			len(rep.Quotas[0].Top) != 1 || !slices.Equal(rep.Quotas[0].Top[0].Parts, []string{"", "alice"}) || rep.Quotas[0].Top[0].Count != 2 {
			t.Fatalf("the quotas' use: %+v", rep.Quotas)
		}
	}

	recs, err := a.Store().Audit(ctx, core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	limited := map[string]int{}
	for _, r := range recs {
		if r.Outcome == "limited" {
			limited[r.Rule]++
		}
	}
	if limited["search-rate"] != 1 || limited["daily-lists"] != 3 {
		t.Errorf("limited calls in the audit by limit: %v", limited)
	}
	_, body := httpGet(t, "http://"+a.Addr()+"/metrics")
	for _, want := range []string{`toolgate_policy_refusals_total{outcome="limited",rule="search-rate"} 1`,
		`toolgate_policy_refusals_total{outcome="limited",rule="daily-lists"} 2`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// PO-3, CF-3: a quota budgets the calls that run: a confirmation refused
// for a bad token is given back, so the actor's one write of the day is
// still there for a good one; the next is refused by the quota, and its
// refusal is not counted either.
func TestQuotaGivenBackWhenTheGateRefuses(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	yaml := gatewayYAML(store, upstreamYAML("notes", notes, true)) + `limits:
  - {id: one-write, per: actor, match: tool.kind == "action", quota: 1/day}
`
	g := newGateway(t, loadConfig(t, yaml), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	waitServed(t, ctx, s, []string{"notes_create_note"}, nil)

	_, token, _ := previewNote(t, ctx, s)
	forged := token[:len(token)-4] + "AAAA"
	if res := confirmNote(t, ctx, s, forged); !res.IsError || strings.Contains(resultText(res), "rate limit") {
		t.Fatalf("a forged token: %+v", res)
	}
	usage := func() int64 {
		t.Helper()
		rep, err := g.Console().Policies(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Quotas) != 1 {
			t.Fatalf("quotas: %+v", rep.Quotas)
		}
		if len(rep.Quotas[0].Top) == 0 {
			return 0
		}
		return rep.Quotas[0].Top[0].Count
	}
	if n := usage(); n != 0 {
		t.Fatalf("after a refused confirmation the quota counts %d calls, want 0", n)
	}
	if res := confirmNote(t, ctx, s, token); res.IsError {
		t.Fatalf("the good confirmation after a bad one: %+v", res)
	}
	if n := usage(); n != 1 {
		t.Fatalf("after the write the quota counts %d calls, want 1", n)
	}
	_, token2, _ := previewNote(t, ctx, s)
	refusedBy(t, confirmNote(t, ctx, s, token2), "one-write")
	if n := usage(); n != 1 {
		t.Fatalf("at the end the quota counts %d calls, want 1", n)
	}
}
