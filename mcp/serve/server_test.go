package serve_test

import (
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
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/mcp/serve"
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
	ep       *serve.Endpoint
	calls    chan core.Call
}

func serveEndpoint(t *testing.T, opts serve.EndpointOptions) *served {
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
	ep, err := serve.NewEndpoint(opts)
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

// testOptions is an mcptest client speaking as actor with roles: the
// headers testAuth reads.
func testOptions(actor, roles string) *mcptest.Options {
	return &mcptest.Options{
		Header:     http.Header{"X-Test-Actor": {actor}, "X-Test-Roles": {roles}},
		ClientName: "raw-test", ClientVersion: "9.9",
	}
}

func testClient(url, actor, roles string) *mcptest.Client {
	return mcptest.New(url, testOptions(actor, roles))
}

// initialize opens c's session; the endpoint must mint an id.
func initialize(t *testing.T, c *mcptest.Client) {
	t.Helper()
	if _, err := c.Initialize(t.Context()); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if c.Session() == "" {
		t.Fatal("no Mcp-Session-Id")
	}
}

// rpc sends method with params on c and returns the response's result or
// its error; any other answer fails the test.
func rpc(t *testing.T, c *mcptest.Client, method string, params any) (json.RawMessage, *mcptest.Error) {
	t.Helper()
	res, rpcErr, err := c.Call(t.Context(), method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return res, rpcErr
}

// post sends body as it is on c's session and returns the answer, whatever
// its status.
func post(t *testing.T, c *mcptest.Client, body string) mcptest.Response {
	t.Helper()
	resp, err := c.Post(t.Context(), []byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// listNames lists the tools c sees: their names and their objects.
func listNames(t *testing.T, c *mcptest.Client) ([]string, []map[string]json.RawMessage) {
	t.Helper()
	list, err := c.ListTools(t.Context())
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	var tools []map[string]json.RawMessage
	for _, tl := range list {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(tl.Raw, &m); err != nil {
			t.Fatalf("tools/list: %s: %v", tl.Raw, err)
		}
		names = append(names, tl.Name)
		tools = append(tools, m)
	}
	return names, tools
}

// SV-4, IM-16, IM-17: each actor sees what it may call; schemas are served
// verbatim, the source rides in _meta; action tools wait for the confirm
// gate and are not served.
func TestEndpointListPerActor(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	member := testClient(s.url, "m", "MEMBER")
	initialize(t, member)
	names, tools := listNames(t, member)
	if strings.Join(names, ",") != "boom,gh_search" {
		t.Fatalf("member sees %v", names)
	}
	admin := testClient(s.url, "a", "ADMIN")
	initialize(t, admin)
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
	narrow := serveEndpoint(t, serve.EndpointOptions{Tools: []string{"gh_*"}})
	c := testClient(narrow.url, "a", "ADMIN")
	initialize(t, c)
	if names, _ := listNames(t, c); strings.Join(names, ",") != "gh_search" {
		t.Fatalf("allow-list: %v", names)
	}
}

// SV-5: a tool off this actor's list answers exactly like an unknown tool.
func TestEndpointUnknownToolParity(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	// The error object as sent (its data verbatim), the name blanked.
	strip := func(name string) string {
		_, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
		if rpcErr == nil {
			return ""
		}
		b, _ := json.Marshal(rpcErr)
		return strings.ReplaceAll(string(b), name, "NAME")
	}
	hidden, unknown, action := strip("admin_only"), strip("no_such"), strip("gh_delete")
	if hidden == "" || hidden != unknown || action != unknown {
		t.Fatalf("answers differ:\nhidden:  %s\nunknown: %s\naction:  %s", hidden, unknown, action)
	}
}

// SV-6, SV-7: failures are isError results; handlers see the call.
func TestEndpointCall(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{Path: "/tools"})
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	res, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "gh_search", "arguments": map[string]any{"q": "x"}})
	if !strings.Contains(string(res), `echo {\"q\":\"x\"}`) {
		t.Fatalf("result: %s %s", res, rpcErr)
	}
	call := <-s.calls
	if call.Actor.ID != "m" || call.Endpoint != "/tools" || call.Session != c.Session() || call.Channel != "mcp" ||
		call.CallID == "" || call.IdempotencyKey == "" || call.CallID == call.IdempotencyKey || call.Source != "gh" {
		t.Fatalf("handler context: %+v", call)
	}
	for name, args := range map[string]any{
		"gh_search": map[string]any{"q": ""}, // fails the schema
		"boom":      map[string]any{},        // the handler fails
	} {
		res, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": name, "arguments": args})
		var r struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		}
		if err := json.Unmarshal(res, &r); err != nil || !r.IsError || len(r.Content) == 0 {
			t.Fatalf("%s: want isError result, got %s %s", name, res, rpcErr)
		}
		if name == "gh_search" && !strings.Contains(r.Content[0].Text, "/q") {
			t.Fatalf("validation message lacks the pointer: %s", r.Content[0].Text)
		}
	}
	if got, _ := s.sessions.Get(c.Session()); got.Calls != 3 || got.ClientName != "raw-test" || got.Actor.ID != "m" {
		t.Fatalf("session record: %+v", got)
	}
}

// SV-8: a body over the limit is refused with 413 without being read whole.
func TestEndpointBodyLimit(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{MaxRequestBytes: 1024})
	c := testClient(s.url, "m", "")
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}`
	if resp := post(t, c, big); resp.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("declared length: HTTP %d", resp.Status)
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
	req, err := c.NewRequest(t.Context(), http.MethodPost, body)
	if err != nil {
		t.Fatal(err)
	}
	// The server may drop the connection while the body is still sent:
	// then there is no answer to judge, only what was read.
	if resp, err := c.Do(req); err == nil {
		if resp.Status != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked: HTTP %d", resp.Status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if sent >= 64<<20 {
		t.Fatalf("the server read the whole %d-byte body", sent)
	}
	// Malformed JSON-RPC gets a parse error and changes nothing (QB-3).
	bad := post(t, c, `{"jsonrpc":"2.0","id":1,"method":`)
	if bad.Status == http.StatusOK || bad.Status >= 500 {
		if _, rpcErr, err := bad.Result(); err != nil || rpcErr == nil || rpcErr.Code != -32700 {
			t.Fatalf("malformed JSON: HTTP %d %s", bad.Status, bad.Body)
		}
	}
}

type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// SV-2: sessions are minted at initialize; DELETE ends one; an unknown id
// is 404; ending one from core does the same; a session is its actor's.
func TestEndpointSessions(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	if len(s.sessions.List()) != 1 {
		t.Fatalf("sessions: %+v", s.sessions.List())
	}

	thief := testClient(s.url, "x", "")
	thief.SetSession(c.Session(), "")
	if resp := post(t, thief, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.Status != http.StatusNotFound {
		t.Fatalf("another actor on the session: HTTP %d", resp.Status)
	}

	if resp, err := c.Delete(t.Context()); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
	if resp := post(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.Status != http.StatusNotFound {
		t.Fatalf("after DELETE: HTTP %d", resp.Status)
	}
	if len(s.sessions.List()) != 0 {
		t.Fatalf("session still listed: %+v", s.sessions.List())
	}

	forged := testClient(s.url, "m", "")
	forged.SetSession("0123456789abcdef0123456789abcdef", "")
	if resp := post(t, forged, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.Status != http.StatusNotFound {
		t.Fatalf("unknown session id: HTTP %d", resp.Status)
	}

	c2 := testClient(s.url, "m", "MEMBER")
	initialize(t, c2)
	if err := s.sessions.End(c2.Session()); err != nil {
		t.Fatal(err)
	}
	if resp := post(t, c2, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.Status != http.StatusNotFound {
		t.Fatalf("after End from core: HTTP %d", resp.Status)
	}
	if err := s.sessions.End(c2.Session()); !errors.Is(err, core.ErrUnknownSession) {
		t.Fatalf("ending twice: %v", err)
	}
}

// IM-25: a registry change reaches a live session as list_changed.
func TestEndpointListChanged(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.Listen(ctx)
	if err != nil || st.Status != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, st)
	}
	defer st.Close()
	methods := make(chan string, 64)
	go func() {
		defer close(methods)
		for {
			m, err := st.Next()
			if err != nil {
				return
			}
			select {
			case methods <- m.Method:
			case <-ctx.Done():
				return
			}
		}
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
			case method, ok := <-methods:
				if !ok {
					t.Fatal("stream ended")
				}
				if method == "notifications/tools/list_changed" {
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
	s := serveEndpoint(t, serve.EndpointOptions{Stateless: true})
	c := testClient(s.url, "m", "MEMBER")
	resp := post(t, c, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("stateless endpoint minted %q", resp.Header.Get("Mcp-Session-Id"))
	}
	if names, _ := listNames(t, c); strings.Join(names, ",") != "boom,gh_search" {
		t.Fatalf("stateless list: %v", names)
	}
}

// CF-1, CF-2, CF-4 over MCP: an action tool is served with the gate's two
// fields; the first call previews and runs nothing, the confirming call runs
// once, a replay is refused as an isError result.
func TestEndpointConfirmGate(t *testing.T) {
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("0123456789abcdef0123456789abcdef!"), Ledger: memory.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	s := serveEndpoint(t, serve.EndpointOptions{Gate: gate})
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	names, tools := listNames(t, c)
	if strings.Join(names, ",") != "boom,gh_delete,gh_search" {
		t.Fatalf("with a gate: %v", names)
	}
	if !strings.Contains(string(tools[1]["inputSchema"]), `"confirmToken"`) {
		t.Fatalf("action schema lacks the gate's fields: %s", tools[1]["inputSchema"])
	}
	res, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": 7}})
	var preview struct {
		StructuredContent struct {
			ConfirmToken string    `json:"confirmToken"`
			ExpiresAt    time.Time `json:"expiresAt"`
			Preview      string    `json:"preview"`
		} `json:"structuredContent"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &preview); err != nil || preview.IsError || preview.StructuredContent.ConfirmToken == "" {
		t.Fatalf("preview: %s %s", res, rpcErr)
	}
	select {
	case <-s.calls:
		t.Fatal("the preview ran the tool")
	default:
	}
	confirm := map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": 7, "confirm": true, "confirmToken": preview.StructuredContent.ConfirmToken}}
	res, rpcErr = rpc(t, c, "tools/call", confirm)
	if !strings.Contains(string(res), `echo {\"id\":7}`) {
		t.Fatalf("confirm: %s %s", res, rpcErr)
	}
	<-s.calls
	res, rpcErr = rpc(t, c, "tools/call", confirm)
	if !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), "already used") {
		t.Fatalf("replay: %s", res)
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
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("0123456789abcdef0123456789abcdef!"), Ledger: memory.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	store := memory.NewMemStore()
	s := serveEndpoint(t, serve.EndpointOptions{Gate: gate, Audit: store, AuditKey: []byte("audit-key")})
	_, sub := s.reg.Bus().Subscribe(0)
	defer sub.Close()
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	const marker = "ARG-VALUE-MARKER"
	rpc(t, c, "tools/call", map[string]any{"name": "gh_search", "arguments": map[string]any{"q": marker}})
	<-s.calls
	rpc(t, c, "tools/call", map[string]any{"name": "gh_search", "arguments": map[string]any{"q": ""}})
	res, _ := rpc(t, c, "tools/call", map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": marker}})
	var preview struct {
		StructuredContent struct{ ConfirmToken string } `json:"structuredContent"`
	}
	_ = json.Unmarshal(res, &preview)
	confirm := map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": marker, "confirm": true, "confirmToken": preview.StructuredContent.ConfirmToken}}
	rpc(t, c, "tools/call", confirm)
	<-s.calls
	rpc(t, c, "tools/call", confirm)
	rpc(t, c, "tools/call", map[string]any{"name": "boom", "arguments": map[string]any{}})

	recs, err := store.Audit(context.Background(), core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, r := range recs {
		outcomes = append(outcomes, r.Outcome)
		if r.Endpoint != "/mcp" || r.ActorID != "m" || r.Tenant != "t1" || r.Session != c.Session() || r.CallID == "" || !strings.HasPrefix(r.ArgsHash, "hmac-sha256:") {
			t.Errorf("record: %+v", r)
		}
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), marker) {
			t.Fatalf("an argument value reached the audit log: %s", b)
		}
	}
	// The confirmed call has two records: its intent, before it ran (CF-3),
	// and its outcome.
	if got := strings.Join(outcomes, ","); got != "ok,invalid,preview,intent,ok,refused,failed" {
		t.Fatalf("outcomes %s", got)
	}
	prev, intent, done := recs[2], recs[3], recs[4]
	if prev.ConfirmTokenID == "" || prev.ConfirmTokenID != done.ConfirmTokenID || done.Source != "gh" || done.RemoteName != "delete" {
		t.Fatalf("preview and confirm not linked: %+v / %+v", prev, done)
	}
	if intent.CallID != done.CallID || intent.ConfirmTokenID != done.ConfirmTokenID || intent.CallID == prev.CallID {
		t.Fatalf("intent and outcome not linked: %+v / %+v", intent, done)
	}
	if prev.ArgsHash != done.ArgsHash || intent.ArgsHash != done.ArgsHash {
		t.Fatal("the confirm's arguments hash differs from the preview's (confirm fields must be stripped)")
	}
	finished := 0
	for len(sub.C()) > 0 {
		if _, ok := (<-sub.C()).Data.(core.CallFinished); ok {
			finished++
		}
	}
	if finished != len(recs)-1 {
		t.Fatalf("%d call events for %d records, one of them an intent", finished, len(recs))
	}
}
