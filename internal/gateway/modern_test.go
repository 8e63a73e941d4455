package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/waittest"
)

// modernClient is an MCP client of revision 2026-07-28 only: mcp-go's
// client pinned to it, failing the test if the gateway negotiated anything
// else. Progress notifications and list_changed arrive on channels.
type modernClient struct {
	*client.Client
	progress    chan mcpgo.JSONRPCNotification
	listChanged chan struct{}
}

func connectModern(t *testing.T, ctx context.Context, url string, opts ...client.ClientOption) *modernClient {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	st, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: tr}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testKey}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(st, append([]client.ClientOption{client.WithProtocolVersion(mcpgo.ProtocolVersion20260728)}, opts...)...)
	m := &modernClient{Client: c, progress: make(chan mcpgo.JSONRPCNotification, 64), listChanged: make(chan struct{}, 1)}
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		switch n.Method {
		case string(mcpgo.MethodNotificationProgress):
			select {
			case m.progress <- n:
			default:
			}
		case string(mcpgo.MethodNotificationToolsListChanged):
			select {
			case m.listChanged <- struct{}{}:
			default:
			}
		}
	})
	t.Cleanup(func() {
		_ = c.Close()
		tr.CloseIdleConnections()
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.ProtocolVersion20260728
	init.Params.ClientInfo = mcpgo.Implementation{Name: "modern-test", Version: "7.28"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != mcpgo.ProtocolVersion20260728 {
		t.Fatalf("negotiated %q, want exactly %s: the default endpoint must serve a modern-only client",
			res.ProtocolVersion, mcpgo.ProtocolVersion20260728)
	}
	if c.GetSessionId() != "" {
		t.Errorf("a 2026-07-28 client got a session id %q", c.GetSessionId())
	}
	return m
}

func (m *modernClient) call(t *testing.T, ctx context.Context, name string, args map[string]any, token any) *mcpgo.CallToolResult {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	if token != nil {
		req.Params.Meta = &mcpgo.Meta{ProgressToken: token}
	}
	res, err := m.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// SV-1, SV-2, CF-1, CF-5, PO-1: a client of revision 2026-07-28 only,
// against the default (stateful) endpoint of a real gateway over
// loopback: it discovers the server, lists, calls a read tool, previews
// and confirms an action, waits for an operator's approval with progress
// on its call's stream, and hears of a list change on its
// subscriptions/listen stream — governed exactly as a session is.
func TestModernClientOnDefaultEndpoint(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	g := newGateway(t, loadConfig(t, policyYAML(store, notes, firstPolicies)), &gateway.Options{})
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	url := "http://" + g.Addr() + "/mcp"
	m := connectModern(t, ctx, url)

	list, err := m.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "notes_search") || strings.Contains(got, "notes_side_effects") {
		t.Errorf("listed %s: want the actor's list, with the tool the policy hides left out", got)
	}

	if res := m.call(t, ctx, "notes_search", map[string]any{"query": "welcome"}, nil); res.IsError || !strings.Contains(resultText(res), "Welcome") {
		t.Errorf("a read call: %+v", res)
	}
	if res := m.call(t, ctx, "notes_search", map[string]any{"query": "secret"}, nil); !res.IsError || resultText(res) != "searching for secrets is not allowed" {
		t.Errorf("a call the policy denies: %+v", res)
	}

	// An action: previewed, then confirmed with the token.
	preview := m.call(t, ctx, "notes_create_note", map[string]any{"text": "small"}, nil)
	sc, _ := preview.StructuredContent.(map[string]any)
	token, _ := sc["confirmToken"].(string)
	if preview.IsError || token == "" {
		t.Fatalf("the preview: %+v", preview)
	}
	if res := m.call(t, ctx, "notes_create_note", map[string]any{"text": "small", "confirm": true, "confirmToken": token}, nil); res.IsError || !strings.Contains(resultText(res), "note created") {
		t.Errorf("the confirmed action: %+v", res)
	}
	if res := m.call(t, ctx, "notes_create_note", map[string]any{"text": "small", "confirm": true, "confirmToken": token}, nil); !res.IsError {
		t.Errorf("the token spent twice: %+v", res)
	}

	// A read a rule sends to an operator: the client's progress token gets
	// the waiting message on the call's own stream, then the approval.
	_, sub := g.Registry().Bus().Subscribe(256)
	defer sub.Close()
	done := make(chan *mcpgo.CallToolResult, 1)
	go func() {
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "notes_list_notes", map[string]any{}
		req.Params.Meta = &mcpgo.Meta{ProgressToken: "wait-1"}
		res, err := m.CallTool(ctx, req)
		if err != nil {
			res = &mcpgo.CallToolResult{IsError: true, Content: []mcpgo.Content{mcpgo.NewTextContent(err.Error())}}
		}
		done <- res
	}()
	p := waitPending(t, ctx, sub, "notes_list_notes")
	select {
	case n := <-m.progress:
		if tok := n.Params.AdditionalFields["progressToken"]; tok != "wait-1" {
			t.Errorf("progress for token %v, want wait-1", tok)
		}
	case <-ctx.Done():
		t.Fatal("no progress notification while the call waited for an operator")
	}
	if err := g.Approvals().Approve(p.ID, "olivia"); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if res := result(t, ctx, done); res.IsError || !strings.Contains(resultText(res), "Welcome to toolgate.") {
		t.Errorf("the approved read: %+v", res)
	}

	// list_changed on subscriptions/listen: a reload changes the rules.
	acked := make(chan struct{})
	var once sync.Once
	m.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == string(mcpgo.MethodNotificationSubscriptionsAcknowledged) {
			once.Do(func() { close(acked) })
		}
	})
	stop, err := m.ListenAsync(ctx, mcpgo.SubscriptionFilter{ToolsListChanged: true}, nil)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer stop()
	select {
	case <-acked:
	case <-ctx.Done():
		t.Fatal("subscriptions/listen was not acknowledged")
	}
	if _, err := g.Reload(ctx, loadConfig(t, policyYAML(store, notes, secondPolicies))); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	select {
	case <-m.listChanged:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed on the listen stream after the reload")
	}
}

// rawModern posts one modern request by hand and returns the status and
// the decoded JSON-RPC answer.
func rawModern(t *testing.T, url string, headers map[string]string, body string) (int, map[string]json.RawMessage) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testKey)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("HTTP %d, not JSON: %s", resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// modernMeta is the _meta a 2026-07-28 request carries.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// SV-1, SV-4: the 2026-07-28 wire rules on the default endpoint, request by
// request: server/discover lists both eras' revisions; a revision the
// gateway does not serve is -32022 (HTTP 400) with that list; Mcp-Method or
// Mcp-Name that disagree with the body are -32020; GET and DELETE are 405;
// every result has a resultType; the tools list, the actor's own, is
// cacheScope private with the configured ttlMs; a _meta that is missing its
// capabilities or has them of the wrong type is refused and nothing runs.
func TestModernWireRulesOnDefaultEndpoint(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	yaml := strings.Replace(gatewayYAML(store, upstreamYAML("notes", notes, true)), "gateway:\n", "gateway:\n  listTtl: 1500ms\n", 1)
	g := newGateway(t, loadConfig(t, yaml), &gateway.Options{})
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	url := "http://" + g.Addr() + "/mcp"
	hdr := func(method, name string) map[string]string {
		h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if name != "" {
			h["Mcp-Name"] = name
		}
		return h
	}

	code, ans := rawModern(t, url, hdr("server/discover", ""), `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`)
	var disc struct {
		SupportedVersions []string `json:"supportedVersions"`
		ResultType        string   `json:"resultType"`
	}
	_ = json.Unmarshal(ans["result"], &disc)
	if code != http.StatusOK || !contains(disc.SupportedVersions, "2026-07-28") || !contains(disc.SupportedVersions, "2025-11-25") || disc.ResultType != "complete" {
		t.Errorf("server/discover: HTTP %d %s", code, ans["result"])
	}

	code, ans = rawModern(t, url, map[string]string{"Mcp-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"},
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+strings.ReplaceAll(modernMeta, "2026-07-28", "2099-01-01")+`}}`)
	var rpcErr struct {
		Code int `json:"code"`
		Data struct {
			Supported []string `json:"supported"`
		} `json:"data"`
	}
	_ = json.Unmarshal(ans["error"], &rpcErr)
	if code != http.StatusBadRequest || rpcErr.Code != -32022 || !contains(rpcErr.Data.Supported, "2026-07-28") || !contains(rpcErr.Data.Supported, "2025-06-18") {
		t.Errorf("an unserved revision: HTTP %d %s", code, ans["error"])
	}

	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"notes_search","arguments":{"query":"welcome"},` + modernMeta + `}}`
	for _, h := range []map[string]string{hdr("tools/list", "notes_search"), hdr("tools/call", "notes_create_note"), hdr("tools/call", "")} {
		code, ans = rawModern(t, url, h, call)
		rpcErr.Code = 0
		_ = json.Unmarshal(ans["error"], &rpcErr)
		if code != http.StatusBadRequest || rpcErr.Code != -32020 {
			t.Errorf("headers %v against the body: HTTP %d %s", h, code, ans["error"])
		}
	}

	code, ans = rawModern(t, url, hdr("tools/call", "notes_search"), call)
	var res struct {
		ResultType string `json:"resultType"`
		IsError    bool   `json:"isError"`
	}
	_ = json.Unmarshal(ans["result"], &res)
	if code != http.StatusOK || res.ResultType != "complete" || res.IsError {
		t.Errorf("a modern call: HTTP %d %s", code, ans["result"])
	}

	code, ans = rawModern(t, url, hdr("tools/list", ""), `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{`+modernMeta+`}}`)
	var listed struct {
		ResultType string            `json:"resultType"`
		CacheScope string            `json:"cacheScope"`
		TTLMs      *int64            `json:"ttlMs"`
		Tools      []json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(ans["result"], &listed)
	if code != http.StatusOK || listed.ResultType != "complete" || listed.CacheScope != "private" || listed.TTLMs == nil || *listed.TTLMs != 1500 || len(listed.Tools) == 0 {
		t.Errorf("a modern list: HTTP %d %s", code, ans["result"])
	}

	for _, bad := range []struct{ name, meta string }{
		{"no capabilities", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`},
		{"capabilities a string", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":"all"}`},
		{"client info a number", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":7,"io.modelcontextprotocol/clientCapabilities":{}}`},
		{"protocol version a number", `"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}`},
		{"log level unknown", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/logLevel":"loud","io.modelcontextprotocol/clientCapabilities":{}}`},
		{"_meta a string", `"_meta":"2026-07-28"`},
	} {
		body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"notes_create_note","arguments":{"text":"x"},` + bad.meta + `}}`
		code, ans = rawModern(t, url, hdr("tools/call", "notes_create_note"), body)
		if code != http.StatusBadRequest || len(ans["error"]) == 0 {
			t.Errorf("%s: HTTP %d %s", bad.name, code, mustJSON(ans))
		}
	}
	// No _meta at all, with the modern header: the versions disagree.
	code, ans = rawModern(t, url, hdr("tools/call", "notes_search"), `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"notes_search","arguments":{"query":"x"}}}`)
	if code != http.StatusBadRequest || len(ans["error"]) == 0 {
		t.Errorf("no _meta: HTTP %d %s", code, mustJSON(ans))
	}

	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, url, nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("modern %s: HTTP %d, want 405", method, resp.StatusCode)
		}
	}
	recs, err := g.Store().Audit(ctx, core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Tool == "notes_create_note" {
			t.Errorf("a refused request ran or was audited as a call: %+v", r)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// elicitFunc answers a confirmation as a user would.
type elicitFunc func(context.Context, mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, r mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	return f(ctx, r)
}

// CF-6 on revision 2026-07-28: a modern client that declared elicitation
// is asked to confirm an action as an input request (InputRequiredResult)
// and its retry runs it; a user who declines runs nothing. The
// requestState handed out is the gateway's own, bound and single use:
// forged, oversized, replayed, or brought for other arguments, it is
// refused with a clear error and nothing runs.
func TestModernConfirmByInputRequest(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	g := newGateway(t, loadConfig(t, gatewayYAML(store, upstreamYAML("notes", notes, true))), &gateway.Options{})
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	url := "http://" + g.Addr() + "/mcp"
	var asked []string
	var mu sync.Mutex
	answer := "accept"
	m := connectModern(t, ctx, url, client.WithElicitationHandler(elicitFunc(func(_ context.Context, r mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r.Params.Message)
		return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
			Action: mcpgo.ElicitationResponseAction(answer), Content: map[string]any{"confirm": answer == "accept"}}}, nil
	})))
	if res := m.call(t, ctx, "notes_create_note", map[string]any{"text": "asked once"}, nil); res.IsError || !strings.Contains(resultText(res), "note created") {
		t.Fatalf("a confirmed action: %+v", res)
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0], "notes_create_note") {
		t.Errorf("asked %q, want one confirmation naming the tool", asked)
	}
	answer = "decline"
	mu.Unlock()
	if res := m.call(t, ctx, "notes_create_note", map[string]any{"text": "declined"}, nil); !res.IsError || !strings.Contains(resultText(res), "declined") {
		t.Errorf("a declined action: %+v", res)
	}

	// By hand: the state of one preview, then every way to misuse it.
	hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "notes_create_note"}
	meta := strings.Replace(modernMeta, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}`, 1)
	callWith := func(text, extra string) (int, map[string]json.RawMessage) {
		return rawModern(t, url, hdr, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"notes_create_note","arguments":{"text":"`+text+`"},`+meta+extra+`}}`)
	}
	code, ans := callWith("by hand", "")
	var ask struct {
		ResultType    string                     `json:"resultType"`
		RequestState  string                     `json:"requestState"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	}
	_ = json.Unmarshal(ans["result"], &ask)
	if code != http.StatusOK || ask.ResultType != "input_required" || ask.RequestState == "" || len(ask.InputRequests) != 1 {
		t.Fatalf("the input request: HTTP %d %s", code, ans["result"])
	}
	yes := `,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}`
	state := func(s string) string { return `,"requestState":` + mustJSON(s) + yes }
	forged := ask.RequestState[:len(ask.RequestState)-2] + "AA"
	if forged == ask.RequestState {
		forged = ask.RequestState[:len(ask.RequestState)-2] + "BB"
	}
	for _, bad := range []struct{ name, text, extra, want string }{
		{"forged", "by hand", state(forged), "not one this gateway handed out"},
		{"oversized", "by hand", state(strings.Repeat("A", 5000)), "at most"},
		{"other arguments", "something else", state(ask.RequestState), "another caller, tool or arguments"},
	} {
		code, ans = callWith(bad.text, bad.extra)
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(ans["error"], &e)
		if code != http.StatusBadRequest || e.Code != -32602 || !strings.Contains(e.Message, bad.want) || !strings.Contains(e.Message, "nothing ran") {
			t.Errorf("%s requestState: HTTP %d %s", bad.name, code, ans["error"])
		}
	}
	code, ans = callWith("by hand", state(ask.RequestState))
	var done struct {
		ResultType string `json:"resultType"`
		IsError    bool   `json:"isError"`
	}
	_ = json.Unmarshal(ans["result"], &done)
	if code != http.StatusOK || done.ResultType != "complete" || done.IsError {
		t.Fatalf("the genuine retry: HTTP %d %s", code, mustJSON(ans))
	}
	code, ans = callWith("by hand", state(ask.RequestState))
	if code != http.StatusBadRequest || !strings.Contains(string(ans["error"]), "already used") {
		t.Errorf("a replayed requestState: HTTP %d %s", code, mustJSON(ans))
	}

	recs, err := g.Store().Audit(ctx, core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, r := range recs {
		if r.Tool == "notes_create_note" && r.Outcome == "ok" {
			ran++
		}
	}
	if ran != 2 {
		t.Errorf("%d actions ran, want 2 (the confirmed one and the genuine retry)", ran)
	}
}

// CO-5: a 2026-07-28 client is listed beside sessions — actor, client name
// and version from its _meta, protocol, calls, open listen streams — and
// an operator's end ends its listen streams; with none open, nothing can
// be ended and the answer says to revoke its key. A legacy session on the
// same endpoint at the same time is listed and served as before.
func TestModernClientListedAndEnded(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	g := newGateway(t, loadConfig(t, gatewayYAML(store, upstreamYAML("notes", notes, true))), &gateway.Options{})
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	url := "http://" + g.Addr() + "/mcp"
	legacy := connect(t, ctx, url, testKey)
	m := connectModern(t, ctx, url)
	m.call(t, ctx, "notes_search", map[string]any{"query": "welcome"}, nil)
	call(t, ctx, legacy, "notes_search", map[string]any{"query": "welcome"})

	stateless := func() (core.Session, bool) {
		for _, s := range g.Sessions().List() {
			if s.Stateless {
				return s, true
			}
		}
		return core.Session{}, false
	}
	s, ok := stateless()
	if !ok || s.Actor.ID != "alice" || s.ClientName != "modern-test" || s.ClientVersion != "7.28" || s.Protocol != "2026-07-28" || s.Calls != 1 || s.Listening != 0 {
		t.Fatalf("the modern client listed as %+v (found %v)", s, ok)
	}
	if len(g.Sessions().List()) != 2 {
		t.Errorf("listed %+v, want the legacy session and the modern client", g.Sessions().List())
	}
	if err := g.Sessions().End(s.ID); err == nil || !strings.Contains(err.Error(), "revoke its key") {
		t.Errorf("ending a client with nothing open: %v", err)
	}

	ended := make(chan error, 1)
	acked := make(chan struct{})
	var once sync.Once
	m.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == string(mcpgo.MethodNotificationSubscriptionsAcknowledged) {
			once.Do(func() { close(acked) })
		}
	})
	go func() { ended <- m.Listen(ctx, mcpgo.SubscriptionFilter{ToolsListChanged: true}) }()
	select {
	case <-acked:
	case <-ctx.Done():
		t.Fatal("subscriptions/listen was not acknowledged")
	}
	if s, _ = stateless(); s.Listening != 1 {
		t.Errorf("listening %d, want 1", s.Listening)
	}
	if err := g.Sessions().End(s.ID); err != nil {
		t.Fatalf("ending the client's listen stream: %v", err)
	}
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("the listen stream stayed open after the operator ended it")
	}
	if _, ok := stateless(); ok {
		t.Errorf("the ended client is still listed")
	}
	// The legacy session is untouched, and the modern client can still call.
	if res := call(t, ctx, legacy, "notes_search", map[string]any{"query": "welcome"}); res.IsError {
		t.Errorf("the legacy session after: %+v", res)
	}
	if res := m.call(t, ctx, "notes_search", map[string]any{"query": "welcome"}, nil); res.IsError {
		t.Errorf("the modern client after: %+v", res)
	}
}

// CO-5, SV-2: a stateless client that sends nothing for the session idle
// timeout, with no listen stream open, is no longer listed.
func TestModernClientUnlistedWhenIdle(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	yaml := strings.Replace(gatewayYAML(store, upstreamYAML("notes", notes, true)), "gateway:\n", "gateway:\n  sessionIdleTimeout: 1s\n", 1)
	g := newGateway(t, loadConfig(t, yaml), &gateway.Options{})
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	m := connectModern(t, ctx, "http://"+g.Addr()+"/mcp")
	m.call(t, ctx, "notes_search", map[string]any{"query": "welcome"}, nil)
	listed := func() bool {
		return slices.ContainsFunc(g.Sessions().List(), func(s core.Session) bool { return s.Stateless })
	}
	if !listed() {
		t.Fatal("the client was not listed")
	}
	waittest.Eventually(t, stepWait, "the idle stateless client to be unlisted", func() bool { return !listed() })
}

// SV-1, SV-2, PO-1: with gateway.stateless a 2026-07-28 client is governed
// as on a stateful endpoint — its list is its own, a rule denies its call —
// and listed for the console.
func TestModernClientOnStatelessEndpoint(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	yaml := strings.Replace(policyYAML(store, notes, firstPolicies), "gateway:\n", "gateway:\n  stateless: true\n", 1)
	g := newGateway(t, loadConfig(t, yaml), &gateway.Options{})
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	m := connectModern(t, ctx, "http://"+g.Addr()+"/mcp")
	list, err := m.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "notes_side_effects" {
			t.Errorf("listed a tool the policy hides")
		}
	}
	if res := m.call(t, ctx, "notes_search", map[string]any{"query": "secret"}, nil); !res.IsError || resultText(res) != "searching for secrets is not allowed" {
		t.Errorf("a call the policy denies: %+v", res)
	}
	if res := m.call(t, ctx, "notes_search", map[string]any{"query": "welcome"}, nil); res.IsError {
		t.Errorf("an allowed call: %+v", res)
	}
	if !slices.ContainsFunc(g.Sessions().List(), func(s core.Session) bool { return s.Stateless && s.Calls == 2 }) {
		t.Errorf("the client is not listed with its calls: %+v", g.Sessions().List())
	}
}

// CF-5, SV-1: a 2026-07-28 client cancels a call by ending its request:
// one waiting for an operator is withdrawn (decided "gone"), and nothing
// runs.
func TestModernClientCancelsByEndingItsRequest(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	g := newGateway(t, loadConfig(t, policyYAML(store, notes, firstPolicies)), &gateway.Options{})
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	m := connectModern(t, ctx, "http://"+g.Addr()+"/mcp")
	_, sub := g.Registry().Bus().Subscribe(256)
	defer sub.Close()
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "notes_list_notes", map[string]any{}
		_, err := m.CallTool(callCtx, req)
		done <- err
	}()
	p := waitPending(t, ctx, sub, "notes_list_notes")
	cancel()
	for {
		select {
		case ev := <-sub.C():
			if d, ok := ev.Data.(core.ConfirmationDecided); ok && d.ID == p.ID {
				if d.Decision != core.DecisionGone {
					t.Errorf("the abandoned call was decided %q, want gone", d.Decision)
				}
				if err := <-done; err == nil {
					t.Error("the cancelled call answered")
				}
				recs, err := g.Store().Audit(ctx, core.AuditQuery{})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					if r.Tool == "notes_list_notes" && r.Outcome == "ok" {
						t.Errorf("the abandoned call ran: %+v", r)
					}
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("the waiting call was not withdrawn when its client ended the request")
		}
	}
}
