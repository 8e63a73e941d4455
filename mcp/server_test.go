package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/memstore"
	"github.com/toolgate/toolgate/mcp"
)

type actorKey struct{}

// testAuth stands in for the auth middleware: the actor is named by a
// header, so one test can speak as several actors.
func testAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Test-Actor")
		if id == "" {
			http.Error(w, "no actor", http.StatusUnauthorized)
			return
		}
		a := core.Actor{ID: id, Roles: strings.Split(r.Header.Get("X-Test-Roles"), ","), Tenant: "t1"}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, a)))
	})
}

func testActor(ctx context.Context) (core.Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(core.Actor)
	return a, ok
}

type served struct {
	url      string
	reg      *core.Registry
	sessions *core.Sessions
	ep       *mcp.Endpoint
	calls    chan core.Call
}

func serve(t *testing.T, opts mcp.EndpointOptions) *served {
	t.Helper()
	s := &served{reg: core.NewRegistry(nil), calls: make(chan core.Call, 16)}
	s.sessions = core.NewSessions(s.reg.Bus())
	mustReg := func(tool core.Tool) {
		if err := s.reg.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	record := func(ctx context.Context, args json.RawMessage) (core.Result, error) {
		c, _ := core.CallFromContext(ctx)
		s.calls <- c
		return core.TextResult("echo " + string(args)), nil
	}
	mustReg(core.Tool{Name: "gh_search", Source: "gh", RemoteName: "search", Kind: core.KindRead, Description: "Search.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","minLength":1}},"required":["q"],"x-keep":{"n":12345678901234567890}}`),
		Annotations: json.RawMessage(`{"readOnlyHint":true,"title":"Search"}`), Handler: record})
	mustReg(core.Tool{Name: "admin_only", Kind: core.KindRead, Description: "Admins.", Roles: []string{"ADMIN"}, Handler: record})
	mustReg(core.Tool{Name: "gh_delete", Source: "gh", RemoteName: "delete", Kind: core.KindAction, Description: "Deletes.", Handler: record})
	mustReg(core.Tool{Name: "boom", Kind: core.KindRead, Description: "Fails.", Handler: func(context.Context, json.RawMessage) (core.Result, error) {
		return core.Result{}, errors.New("upstream exploded")
	}})
	opts.Registry, opts.Sessions, opts.Actor = s.reg, s.sessions, testActor
	if opts.Path == "" {
		opts.Path = "/mcp"
	}
	ep, err := mcp.NewEndpoint(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.ep = ep
	mux := http.NewServeMux()
	mux.Handle(opts.Path, testAuth(ep))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = ep.Close(context.Background())
		srv.Close()
	})
	s.url = srv.URL + opts.Path
	return s
}

type rpcClient struct {
	t       *testing.T
	url     string
	actor   string
	roles   string
	session string
	id      int
}

func (c *rpcClient) post(body string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-Actor", c.actor)
	req.Header.Set("X-Test-Roles", c.roles)
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// rpcBody reads a JSON or single-event SSE response body.
func rpcBody(t *testing.T, resp *http.Response) map[string]json.RawMessage {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "data: ") {
				b = []byte(strings.TrimPrefix(line, "data: "))
			}
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("HTTP %d, body %q: %v", resp.StatusCode, b, err)
	}
	return m
}

func (c *rpcClient) call(method string, params any) map[string]json.RawMessage {
	c.t.Helper()
	c.id++
	p, _ := json.Marshal(params)
	resp := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.id, method, p))
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s: HTTP %d %s", method, resp.StatusCode, b)
	}
	return rpcBody(c.t, resp)
}

func (c *rpcClient) initialize() {
	c.t.Helper()
	c.initializeWith(`{}`)
}

// initializeWith opens a session declaring the given client capabilities.
func (c *rpcClient) initializeWith(capabilities string) {
	c.t.Helper()
	resp := c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":` + capabilities + `,"clientInfo":{"name":"raw-test","version":"9.9"}}}`)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("initialize: HTTP %d", resp.StatusCode)
	}
	c.session = resp.Header.Get("Mcp-Session-Id")
	rpcBody(c.t, resp)
	if c.session == "" {
		c.t.Fatal("no Mcp-Session-Id")
	}
	r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.Body.Close()
}

func listNames(t *testing.T, c *rpcClient) ([]string, []map[string]json.RawMessage) {
	t.Helper()
	res := c.call("tools/list", map[string]any{})
	var out struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(res["result"], &out); err != nil {
		t.Fatalf("tools/list: %s", res["error"])
	}
	var names []string
	for _, tl := range out.Tools {
		var n string
		_ = json.Unmarshal(tl["name"], &n)
		names = append(names, n)
	}
	return names, out.Tools
}

// SV-4, IM-16, IM-17: each actor sees what it may call; schemas are served
// verbatim, the source rides in _meta; action tools wait for the confirm
// gate and are not served.
func TestEndpointListPerActor(t *testing.T) {
	s := serve(t, mcp.EndpointOptions{})
	member := &rpcClient{t: t, url: s.url, actor: "m", roles: "MEMBER"}
	member.initialize()
	names, tools := listNames(t, member)
	if strings.Join(names, ",") != "boom,gh_search" {
		t.Fatalf("member sees %v", names)
	}
	admin := &rpcClient{t: t, url: s.url, actor: "a", roles: "ADMIN"}
	admin.initialize()
	if names, _ := listNames(t, admin); strings.Join(names, ",") != "admin_only,boom,gh_search" {
		t.Fatalf("admin sees %v", names)
	}
	gh := tools[1]
	var schema bytes.Buffer
	_ = json.Compact(&schema, gh["inputSchema"])
	if schema.String() != `{"type":"object","properties":{"q":{"type":"string","minLength":1}},"required":["q"],"x-keep":{"n":12345678901234567890}}` {
		t.Fatalf("schema not verbatim: %s", gh["inputSchema"])
	}
	if !strings.Contains(string(gh["_meta"]), `"dev.toolgate/source":"gh"`) {
		t.Fatalf("_meta: %s", gh["_meta"])
	}
	if !strings.Contains(string(gh["annotations"]), `"readOnlyHint":true`) {
		t.Fatalf("annotations: %s", gh["annotations"])
	}

	// An allow-list narrows what the endpoint serves (SV-3).
	narrow := serve(t, mcp.EndpointOptions{Tools: []string{"gh_*"}})
	c := &rpcClient{t: t, url: narrow.url, actor: "a", roles: "ADMIN"}
	c.initialize()
	if names, _ := listNames(t, c); strings.Join(names, ",") != "gh_search" {
		t.Fatalf("allow-list: %v", names)
	}
}

// SV-5: a tool off this actor's list answers exactly like an unknown tool.
func TestEndpointUnknownToolParity(t *testing.T) {
	s := serve(t, mcp.EndpointOptions{})
	c := &rpcClient{t: t, url: s.url, actor: "m", roles: "MEMBER"}
	c.initialize()
	strip := func(res map[string]json.RawMessage, name string) string {
		return strings.ReplaceAll(string(res["error"]), name, "NAME")
	}
	hidden := strip(c.call("tools/call", map[string]any{"name": "admin_only", "arguments": map[string]any{}}), "admin_only")
	unknown := strip(c.call("tools/call", map[string]any{"name": "no_such", "arguments": map[string]any{}}), "no_such")
	action := strip(c.call("tools/call", map[string]any{"name": "gh_delete", "arguments": map[string]any{}}), "gh_delete")
	if hidden == "" || hidden != unknown || action != unknown {
		t.Fatalf("answers differ:\nhidden:  %s\nunknown: %s\naction:  %s", hidden, unknown, action)
	}
}

// SV-6, SV-7: failures are isError results; handlers see the call.
func TestEndpointCall(t *testing.T) {
	s := serve(t, mcp.EndpointOptions{Path: "/tools"})
	c := &rpcClient{t: t, url: s.url, actor: "m", roles: "MEMBER"}
	c.initialize()
	res := c.call("tools/call", map[string]any{"name": "gh_search", "arguments": map[string]any{"q": "x"}})
	if !strings.Contains(string(res["result"]), `echo {\"q\":\"x\"}`) {
		t.Fatalf("result: %s %s", res["result"], res["error"])
	}
	call := <-s.calls
	if call.Actor.ID != "m" || call.Endpoint != "/tools" || call.Session != c.session || call.Channel != "mcp" ||
		call.CallID == "" || call.IdempotencyKey == "" || call.CallID == call.IdempotencyKey || call.Source != "gh" {
		t.Fatalf("handler context: %+v", call)
	}
	for name, args := range map[string]any{
		"gh_search": map[string]any{"q": ""}, // fails the schema
		"boom":      map[string]any{},        // the handler fails
	} {
		res := c.call("tools/call", map[string]any{"name": name, "arguments": args})
		var r struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		}
		if err := json.Unmarshal(res["result"], &r); err != nil || !r.IsError || len(r.Content) == 0 {
			t.Fatalf("%s: want isError result, got %s %s", name, res["result"], res["error"])
		}
		if name == "gh_search" && !strings.Contains(r.Content[0].Text, "/q") {
			t.Fatalf("validation message lacks the pointer: %s", r.Content[0].Text)
		}
	}
	if got, _ := s.sessions.Get(c.session); got.Calls != 3 || got.ClientName != "raw-test" || got.Actor.ID != "m" {
		t.Fatalf("session record: %+v", got)
	}
}

// SV-8: a body over the limit is refused with 413 without being read whole.
func TestEndpointBodyLimit(t *testing.T) {
	s := serve(t, mcp.EndpointOptions{MaxRequestBytes: 1024})
	c := &rpcClient{t: t, url: s.url, actor: "m"}
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}`
	if resp := c.post(big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("declared length: HTTP %d", resp.StatusCode)
	}
	// Chunked, no Content-Length: a reader that would never end must not be
	// drained.
	var sent int64
	var mu sync.Mutex
	body := io.MultiReader(strings.NewReader(`{"pad":"`), readerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if sent > 64<<20 {
			return 0, io.EOF
		}
		for i := range p {
			p[i] = 'x'
		}
		sent += int64(len(p))
		return len(p), nil
	}))
	req, _ := http.NewRequest(http.MethodPost, s.url, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-Actor", "m")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked: HTTP %d", resp.StatusCode)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if sent >= 64<<20 {
		t.Fatalf("the server read the whole %d-byte body", sent)
	}
	// Malformed JSON-RPC gets a parse error and changes nothing (QB-3).
	bad := c.post(`{"jsonrpc":"2.0","id":1,"method":`)
	if bad.StatusCode == http.StatusOK || bad.StatusCode >= 500 {
		m := rpcBody(t, bad)
		if !strings.Contains(string(m["error"]), "-32700") {
			t.Fatalf("malformed JSON: %v", m)
		}
	} else {
		bad.Body.Close()
	}
}

type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// SV-2: sessions are minted at initialize; DELETE ends one; an unknown id
// is 404; ending one from core does the same; a session is its actor's.
func TestEndpointSessions(t *testing.T) {
	s := serve(t, mcp.EndpointOptions{})
	c := &rpcClient{t: t, url: s.url, actor: "m", roles: "MEMBER"}
	c.initialize()
	if len(s.sessions.List()) != 1 {
		t.Fatalf("sessions: %+v", s.sessions.List())
	}

	thief := &rpcClient{t: t, url: s.url, actor: "x", session: c.session}
	if resp := thief.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another actor on the session: HTTP %d", resp.StatusCode)
	}

	req, _ := http.NewRequest(http.MethodDelete, s.url, nil)
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	req.Header.Set("X-Test-Actor", "m")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
	if resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after DELETE: HTTP %d", resp.StatusCode)
	}
	if len(s.sessions.List()) != 0 {
		t.Fatalf("session still listed: %+v", s.sessions.List())
	}

	forged := &rpcClient{t: t, url: s.url, actor: "m", session: "0123456789abcdef0123456789abcdef"}
	if resp := forged.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown session id: HTTP %d", resp.StatusCode)
	}

	c2 := &rpcClient{t: t, url: s.url, actor: "m", roles: "MEMBER"}
	c2.initialize()
	if err := s.sessions.End(c2.session); err != nil {
		t.Fatal(err)
	}
	if resp := c2.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after End from core: HTTP %d", resp.StatusCode)
	}
	if err := s.sessions.End(c2.session); !errors.Is(err, core.ErrUnknownSession) {
		t.Fatalf("ending twice: %v", err)
	}
}

// IM-25: a registry change reaches a live session as list_changed.
func TestEndpointListChanged(t *testing.T) {
	s := serve(t, mcp.EndpointOptions{})
	c := &rpcClient{t: t, url: s.url, actor: "m", roles: "MEMBER"}
	c.initialize()
	req, _ := http.NewRequest(http.MethodGet, s.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	req.Header.Set("X-Test-Actor", "m")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The stream may open a moment after the request returns; retry the
	// change a bounded number of times.
	for i := range 20 {
		_ = s.reg.Register(core.Tool{Name: fmt.Sprintf("late_%d", i), Kind: core.KindRead, Description: "x",
			Handler: func(context.Context, json.RawMessage) (core.Result, error) { return core.TextResult(""), nil }})
		deadline := time.After(250 * time.Millisecond)
	wait:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("stream ended")
				}
				if strings.Contains(l, "notifications/tools/list_changed") {
					return
				}
			case <-deadline:
				break wait
			}
		}
	}
	t.Fatal("no list_changed on the session stream")
}

// SV-2: stateless mode mints no session ids.
func TestEndpointStateless(t *testing.T) {
	s := serve(t, mcp.EndpointOptions{Stateless: true})
	c := &rpcClient{t: t, url: s.url, actor: "m", roles: "MEMBER"}
	resp := c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("stateless endpoint minted %q", resp.Header.Get("Mcp-Session-Id"))
	}
	resp.Body.Close()
	if names, _ := listNames(t, c); strings.Join(names, ",") != "boom,gh_search" {
		t.Fatalf("stateless list: %v", names)
	}
}

// CF-1, CF-2, CF-4 over MCP: an action tool is served with the gate's two
// fields; the first call previews and runs nothing, the confirming call runs
// once, a replay is refused as an isError result.
func TestEndpointConfirmGate(t *testing.T) {
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("0123456789abcdef0123456789abcdef!"), Ledger: memstore.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, mcp.EndpointOptions{Gate: gate})
	c := &rpcClient{t: t, url: s.url, actor: "m", roles: "MEMBER"}
	c.initialize()
	names, tools := listNames(t, c)
	if strings.Join(names, ",") != "boom,gh_delete,gh_search" {
		t.Fatalf("with a gate: %v", names)
	}
	if !strings.Contains(string(tools[1]["inputSchema"]), `"confirmToken"`) {
		t.Fatalf("action schema lacks the gate's fields: %s", tools[1]["inputSchema"])
	}
	res := c.call("tools/call", map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": 7}})
	var preview struct {
		StructuredContent struct {
			ConfirmToken string    `json:"confirmToken"`
			ExpiresAt    time.Time `json:"expiresAt"`
			Preview      string    `json:"preview"`
		} `json:"structuredContent"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res["result"], &preview); err != nil || preview.IsError || preview.StructuredContent.ConfirmToken == "" {
		t.Fatalf("preview: %s %s", res["result"], res["error"])
	}
	select {
	case <-s.calls:
		t.Fatal("the preview ran the tool")
	default:
	}
	confirm := map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": 7, "confirm": true, "confirmToken": preview.StructuredContent.ConfirmToken}}
	res = c.call("tools/call", confirm)
	if !strings.Contains(string(res["result"]), `echo {\"id\":7}`) {
		t.Fatalf("confirm: %s %s", res["result"], res["error"])
	}
	<-s.calls
	res = c.call("tools/call", confirm)
	if !strings.Contains(string(res["result"]), `"isError":true`) || !strings.Contains(string(res["result"]), "already used") {
		t.Fatalf("replay: %s", res["result"])
	}
	select {
	case <-s.calls:
		t.Fatal("the replay ran the tool")
	default:
	}
}

// OP-6: every call is audited with its outcome, a preview and its confirm
// share a token id, and argument values are kept only as a hash.
func TestEndpointAudit(t *testing.T) {
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("0123456789abcdef0123456789abcdef!"), Ledger: memstore.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.NewMemStore()
	s := serve(t, mcp.EndpointOptions{Gate: gate, Audit: store, AuditKey: []byte("audit-key")})
	_, sub := s.reg.Bus().Subscribe(0)
	defer sub.Close()
	c := &rpcClient{t: t, url: s.url, actor: "m", roles: "MEMBER"}
	c.initialize()
	const marker = "ARG-VALUE-MARKER"
	c.call("tools/call", map[string]any{"name": "gh_search", "arguments": map[string]any{"q": marker}})
	<-s.calls
	c.call("tools/call", map[string]any{"name": "gh_search", "arguments": map[string]any{"q": ""}})
	res := c.call("tools/call", map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": marker}})
	var preview struct {
		StructuredContent struct{ ConfirmToken string } `json:"structuredContent"`
	}
	_ = json.Unmarshal(res["result"], &preview)
	confirm := map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": marker, "confirm": true, "confirmToken": preview.StructuredContent.ConfirmToken}}
	c.call("tools/call", confirm)
	<-s.calls
	c.call("tools/call", confirm)
	c.call("tools/call", map[string]any{"name": "boom", "arguments": map[string]any{}})

	recs, err := store.Audit(context.Background(), core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, r := range recs {
		outcomes = append(outcomes, r.Outcome)
		if r.Endpoint != "/mcp" || r.ActorID != "m" || r.Tenant != "t1" || r.Session != c.session || r.CallID == "" || !strings.HasPrefix(r.ArgsHash, "hmac-sha256:") {
			t.Errorf("record: %+v", r)
		}
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), marker) {
			t.Fatalf("an argument value reached the audit log: %s", b)
		}
	}
	if got := strings.Join(outcomes, ","); got != "ok,invalid,preview,ok,refused,failed" {
		t.Fatalf("outcomes %s", got)
	}
	if recs[2].ConfirmTokenID == "" || recs[2].ConfirmTokenID != recs[3].ConfirmTokenID || recs[3].Source != "gh" || recs[3].RemoteName != "delete" {
		t.Fatalf("preview and confirm not linked: %+v / %+v", recs[2], recs[3])
	}
	if recs[2].ArgsHash != recs[3].ArgsHash {
		t.Fatal("the confirm's arguments hash differs from the preview's (confirm fields must be stripped)")
	}
	finished := 0
	for len(sub.C()) > 0 {
		if _, ok := (<-sub.C()).Data.(core.CallFinished); ok {
			finished++
		}
	}
	if finished != len(recs) {
		t.Fatalf("%d call events for %d records", finished, len(recs))
	}
}
