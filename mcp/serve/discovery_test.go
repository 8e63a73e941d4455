package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/mcp/serve"
)

// discoveryEndpoint is the test endpoint with tool search on, a confirm
// gate, an audit and a policy that denies "boom" whatever the arguments.
func discoveryEndpoint(t *testing.T, stateless bool) (*served, *memory.MemStore) {
	t.Helper()
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("0123456789abcdef0123456789abcdef!"), Ledger: memory.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Layer{Path: "policies", Default: policy.Allow,
		Rules: []policy.Rule{{ID: "no-boom", When: `tool.name == "boom"`, Effect: policy.Deny, Reason: "boom is off"}}})
	if err != nil {
		t.Fatal(err)
	}
	store := memory.NewMemStore()
	s := serveEndpoint(t, serve.EndpointOptions{Gate: gate, Audit: store, Policy: pol, Stateless: stateless,
		Discovery: &serve.Discovery{AlwaysList: []string{"gh_search", "admin_only", "boom"}}})
	return s, store
}

// searchNames runs search_tools on c and returns the names found, best
// first; the text block must carry the same JSON as structuredContent.
func searchNames(t *testing.T, c *mcptest.Client, query string) []string {
	t.Helper()
	res, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": query, "limit": 20}})
	if rpcErr != nil {
		t.Fatalf("search %q: %v", query, rpcErr)
	}
	var out struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Structured json.RawMessage `json:"structuredContent"`
		IsError    bool            `json:"isError"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.IsError || len(out.Content) != 1 {
		t.Fatalf("search %q: %s", query, res)
	}
	if out.Content[0].Text != string(out.Structured) {
		t.Fatalf("search %q: the text %s is not structuredContent %s", query, out.Content[0].Text, out.Structured)
	}
	var found struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(out.Structured, &found); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range found.Tools {
		var n string
		_ = json.Unmarshal(tl["name"], &n)
		if len(tl["inputSchema"]) == 0 || len(tl["description"]) == 0 {
			t.Errorf("search %q: %s lacks its schema or description", query, n)
		}
		names = append(names, n)
	}
	return names
}

// DS-1, DS-2: with discovery on, tools/list shows the two meta-tools and
// the alwaysList tools the actor may call; search finds only what the
// actor may call directly; call_tool runs a read and an action through
// preview and confirm exactly as direct calls do, and the audit names the
// inner tool and call_tool; a tool hidden by roles or by a policy that
// denies it whatever the arguments is never found, and call_tool on it
// answers as for an unknown tool.
func TestDiscoveryLegacySession(t *testing.T) {
	s, store := discoveryEndpoint(t, false)
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)

	names, tools := listNames(t, c)
	if want := []string{"call_tool", "gh_search", "search_tools"}; !slices.Equal(names, want) {
		t.Fatalf("tools/list: %v, want %v", names, want)
	}
	if !strings.Contains(string(tools[2]["outputSchema"]), `"tools"`) {
		t.Errorf("search_tools has no outputSchema: %s", tools[2]["outputSchema"])
	}

	if got := searchNames(t, c, "Deletes"); !slices.Equal(got, []string{"gh_delete"}) {
		t.Errorf("search for the action: %v", got)
	}
	for _, q := range []string{"Admins", "Fails", "boom", "admin only"} {
		if got := searchNames(t, c, q); len(got) != 0 {
			t.Errorf("search %q found hidden tools: %v", q, got)
		}
	}
	admin := testClient(s.url, "root", "ADMIN")
	initialize(t, admin)
	if got := searchNames(t, admin, "Admins"); !slices.Equal(got, []string{"admin_only"}) {
		t.Errorf("an admin's search: %v", got)
	}

	// Hidden tools answer through call_tool exactly as a name nobody has.
	unknown := func(name string) string {
		_, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": name, "arguments": map[string]any{}}})
		if rpcErr == nil {
			t.Fatalf("call_tool %s answered a result", name)
		}
		return fmt.Sprint(rpcErr.Code, " ", strings.ReplaceAll(rpcErr.Message, name, "NAME"))
	}
	_, direct := rpc(t, c, "tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}})
	want := fmt.Sprint(direct.Code, " ", strings.ReplaceAll(direct.Message, "no_such_tool", "NAME"))
	for _, name := range []string{"admin_only", "boom", "no_such_tool", "search_tools", "call_tool"} {
		if got := unknown(name); got != want {
			t.Errorf("call_tool %s: %q, want %q", name, got, want)
		}
	}

	// A read.
	res, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "gh_search", "arguments": map[string]any{"q": "x"}}})
	if rpcErr != nil || !strings.Contains(string(res), `echo {\"q\":\"x\"}`) {
		t.Fatalf("call_tool gh_search: %s %v", res, rpcErr)
	}
	if call := <-s.calls; call.Tool != "gh_search" {
		t.Fatalf("ran %+v", call)
	}
	// Validation of the inner arguments, as a direct call's.
	res, _ = rpc(t, c, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "gh_search", "arguments": map[string]any{"q": ""}}})
	if !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), "invalid arguments") {
		t.Fatalf("invalid inner arguments: %s", res)
	}

	// An action: preview, then confirm inside arguments.
	res, _ = rpc(t, c, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": 7}}})
	var preview struct {
		StructuredContent struct {
			ConfirmToken string `json:"confirmToken"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &preview); err != nil || preview.StructuredContent.ConfirmToken == "" {
		t.Fatalf("preview: %s", res)
	}
	tok := preview.StructuredContent.ConfirmToken
	res, _ = rpc(t, c, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": 7}, "confirm": true, "confirmToken": tok}})
	if !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), "inside arguments") {
		t.Fatalf("confirm outside arguments: %s", res)
	}
	res, _ = rpc(t, c, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": 7, "confirm": true, "confirmToken": tok}}})
	if !strings.Contains(string(res), `echo {\"id\":7}`) {
		t.Fatalf("confirm: %s", res)
	}
	if call := <-s.calls; call.Tool != "gh_delete" {
		t.Fatalf("ran %+v", call)
	}

	recs, err := store.Audit(context.Background(), core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Tool+"/"+r.Outcome+"/"+r.Via)
	}
	if want := "gh_search/ok/call_tool,gh_search/invalid/call_tool,gh_delete/preview/call_tool,gh_delete/intent/call_tool,gh_delete/ok/call_tool"; strings.Join(got, ",") != want {
		t.Errorf("audit:\n got %s\nwant %s", strings.Join(got, ","), want)
	}
}

// DS-3: a tool registered after the index was built is found by the next
// search; one removed is not.
func TestDiscoverySearchFollowsTheRegistry(t *testing.T) {
	s, _ := discoveryEndpoint(t, false)
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	if got := searchNames(t, c, "weather forecast"); len(got) != 0 {
		t.Fatalf("before: %v", got)
	}
	if err := s.reg.Register(core.Tool{Name: "wx_forecast", Source: "wx", RemoteName: "forecast", Kind: core.KindRead,
		Description: "Weather forecast for a city.", Handler: func(context.Context, json.RawMessage) (core.Result, error) {
			return core.TextResult("sunny"), nil
		}}); err != nil {
		t.Fatal(err)
	}
	if got := searchNames(t, c, "weather forecast"); !slices.Equal(got, []string{"wx_forecast"}) {
		t.Fatalf("after registering: %v", got)
	}
	if err := s.reg.Unregister("wx", "wx_forecast"); err != nil {
		t.Fatal(err)
	}
	if got := searchNames(t, c, "weather forecast"); len(got) != 0 {
		t.Fatalf("after unregistering: %v", got)
	}
}

// DS-1, SV-1, SV-2: the same on a stateless endpoint, for a 2026-07-28
// request (search, call_tool, a hidden tool refused as unknown with the
// revision's status) and a legacy one without a session.
func TestDiscoveryModern(t *testing.T) {
	s, _ := discoveryEndpoint(t, true)
	status, body := sendModern(t, s.url, "tools/list", "", `{`+modernMetaJSON+`}`, nil)
	if status != 200 || !strings.Contains(body, `"name":"search_tools"`) || strings.Contains(body, `"name":"gh_delete"`) {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	status, body = sendModern(t, s.url, "tools/call", "search_tools", `{"name":"search_tools","arguments":{"query":"search"},`+modernMetaJSON+`}`, nil)
	if status != 200 || !strings.Contains(body, `"resultType":"complete"`) || !strings.Contains(body, `\"name\":\"gh_search\"`) {
		t.Fatalf("search: %d %s", status, body)
	}
	status, body = sendModern(t, s.url, "tools/call", "call_tool", `{"name":"call_tool","arguments":{"name":"gh_search","arguments":{"q":"m"}},`+modernMetaJSON+`}`, nil)
	if status != 200 || !strings.Contains(body, `echo {\"q\":\"m\"}`) {
		t.Fatalf("call_tool: %d %s", status, body)
	}
	<-s.calls
	directStatus, direct := sendModern(t, s.url, "tools/call", "nope", `{"name":"nope","arguments":{},`+modernMetaJSON+`}`, nil)
	status, body = sendModern(t, s.url, "tools/call", "call_tool", `{"name":"call_tool","arguments":{"name":"admin_only"},`+modernMetaJSON+`}`, nil)
	if status != directStatus || strings.ReplaceAll(body, "admin_only", "nope") != direct {
		t.Fatalf("hidden through call_tool: %d %s, unknown directly: %d %s", status, body, directStatus, direct)
	}

	// A legacy request without a session, as a stateless endpoint takes.
	c := testClient(s.url, "m", "MEMBER")
	if got := searchNames(t, c, "search"); !slices.Equal(got, []string{"gh_search"}) {
		t.Errorf("legacy search on a stateless endpoint: %v", got)
	}
	res, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "gh_search", "arguments": map[string]any{"q": "l"}}})
	if rpcErr != nil || !strings.Contains(string(res), `echo {\"q\":\"l\"}`) {
		t.Fatalf("legacy call_tool on a stateless endpoint: %s %v", res, rpcErr)
	}
	<-s.calls
}

// DS-1: without discovery the meta-tool names are nobody's.
func TestDiscoveryOff(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	_, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "x"}})
	if rpcErr == nil || !strings.Contains(rpcErr.Message, "unknown tool") {
		t.Fatalf("search_tools without discovery: %v", rpcErr)
	}
}

// DS-2, RV-3: a tool the review withholds (the registry's custom check,
// as the gateway's review gate) is never found and answers as unknown
// through call_tool; its sibling the review passed is found and runs.
func TestDiscoveryHidesWhatReviewWithholds(t *testing.T) {
	reg := core.NewRegistry(&core.RegistryOptions{CanUse: func(_ context.Context, _ core.Actor, tool *core.Tool) bool {
		return tool.Name != "up_withheld"
	}})
	run := func(context.Context, json.RawMessage) (core.Result, error) { return core.TextResult("ran"), nil }
	for _, n := range []string{"up_withheld", "up_reviewed"} {
		if err := reg.Register(core.Tool{Name: n, Source: "up", RemoteName: strings.TrimPrefix(n, "up_"), Kind: core.KindRead,
			Description: "Exports the quarterly report.", Handler: run}); err != nil {
			t.Fatal(err)
		}
	}
	ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: "/mcp", Registry: reg, Actor: testActor,
		Discovery: &serve.Discovery{AlwaysList: []string{"up_withheld"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(testAuth(ep))
	t.Cleanup(func() {
		_ = ep.Close(context.Background())
		srv.Close()
	})
	c := testClient(srv.URL+"/mcp", "m", "MEMBER")
	initialize(t, c)
	if names, _ := listNames(t, c); !slices.Equal(names, []string{"call_tool", "search_tools"}) {
		t.Errorf("tools/list: %v", names)
	}
	if got := searchNames(t, c, "quarterly report"); !slices.Equal(got, []string{"up_reviewed"}) {
		t.Errorf("search: %v, want only the reviewed tool", got)
	}
	_, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "up_withheld"}})
	if rpcErr == nil || rpcErr.Message != "unknown tool: up_withheld" {
		t.Errorf("call_tool on the withheld tool: %v", rpcErr)
	}
	res, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "up_reviewed"}})
	if rpcErr != nil || !strings.Contains(string(res), `"ran"`) {
		t.Errorf("call_tool on the reviewed tool: %s %v", res, rpcErr)
	}
}
