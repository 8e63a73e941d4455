package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
)

// policyYAML is gatewayYAML with the notes upstream and the given
// top-level policies block.
func policyYAML(store, notes, policies string) string {
	return gatewayYAML(store, upstreamYAML("notes", notes, true)) + policies
}

const firstPolicies = `policies:
  default: allow
  rules:
    - id: no-secret-search
      when: tool.name == "notes_search" && args.query == "secret"
      effect: deny
      reason: searching for secrets is not allowed
    - id: ask-to-list
      when: tool.name == "notes_list_notes" && "MEMBER" in actor.roles
      effect: approve
      reason: listing every note needs an operator
    - id: ask-big-notes
      when: tool.name == "notes_create_note" && args.text.startsWith("big")
      effect: approve
    - id: no-counters
      when: tool.name == "notes_side_effects"
      effect: deny
      reason: counters are private
`

// The same, with the search rule on another word and the counters rule gone.
const secondPolicies = `policies:
  default: allow
  rules:
    - id: no-welcome-search
      when: tool.name == "notes_search" && args.query == "welcome"
      effect: deny
      reason: that word is reserved now
`

// waitPending reads the gateway's bus until a confirmation for tool waits
// for an operator, and returns it.
func waitPending(t *testing.T, ctx context.Context, sub *core.BusSubscription, tool string) core.PendingConfirmation {
	t.Helper()
	for {
		select {
		case ev := <-sub.C():
			if p, ok := ev.Data.(core.ConfirmationPending); ok && p.Pending.Tool == tool {
				return p.Pending
			}
		case <-ctx.Done():
			t.Fatalf("no confirmation of %s waited for an operator: %v", tool, ctx.Err())
		}
	}
}

// callAsync calls a tool in the background; the result arrives on the channel.
func callAsync(ctx context.Context, s *session, name string, args map[string]any) chan *mcpgo.CallToolResult {
	out := make(chan *mcpgo.CallToolResult, 1)
	go func() {
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := s.CallTool(ctx, req)
		if err != nil {
			res = &mcpgo.CallToolResult{IsError: true, Content: []mcpgo.Content{mcpgo.NewTextContent("transport error: " + err.Error())}}
		}
		out <- res
	}()
	return out
}

// PO-1, PO-2, PO-4, OP-8: through a real gateway over loopback HTTP, in
// front of a real upstream and with an MCP client: a rule hides a tool,
// denies a call by its arguments with the rule's reason, sends a read and
// an action to an operator who approves them, and the audit names each
// deciding rule. A reload then changes the rules while the session stays
// open: it is told its list changed and the new rules decide its calls.
func TestPolicyEndToEnd(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	log := &logBuffer{}
	g := newGateway(t, loadConfig(t, policyYAML(store, notes, firstPolicies)),
		&gateway.Options{Logger: slog.New(slog.NewJSONHandler(log, nil))})
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	waitServed(t, ctx, s, []string{"notes_search", "notes_list_notes", "notes_create_note"}, []string{"notes_side_effects"})

	// Denied by an argument, with the rule's reason and nothing of its text.
	res := call(t, ctx, s, "notes_search", map[string]any{"query": "secret"})
	if !res.IsError || resultText(res) != "searching for secrets is not allowed" {
		t.Errorf("a denied search: %+v", res)
	}
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": "welcome"}); res.IsError || !strings.Contains(resultText(res), "Welcome") {
		t.Errorf("an allowed search: %+v", res)
	}
	// Hidden from the list, and denied when called all the same.
	if res := call(t, ctx, s, "notes_side_effects", map[string]any{}); !res.IsError || resultText(res) != "counters are private" {
		t.Errorf("a hidden tool called: %+v", res)
	}

	bus := g.Registry().Bus()
	_, sub := bus.Subscribe(256)
	defer sub.Close()

	// A read that a rule sends to an operator waits, then runs once approved.
	listed := callAsync(ctx, s, "notes_list_notes", map[string]any{})
	p := waitPending(t, ctx, sub, "notes_list_notes")
	if p.Actor.ID != "alice" || !strings.Contains(p.Preview, "listing every note needs an operator") {
		t.Errorf("the pending read: %+v", p)
	}
	if err := g.Approvals().Approve(p.ID, "olivia"); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if res := result(t, ctx, listed); res.IsError || !strings.Contains(resultText(res), "Welcome to toolgate.") {
		t.Errorf("the approved read: %+v", res)
	}

	// Rejected: nothing runs, and the client reads why.
	listed = callAsync(ctx, s, "notes_list_notes", map[string]any{})
	p = waitPending(t, ctx, sub, "notes_list_notes")
	if err := g.Approvals().Reject(p.ID, "olivia", "not today"); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	if res := result(t, ctx, listed); !res.IsError || !strings.Contains(resultText(res), "rejected") || strings.Contains(resultText(res), "Welcome") {
		t.Errorf("the rejected read: %+v", res)
	}

	// An action the rule matches: previewed, then confirmed, and the
	// confirmation waits for the operator as approval: operator would.
	args := map[string]any{"text": "big plans"}
	preview := call(t, ctx, s, "notes_create_note", args)
	sc, _ := preview.StructuredContent.(map[string]any)
	token, _ := sc["confirmToken"].(string)
	if preview.IsError || token == "" {
		t.Fatalf("the preview: %+v", preview)
	}
	created := callAsync(ctx, s, "notes_create_note", map[string]any{"text": "big plans", "confirm": true, "confirmToken": token})
	p = waitPending(t, ctx, sub, "notes_create_note")
	if err := g.Approvals().Approve(p.ID, "olivia"); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if res := result(t, ctx, created); res.IsError || !strings.Contains(resultText(res), "note created") {
		t.Errorf("the approved action: %+v", res)
	}
	// One the rule does not match needs no operator.
	small := call(t, ctx, s, "notes_create_note", map[string]any{"text": "small"})
	sc, _ = small.StructuredContent.(map[string]any)
	token, _ = sc["confirmToken"].(string)
	if res := call(t, ctx, s, "notes_create_note", map[string]any{"text": "small", "confirm": true, "confirmToken": token}); res.IsError {
		t.Errorf("an action no rule matches: %+v", res)
	}

	recs, err := g.Store().Audit(ctx, core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s %s %s", r.Tool, r.Outcome, r.Rule))
	}
	for _, want := range []string{
		"notes_search denied no-secret-search", "notes_search ok default", "notes_side_effects denied no-counters",
		"notes_list_notes ok ask-to-list", "notes_list_notes refused ask-to-list", "notes_create_note preview ask-big-notes", "notes_create_note ok ask-big-notes",
		"notes_create_note ok default",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("the audit lacks %q:\n%s", want, strings.Join(got, "\n"))
		}
	}

	// A reload changes the rules under the open session.
	session := s.GetSessionId()
	drain(s)
	if _, err := g.Reload(ctx, loadConfig(t, policyYAML(store, notes, secondPolicies))); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	select {
	case <-s.listChanged:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after the reload changed the rules")
	}
	waitServed(t, ctx, s, []string{"notes_side_effects"}, nil)
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": "secret"}); res.IsError {
		t.Errorf("a search the old rule denied: %+v", res)
	}
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": "welcome"}); !res.IsError || resultText(res) != "that word is reserved now" {
		t.Errorf("a search the new rule denies: %+v", res)
	}
	if res := call(t, ctx, s, "notes_side_effects", map[string]any{}); res.IsError {
		t.Errorf("a tool no rule denies any more: %+v", res)
	}
	if s.GetSessionId() != session {
		t.Errorf("the session did not survive the reload")
	}
	if strings.Contains(log.String(), "secret") && strings.Contains(log.String(), `args.query`) {
		t.Errorf("the log quotes a rule or its arguments:\n%s", log)
	}
}

// drain empties a session's list_changed signal.
func drain(s *session) {
	select {
	case <-s.listChanged:
	default:
	}
}

// PO-1, OP-8: a reload with a rule that does not compile is refused with
// its key path and position, and the running rules stay in force.
func TestPolicyReloadRefused(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	g := newGateway(t, loadConfig(t, policyYAML(store, notes, firstPolicies)), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	next := loadConfig(t, policyYAML(store, notes, secondPolicies))
	next.Policies.Rules[0].When = `tool.name == "notes_search" && args.query ==`
	_, err := g.Reload(ctx, next)
	if err == nil || !strings.Contains(err.Error(), "policies.rules[0].when: line 1, column") {
		t.Fatalf("Reload = %v, want the rule's path and position", err)
	}
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	waitServed(t, ctx, s, []string{"notes_search"}, []string{"notes_side_effects"})
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": "secret"}); !res.IsError || resultText(res) != "searching for secrets is not allowed" {
		t.Errorf("the running rules after a refused reload: %+v", res)
	}
}

// PO-1, PO-2, SV-2: on a stateless endpoint, where mcp-go dispatches the
// calls, an argument-based deny answers with the rule's reason and a
// hidden tool is not listed.
func TestPolicyStateless(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	yaml := strings.Replace(policyYAML(store, notes, firstPolicies), "gateway:\n", "gateway:\n  stateless: true\n", 1)
	g := newGateway(t, loadConfig(t, yaml), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	st, err := transport.NewStreamableHTTP("http://"+g.Addr()+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testKey}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(st, client.WithProtocolVersion(testProtocol))
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = testProtocol
	init.Params.ClientInfo = mcpgo.Implementation{Name: "stateless-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "notes_search") || slices.Contains(names, "notes_side_effects") {
		t.Errorf("tools/list = %q", names)
	}
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "notes_search", map[string]any{"query": "secret"}
	res, err := c.CallTool(ctx, req)
	if err != nil || !res.IsError || resultText(res) != "searching for secrets is not allowed" {
		t.Errorf("a denied search: %+v %v", res, err)
	}
	req.Params.Arguments = map[string]any{"query": "welcome"}
	if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
		t.Errorf("an allowed search: %+v %v", res, err)
	}
	// The hidden tool called anyway is refused with its rule's reason,
	// as on a session; a tool that does not exist is still unknown.
	req.Params.Name, req.Params.Arguments = "notes_side_effects", map[string]any{}
	if res, err := c.CallTool(ctx, req); err != nil || !res.IsError || resultText(res) != "counters are private" {
		t.Errorf("the hidden tool: %+v %v", res, err)
	}
	req.Params.Name = "notes_nothing"
	if res, err := c.CallTool(ctx, req); err == nil && (!res.IsError || !strings.Contains(resultText(res), "unknown tool")) {
		t.Errorf("an unknown tool: %+v %v", res, err)
	}
}
