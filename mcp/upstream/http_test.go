package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/internal/waittest"
)

// The credentials of authOptions, which the test servers check.
const (
	testToken  = upstreamtest.Token
	testSecret = upstreamtest.Secret
	sigHeader  = upstreamtest.SigHeader
)

func compact(t *testing.T, raw string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// newToolServer is an mcp-go server with tools that exercise raw listing.
func newToolServer(extra ...server.ServerOption) *server.MCPServer {
	s := server.NewMCPServer("http-test", "4.5.6", append([]server.ServerOption{server.WithToolCapabilities(true)}, extra...)...)
	tricky := mcpgo.NewToolWithRawSchema("tricky", "a tricky schema", json.RawMessage(trickySchema))
	tricky.Annotations = mcpgo.ToolAnnotation{Title: "Tricky", ReadOnlyHint: mcpgo.ToBoolPtr(true)}
	s.AddTool(tricky, func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("id=" + req.GetString("id", "")), nil
	})
	s.AddTool(mcpgo.NewToolWithRawSchema("nodesc", "", json.RawMessage(`{"type":"object"}`)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultError("failed on its own merits"), nil
		})
	for i := range 3 {
		s.AddTool(mcpgo.NewTool(fmt.Sprintf("t%d", i)),
			func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText("ok"), nil
			})
	}
	return s
}

// captured is one request as the server saw it.
type captured struct {
	Method, URL, Session string
	Header               http.Header
	Body                 []byte
	RPC                  string // JSON-RPC method, if any
}

// capture records every request and checks IM-4's credentials on it.
type capture struct {
	t    *testing.T
	next http.Handler

	mu   sync.Mutex
	reqs []captured
	bad  []string
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var rpc struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &rpc)
	full := "http://" + r.Host + r.URL.RequestURI()
	var problems []string
	if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
		problems = append(problems, "authorization "+got)
	}
	if got := r.Header.Get("X-Static"); got != "static-value" {
		problems = append(problems, "static header "+got)
	}
	if got := r.Header.Get(sigHeader); VerifySignature([]byte(testSecret), got, r.Method, full, body, time.Now(), time.Minute) != nil {
		problems = append(problems, "signature "+got)
	}
	c.mu.Lock()
	c.reqs = append(c.reqs, captured{r.Method, full, r.Header.Get("Mcp-Session-Id"), r.Header.Clone(), body, rpc.Method})
	for _, p := range problems {
		c.bad = append(c.bad, fmt.Sprintf("%s %s (%s): %s", r.Method, r.URL.Path, rpc.Method, p))
	}
	c.mu.Unlock()
	c.next.ServeHTTP(w, r)
}

func (c *capture) seen() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured(nil), c.reqs...)
}

// kinds lists "METHOD rpc" for every request seen.
func (c *capture) kinds() map[string]int {
	out := map[string]int{}
	for _, r := range c.seen() {
		out[strings.TrimSpace(r.Method+" "+r.RPC)]++
	}
	return out
}

func (c *capture) problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bad...)
}

func authOptions(url, transport string) Options {
	return Options{
		Name: "net", URL: url, Transport: transport,
		// The static X-Toolgate-Signature must lose to the signer's.
		Headers:       map[string]string{"X-Static": "static-value", sigHeader: "static-loses"},
		Authorization: testToken,
		Signing:       &HMACSigning{Secret: []byte(testSecret), Header: sigHeader},
	}
}

func startServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

func connect(t *testing.T, opts Options) core.Upstream {
	t.Helper()
	u, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	if _, err := u.Connect(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	return u
}

// IM-4, IM-17, IM-36 over Streamable HTTP against mcp-go's server: raw
// listing across pages, calls, and credentials on every request including the
// GET stream and the DELETE sent by Close.
func TestStreamableHTTPIM4IM17(t *testing.T) {
	leakCheck(t)
	srv := newToolServer(server.WithPaginationLimit(2))
	capt := &capture{t: t, next: server.NewStreamableHTTPServer(srv, server.WithStateful(true))}
	ts := startServer(t, capt)

	u, err := New(authOptions(ts.URL+"/mcp", "http"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := u.Connect(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(core.ServerInfo{Name: "http-test", Version: "4.5.6", Protocol: "2025-06-18"}, info); diff != "" {
		t.Errorf("server info (-want +got):\n%s", diff)
	}
	tools, err := u.ListTools(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]core.RemoteTool{}
	var names []string
	for _, tl := range tools {
		byName[tl.Name] = tl
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "nodesc,t0,t1,t2,tricky" {
		t.Errorf("tools across pages = %s", got)
	}
	if n := capt.kinds()["POST tools/list"]; n != 3 {
		t.Errorf("tools/list pages = %d, want 3 (5 tools, 2 a page)", n)
	}
	tricky := byName["tricky"]
	// mcp-go's server re-marshals a raw schema, which compacts it: compare
	// compact forms. What matters is that nothing is lost — $schema, $defs,
	// anyOf, x-custom, 12345678901234567890 and 1.50 stay as written.
	if got, want := string(tricky.InputSchema), compact(t, trickySchema); got != want {
		t.Errorf("schema changed:\n got %s\nwant %s", got, want)
	}
	wantAnn, _ := json.Marshal(mcpgo.ToolAnnotation{Title: "Tricky", ReadOnlyHint: mcpgo.ToBoolPtr(true)})
	if string(tricky.Annotations) != string(wantAnn) {
		t.Errorf("annotations = %s, want %s", tricky.Annotations, wantAnn)
	}
	if tricky.Description == nil || *tricky.Description != "a tricky schema" {
		t.Errorf("description = %v", tricky.Description)
	}
	if byName["nodesc"].Description != nil {
		t.Errorf("absent description came back as %q", *byName["nodesc"].Description)
	}

	r, err := u.CallTool(ctxT(t, 5*time.Second), "tricky", json.RawMessage(`{"id":"abc"}`))
	if err != nil || r.IsError || resultText(t, r) != "id=abc" {
		t.Errorf("tricky: %s %v", r.JSON, err)
	}
	// IM-30: isError is a result, not an error.
	r, err = u.CallTool(ctxT(t, 5*time.Second), "nodesc", nil)
	if err != nil || !r.IsError {
		t.Errorf("nodesc: %s isError=%v err=%v", r.JSON, r.IsError, err)
	}
	if err := u.Ping(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("Ping: %v", err)
	}
	waittest.Eventually(t, 5*time.Second, "the GET stream", func() bool { return capt.kinds()["GET"] > 0 })
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	kinds := capt.kinds()
	for _, k := range []string{"POST initialize", "POST notifications/initialized", "POST tools/list", "POST tools/call", "POST ping", "GET", "DELETE"} {
		if kinds[k] == 0 {
			t.Errorf("no %q request seen; saw %v", k, kinds)
		}
	}
	if kinds["POST server/discover"] != 0 {
		t.Error("the client probed server/discover despite the pinned protocol")
	}
	for _, p := range capt.problems() {
		t.Errorf("IM-4: %s", p)
	}
}

// IM-4 over SSE: the stream GET and every POST carry the credentials.
func TestSSEIM4(t *testing.T) {
	leakCheck(t)
	capt := &capture{t: t, next: server.NewSSEServer(newToolServer())}
	ts := startServer(t, capt)
	u := connect(t, authOptions(ts.URL+"/sse", "sse"))
	tools, err := u.ListTools(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 5 {
		t.Errorf("got %d tools", len(tools))
	}
	for _, tl := range tools {
		if tl.Name == "tricky" && string(tl.InputSchema) != compact(t, trickySchema) {
			t.Errorf("schema over SSE: %s", tl.InputSchema)
		}
	}
	r, err := u.CallTool(ctxT(t, 5*time.Second), "tricky", json.RawMessage(`{"id":"sse"}`))
	if err != nil || resultText(t, r) != "id=sse" {
		t.Fatalf("call over SSE: %s %v", r.JSON, err)
	}
	if err := u.Ping(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	kinds := capt.kinds()
	for _, k := range []string{"GET", "POST initialize", "POST notifications/initialized", "POST tools/list", "POST tools/call"} {
		if kinds[k] == 0 {
			t.Errorf("no %q request seen; saw %v", k, kinds)
		}
	}
	for _, p := range capt.problems() {
		t.Errorf("IM-4: %s", p)
	}
}

// IM-2: auto reaches an SSE-only server through the fallback.
func TestAutoFallsBackToSSEIM2(t *testing.T) {
	leakCheck(t)
	capt := &capture{t: t, next: server.NewSSEServer(newToolServer())}
	ts := startServer(t, capt)
	for _, tr := range []string{"", "auto"} {
		u := connect(t, authOptions(ts.URL+"/sse", tr))
		r, err := u.CallTool(ctxT(t, 5*time.Second), "tricky", json.RawMessage(`{"id":"auto"}`))
		if err != nil || resultText(t, r) != "id=auto" {
			t.Fatalf("transport %q: %s %v", tr, r.JSON, err)
		}
		if err := u.Close(); err != nil {
			t.Error(err)
		}
	}
	for _, p := range capt.problems() {
		t.Errorf("IM-4: %s", p)
	}
}

// IM-2, IM-29: auto against a dead port reports the HTTP error, marked as
// not sent (the dial was refused).
func TestAutoDeadPortReportsHTTPErrorIM2(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, tr := range []string{"auto", "http", "sse"} {
		u, err := New(Options{Name: "dead", URL: "http://" + addr + "/mcp?token=secret-in-url", Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		_, err = u.Connect(ctxT(t, 5*time.Second))
		if !errors.Is(err, core.ErrNotSent) || !core.Transient(err) {
			t.Errorf("%s: %v", tr, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret-in-url") {
			t.Errorf("%s: error quotes the URL's query: %v", tr, err)
		}
		if tr == "auto" && (err == nil || !strings.HasPrefix(err.Error(), "streamable HTTP")) {
			t.Errorf("auto reported %v, want the streamable HTTP error", err)
		}
		_ = u.Close()
	}
}

// IM-25: a server's list_changed reaches the callback, over the GET stream
// of Streamable HTTP and over SSE.
func TestToolsChangedIM25(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string
		h    func(*server.MCPServer) http.Handler
	}{
		{"http", "/mcp", func(s *server.MCPServer) http.Handler { return server.NewStreamableHTTPServer(s) }},
		{"sse", "/sse", func(s *server.MCPServer) http.Handler { return server.NewSSEServer(s) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakCheck(t)
			srv := newToolServer()
			ts := startServer(t, tc.h(srv))
			u, err := New(Options{Name: "n", URL: ts.URL + tc.path, Transport: tc.name})
			if err != nil {
				t.Fatal(err)
			}
			var fired atomic.Int32
			u.(core.ToolsChangedNotifier).OnToolsChanged(func() { fired.Add(1) })
			if _, err := u.Connect(ctxT(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
			defer u.Close()
			// The GET stream opens asynchronously; a notification sent
			// before it is lost, so keep changing the list until one lands.
			i := 0
			waittest.Eventually(t, 5*time.Second, "list_changed to reach the callback", func() bool {
				if fired.Load() != 0 {
					return true
				}
				srv.AddTool(mcpgo.NewTool(fmt.Sprintf("added%d", i)),
					func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) { return nil, nil })
				i++
				return false
			})
			tools, err := u.ListTools(ctxT(t, 5*time.Second))
			if err != nil || len(tools) < 6 {
				t.Errorf("after list_changed: %d tools, %v", len(tools), err)
			}
		})
	}
}

// IM-27: a restarted server no longer knows the session: the error is
// ErrSessionExpired, and a fresh Connect works.
func TestSessionExpiredIM27(t *testing.T) {
	leakCheck(t)
	var h atomic.Pointer[http.Handler]
	restart := func() {
		var next http.Handler = server.NewStreamableHTTPServer(newToolServer(), server.WithStateful(true))
		h.Store(&next)
	}
	restart()
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	u := connect(t, Options{Name: "r", URL: ts.URL + "/mcp", Transport: "http"})
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "t0", nil); err != nil {
		t.Fatal(err)
	}
	restart()
	_, err := u.CallTool(ctxT(t, 5*time.Second), "t0", nil)
	if !errors.Is(err, core.ErrSessionExpired) || !core.Transient(err) {
		t.Fatalf("after restart: %v", err)
	}
	if _, err := u.Connect(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if r, err := u.CallTool(ctxT(t, 5*time.Second), "t0", nil); err != nil || resultText(t, r) != "ok" {
		t.Fatalf("after reconnect: %s %v", r.JSON, err)
	}
}

// rawServer is a minimal Streamable HTTP server speaking JSON-RPC by hand,
// for shapes mcp-go's server cannot emit: exact bytes, legacy results,
// error answers, HTTP statuses, hostile pagination.
type rawServer struct {
	pages   []string // tools/list results, by cursor "0", "1", …
	results map[string]string
	status  map[string]int // tools/call name → HTTP status
	endless bool           // tools/list always hands out a new cursor
}

func (s *rawServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name   string `json:"name"`
			Cursor string `json:"cursor"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	reply := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, req.ID, result)
	}
	switch req.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "raw-session")
		reply(`"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"9"}}`)
	case "tools/list":
		if s.endless {
			reply(fmt.Sprintf(`"result":{"tools":[],"nextCursor":"c%s"}`, req.Params.Cursor))
			return
		}
		i := 0
		fmt.Sscan(req.Params.Cursor, &i)
		reply(`"result":` + s.pages[i])
	case "tools/call":
		if s.status[req.Params.Name] == -1 {
			// Hang up mid-call: the request arrived, no answer leaves.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if code := s.status[req.Params.Name]; code != 0 {
			http.Error(w, "upstream trouble", code)
			return
		}
		res, ok := s.results[req.Params.Name]
		if !ok {
			reply(`"error":{"code":-32602,"message":"unknown tool: ` + req.Params.Name + `"}`)
			return
		}
		reply(`"result":` + res)
	default:
		reply(`"result":{}`)
	}
}

// IM-17, IM-36: schemas and annotations come back byte for byte, whitespace
// and unknown keys included, across pages.
func TestRawListBytesIM17(t *testing.T) {
	weirdAnn := `{ "readOnlyHint": true, "x-vendor": {"n": 12345678901234567890} }`
	rs := &rawServer{pages: []string{
		`{"tools":[{"name":"tricky","description":"d","inputSchema":` + trickySchema + `,"annotations":` + weirdAnn + `}],"nextCursor":"1"}`,
		`{"tools":[{"name":"bare"},{"name":"nulls","description":null,"inputSchema":null,"annotations":null}]}`,
	}}
	ts := startServer(t, rs)
	u := connect(t, Options{Name: "raw", URL: ts.URL, Transport: "http"})
	tools, err := u.ListTools(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 3 {
		t.Fatalf("got %d tools", len(tools))
	}
	if string(tools[0].InputSchema) != trickySchema || string(tools[0].Annotations) != weirdAnn {
		t.Errorf("not byte for byte:\n%s\n%s", tools[0].InputSchema, tools[0].Annotations)
	}
	for _, tl := range tools[1:] {
		if tl.Description != nil || tl.InputSchema != nil || tl.Annotations != nil {
			t.Errorf("%s: absent fields came back as %v %s %s", tl.Name, tl.Description, tl.InputSchema, tl.Annotations)
		}
	}
}

// A server that never stops paginating is cut off.
func TestRawListEndlessPagination(t *testing.T) {
	ts := startServer(t, &rawServer{endless: true})
	u := connect(t, Options{Name: "raw", URL: ts.URL, Transport: "http"})
	_, err := u.ListTools(ctxT(t, 60*time.Second))
	if err == nil || !strings.Contains(err.Error(), "pages") {
		t.Fatalf("endless pagination: %v", err)
	}
}

// IM-32, IM-30, IM-27: results and failures over the wire.
func TestRawCallShapesIM32(t *testing.T) {
	rs := &rawServer{
		results: map[string]string{
			"pass":    `{"content":[{"type":"text","text":"hi"}],"structuredContent":{"big":12345678901234567890},"_meta":{"m":1}}`,
			"legacy":  `{"toolResult":{"rows":[1,2]}}`,
			"both":    `{"content":[{"type":"text","text":"modern"}],"toolResult":"legacy"}`,
			"failed":  `{"content":[{"type":"text","text":"no"}],"isError":true}`,
			"strange": `{"content":[{"type":"video","uri":"x"}]}`,
		},
		status: map[string]int{"s503": 503, "s500": 500, "s403": 403, "hangup": -1},
	}
	ts := startServer(t, rs)
	u := connect(t, Options{Name: "raw", URL: ts.URL, Transport: "http"})
	callRaw := func(name string) (core.Result, error) {
		return u.CallTool(ctxT(t, 5*time.Second), name, json.RawMessage(`{}`))
	}
	for _, name := range []string{"pass", "both", "strange"} {
		r, err := callRaw(name)
		if err != nil || string(r.JSON) != rs.results[name] || r.IsError {
			t.Errorf("%s: %s %v", name, r.JSON, err)
		}
	}
	r, err := callRaw("legacy")
	if err != nil || string(r.JSON) != `{"content":[{"type":"text","text":"{\"rows\":[1,2]}"}],"isError":false}` {
		t.Errorf("legacy: %s %v", r.JSON, err)
	}
	r, err = callRaw("failed")
	if err != nil || !r.IsError || string(r.JSON) != rs.results["failed"] {
		t.Errorf("failed: %s %v", r.JSON, err)
	}
	_, err = callRaw("missing")
	var rpc *core.RPCError
	if !errors.As(err, &rpc) || rpc.Code != -32602 || !strings.Contains(rpc.Message, "missing") {
		t.Errorf("RPC error: %v", err)
	}
	// IM-29: the request left, so a hang-up is transient but never "not sent".
	_, err = callRaw("hangup")
	if !core.Transient(err) || errors.Is(err, core.ErrNotSent) || !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("hangup: %v", err)
	}
	for name, code := range map[string]int{"s503": 503, "s500": 500, "s403": 403} {
		_, err := callRaw(name)
		var se *core.StatusError
		if !errors.As(err, &se) || se.Code != code || core.Transient(err) != (code >= 500) || errors.Is(err, core.ErrNotSent) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Connect's context bounds the handshake; a server that never answers
// leaves nothing running.
func TestConnectBoundedByContext(t *testing.T) {
	leakCheck(t)
	release := make(chan struct{})
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	for _, tr := range []string{"http", "sse"} {
		u, err := New(Options{Name: "slow", URL: ts.URL, Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = u.Connect(ctxT(t, 300*time.Millisecond))
		if err == nil || !core.Transient(err) || time.Since(start) > 3*time.Second {
			t.Errorf("%s: Connect = %v after %v", tr, err, time.Since(start))
		}
		_ = u.Close()
	}
}

// IM-27: when the SSE stream drops, calls fail at once as transient, and a
// fresh Connect works.
func TestSSEStreamLostIM27(t *testing.T) {
	leakCheck(t)
	ts := startServer(t, server.NewSSEServer(newToolServer()))
	u := connect(t, Options{Name: "s", URL: ts.URL + "/sse", Transport: "sse"})
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "t0", nil); err != nil {
		t.Fatal(err)
	}
	ts.CloseClientConnections()
	var err error
	waittest.Eventually(t, 5*time.Second, "the lost stream to show", func() bool {
		_, err = u.CallTool(ctxT(t, 5*time.Second), "t0", nil)
		return err != nil
	})
	// Which side notices first is a race: the dropped stream
	// (io.ErrUnexpectedEOF) or the POST on the closed connection (io.EOF).
	// Either is transient, which is what the importer acts on.
	if !core.Transient(err) || !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Fatalf("after the stream dropped: %v", err)
	}
	if _, err := u.Connect(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if r, err := u.CallTool(ctxT(t, 5*time.Second), "t0", nil); err != nil || resultText(t, r) != "ok" {
		t.Fatalf("after reconnect: %s %v", r.JSON, err)
	}
}

// IM-5: nothing logged — by toolgate or by mcp-go through the handed-down
// logger — carries the token, the signing secret, header values or a URL's
// query; mcp-go's errors are demoted to debug.
func TestLogsCarryNoSecretsIM5(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := startServer(t, server.NewStreamableHTTPServer(newToolServer()))
	opts := authOptions(ts.URL+"/mcp?key=url-secret", "auto")
	opts.Logger = log
	u := connect(t, opts)
	if _, err := u.ListTools(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	_ = u.Close()
	// A dead port through auto: both transports fail and log.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	opts.URL = "http://" + addr + "/mcp?key=url-secret"
	dead, _ := New(opts)
	_, err := dead.Connect(ctxT(t, 5*time.Second))
	_ = dead.Close()
	if err == nil {
		t.Fatal("dead port connected")
	}
	// mcp-go's own error-level lines come through as debug.
	libLogger(log, newRedactor([2]string{"http://h/?key=url-secret", "http://h/"})).Error("failed", "err", errors.New(`Post "http://h/?key=url-secret": EOF`), "url", "http://h/?key=url-secret")
	out := buf.String()
	for _, secret := range []string{testToken, testSecret, "static-value", "url-secret"} {
		if strings.Contains(out, secret) || strings.Contains(err.Error(), secret) {
			t.Errorf("%q leaked:\n%s\n%v", secret, out, err)
		}
	}
	if strings.Contains(out, "level=ERROR") || !strings.Contains(out, `msg=failed`) {
		t.Errorf("mcp-go's line not demoted to debug:\n%s", out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// IM-29: a TLS handshake that fails (an untrusted certificate) happened
// before the request left.
func TestTLSHandshakeFailureNotSentIM29(t *testing.T) {
	ts := httptest.NewUnstartedServer(server.NewStreamableHTTPServer(newToolServer()))
	ts.Config.ErrorLog = stdlog.New(io.Discard, "", 0) // the refused handshake is expected
	ts.StartTLS()
	t.Cleanup(ts.Close)
	u, err := New(Options{Name: "tls", URL: ts.URL + "/mcp", Transport: "http"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = u.Connect(ctxT(t, 5*time.Second))
	if !errors.Is(err, core.ErrNotSent) {
		t.Fatalf("untrusted certificate: %v", err)
	}
	_ = u.Close()
}
