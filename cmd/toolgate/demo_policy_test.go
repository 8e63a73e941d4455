package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/mcp/demo"
	"github.com/toolgate/toolgate/mcp/serve"
)

// OP-4, PO-1, PO-3, PO-4: the demo's first run has a deny rule that reads
// the arguments, an approve rule and a rate limit, and each acts on a real
// call: the assembly the console builds (DemoConfig over upstreams spawned
// from the real binary), served on loopback, called over HTTP by an MCP
// client. The Policies pane's report and its dry run then show them.
func TestDemoPolicies(t *testing.T) {
	bin := toolgateBinary(t)
	ctx := faultCtx(t, 2*time.Minute)
	dir := t.TempDir()
	cfg, err := gateway.DemoConfig(bin, dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	// The demo's fixed port may be taken by a console someone runs; the
	// console then takes any port, as here.
	cfg.Gateway.Listen = "127.0.0.1:0"

	g, err := gateway.New(ctx, cfg, &gateway.Options{Demo: true, Notice: gateway.DemoNotice})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	con := g.Console()

	// The rules and the limit are in force, as the Policies pane lists them.
	report, err := con.Policies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	effects := map[string]string{}
	for _, r := range report.Rules {
		effects[r.ID] = r.Effect
	}
	want := map[string]string{gateway.DemoDenyRule: "deny", gateway.DemoApproveRule: "approve", gateway.DemoRateLimit: "limit"}
	for id, effect := range want {
		if effects[id] != effect {
			t.Errorf("the Policies report has %s as %q, want %q (report: %v)", id, effects[id], effect, effects)
		}
	}

	// The dry run decides as the served calls below do.
	trial, err := con.TryPolicy(ctx, core.PolicyQuestion{Actor: "demo", Tool: "create_note", Args: json.RawMessage(`{"text":"wifi Password: hunter2"}`)})
	if err != nil || trial.Rule != gateway.DemoDenyRule || trial.Effect != "deny" || !trial.Listed {
		t.Errorf("dry run of a note with a password: %+v %v", trial, err)
	}
	trial, err = con.TryPolicy(ctx, core.PolicyQuestion{Actor: "demo", Tool: "create_note", Args: json.RawMessage(`{"text":"buy milk"}`)})
	if err != nil || trial.Rule != "default" || trial.Effect != "allow" {
		t.Errorf("dry run of a plain note: %+v %v", trial, err)
	}

	sub := subscribeConsole(ctx, t, con)
	c := mcptest.New("http://"+g.Addr()+"/mcp", nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}

	// Deny by argument: refused with the rule's reason, before the preview,
	// so the upstream never sees it. A note without a secret is not.
	for _, text := range []string{"my password is hunter2", "API key: abc123", "the SECRET is out"} {
		res, rpcErr, err := c.CallTool(ctx, "create_note", map[string]string{"text": text})
		if err != nil || rpcErr != nil {
			t.Fatalf("create_note %q: %v %v", text, rpcErr, err)
		}
		if !res.IsError || !strings.Contains(res.Text(), "notes must not hold passwords, API keys or secrets") {
			t.Errorf("create_note %q was not denied with the rule's reason: %s", text, res.Raw)
		}
		if strings.Contains(string(res.Raw), "confirmToken") {
			t.Errorf("a denied note got a preview: %s", res.Raw)
		}
	}
	res, rpcErr, err := c.CallTool(ctx, "create_note", map[string]string{"text": "buy milk"})
	if err != nil || rpcErr != nil || res.IsError || !strings.Contains(string(res.Raw), "confirmToken") {
		t.Fatalf("a plain note's preview: %v %v %+v", rpcErr, err, res)
	}
	if effects := demo.Effects(filepath.Join(dir, "state")); len(effects) != 0 {
		t.Errorf("the notes upstream ran side effects: %v", effects)
	}

	// Approve: listing every note waits for an operator; approved, it runs.
	type answer struct {
		res *mcptest.ToolResult
		err error
	}
	listed := make(chan answer, 1)
	go func() {
		res, rpcErr, err := c.CallTool(ctx, "list_notes", nil)
		if err == nil && rpcErr != nil {
			err = rpcErr
		}
		listed <- answer{res, err}
	}()
	pending := waitConfirmationPending(ctx, t, sub, "list_notes")
	if !strings.Contains(pending.Preview, "listing every note at once needs an operator's approval") {
		t.Errorf("the approval does not say why: %+v", pending)
	}
	select {
	case a := <-listed:
		t.Fatalf("list_notes answered before the approval: %+v %v", a.res, a.err)
	default:
	}
	if err := con.ApproveConfirmation(ctx, pending.ID, "tester"); err != nil {
		t.Fatal(err)
	}
	var a answer
	select {
	case a = <-listed:
	case <-ctx.Done():
		t.Fatal("list_notes never answered after the approval")
	}
	if a.err != nil || a.res.IsError || !strings.Contains(a.res.Text(), "Welcome to toolgate.") {
		t.Fatalf("the approved list_notes: %+v %v", a.res, a.err)
	}

	// Rate limit: a few quick forecasts pass, then one is refused with the
	// limit's retry time. The bucket refills one call per 20 s, so on a
	// slow machine a refill may let one more through: the loop allows it,
	// and needs a refusal within a bounded number of calls.
	passed, refused := 0, (*mcptest.ToolResult)(nil)
	for range 10 {
		res, rpcErr, err := c.CallTool(ctx, "forecast", map[string]string{"city": "Oslo"})
		if err != nil || rpcErr != nil {
			t.Fatalf("forecast: %v %v", rpcErr, err)
		}
		if res.IsError {
			refused = res
			break
		}
		if !strings.Contains(res.Text(), "Oslo: sunny") {
			t.Fatalf("forecast answered %s", res.Raw)
		}
		passed++
	}
	if refused == nil {
		t.Fatalf("10 quick forecasts, none refused")
	}
	if passed < 3 {
		t.Errorf("refused after %d forecasts, want the burst of 3 to pass first: %s", passed, refused.Raw)
	}
	var meta struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(refused.Raw, &meta); err != nil || meta.Meta[serve.RetryAfterMetaKey] == nil {
		t.Errorf("the refusal does not say when to retry: %s", refused.Raw)
	}

	// Each decision is counted where the Policies pane reads it. Reads are
	// audited moments after they answer (the store's queue): the report is
	// read again until it counts them, within the test's deadline.
	var hits map[string]int
	for {
		report, err = con.Policies(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hits = map[string]int{}
		for _, r := range report.Rules {
			hits[r.ID] = r.Hits
		}
		if hits[gateway.DemoDenyRule] >= 3 && hits[gateway.DemoApproveRule] >= 1 && hits[gateway.DemoRateLimit] >= 1 || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if hits[gateway.DemoDenyRule] != 3 || hits[gateway.DemoApproveRule] != 1 || hits[gateway.DemoRateLimit] < 1 {
		t.Errorf("hits: %v", hits)
	}
}

// subscribeConsole opens a console subscription for the test's life.
func subscribeConsole(ctx context.Context, t *testing.T, con core.Console) core.Subscription {
	t.Helper()
	_, sub, err := con.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// waitConfirmationPending waits for the event of a confirmation of tool
// waiting for an operator; the subscription's end or ctx's fails it.
func waitConfirmationPending(ctx context.Context, t *testing.T, sub core.Subscription, tool string) core.PendingConfirmation {
	t.Helper()
	var seen []string
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatalf("the subscription ended with no pending %s (events seen: %v)", tool, seen)
			}
			if p, ok := ev.Data.(core.ConfirmationPending); ok && p.Pending.Tool == tool {
				return p.Pending
			}
			if !slices.Contains(seen, ev.Data.EventName()) {
				seen = append(seen, ev.Data.EventName())
			}
		case <-ctx.Done():
			t.Fatalf("no pending %s before the deadline (events seen: %v)", tool, seen)
		}
	}
}
