package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/importer"
	"github.com/toolgate/toolgate/internal/waittest"
)

// modernStdioServerArg, as the first argument, makes the test binary a
// stdio server of the stateless revision only.
const modernStdioServerArg = "toolgate-test-modern-stdio-server"

// legacyRefusal is how a server of 2026-07-28 only answers a request
// without that revision's _meta: -32022 naming what it serves.
func legacyRefusal(id json.RawMessage, requested string) []byte {
	e := mcpgo.UnsupportedProtocolVersionError{Version: requested, Supported: []string{ModernProtocolVersion}}.JSONRPCError()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e.Error})
	return b
}

// modernRequest is what a test server reads of a request.
type modernRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name            string                     `json:"name"`
		ProtocolVersion string                     `json:"protocolVersion"`
		Meta            map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// modernProblems lists what a request of the stateless revision lacks:
// the _meta members every request must carry (notifications need none).
func (r modernRequest) problems() []string {
	if len(r.ID) == 0 {
		return nil
	}
	var out []string
	var v string
	if json.Unmarshal(r.Params.Meta[mcpgo.MetaKeyProtocolVersion], &v) != nil || v != ModernProtocolVersion {
		out = append(out, r.Method+": _meta protocolVersion "+v)
	}
	var info mcpgo.Implementation
	if json.Unmarshal(r.Params.Meta[mcpgo.MetaKeyClientInfo], &info) != nil || info.Name != "toolgate" {
		out = append(out, r.Method+": _meta clientInfo")
	}
	var caps mcpgo.ClientCapabilities
	if json.Unmarshal(r.Params.Meta[mcpgo.MetaKeyClientCapabilities], &caps) != nil || caps.Elicitation == nil {
		out = append(out, r.Method+": _meta clientCapabilities")
	}
	return out
}

func (r modernRequest) modern() bool {
	var v string
	return json.Unmarshal(r.Params.Meta[mcpgo.MetaKeyProtocolVersion], &v) == nil && mcpgo.IsModernProtocol(v)
}

// addModernTools gives s the tools of the modern tests: echo, counted
// (counts its calls), ask (asks for a confirmation through an
// input_required result) and grow (adds a tool, which announces
// list_changed).
func addModernTools(s *server.MCPServer, counted *atomic.Int32) {
	s.AddTool(mcpgo.NewToolWithRawSchema("tricky", "a tricky schema", json.RawMessage(trickySchema)),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("id=" + req.GetString("id", "")), nil
		})
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcpgo.NewTool("counted"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(fmt.Sprint(counted.Add(1))), nil
		})
	s.AddTool(mcpgo.NewTool("ask"),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			if r := server.ElicitationResponse(req.Params.InputResponses, "confirm"); r != nil {
				return mcpgo.NewToolResultText(fmt.Sprintf("action=%s state=%s", r.Action, req.Params.RequestState)), nil
			}
			return server.NewInputRequestBuilder("st-1").Elicit("confirm", mcpgo.ElicitationParams{
				Message:         "go ahead?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			}).ToolResult(), nil
		})
	s.AddTool(mcpgo.NewTool("sample"),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			if r := server.SamplingResponse(req.Params.InputResponses, "llm"); r != nil {
				var text struct{ Text string }
				raw, _ := json.Marshal(r.Content)
				_ = json.Unmarshal(raw, &text)
				return mcpgo.NewToolResultText("sampled: " + text.Text), nil
			}
			return server.NewInputRequestBuilder("st-2").Sample("llm", mcpgo.CreateMessageParams{
				Messages: []mcpgo.SamplingMessage{{Role: mcpgo.RoleUser,
					Content: mcpgo.TextContent{Type: "text", Text: "what is 2+2"}}},
				MaxTokens: 10,
			}).ToolResult(), nil
		})
	var grown atomic.Int32
	s.AddTool(mcpgo.NewTool("grow"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			n := grown.Add(1)
			s.AddTool(mcpgo.NewTool(fmt.Sprintf("grown%d", n)),
				func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
					return mcpgo.NewToolResultText("grown"), nil
				})
			return mcpgo.NewToolResultText("ok"), nil
		})
}

// modernHTTP is a Streamable HTTP server of the stateless revision only,
// mcp-go's restricted to 2026-07-28 behind a front that refuses every
// legacy request with -32022 (mcp-go alone still answers initialize). It
// checks IM-4's credentials and the revision's _meta and headers on every
// request, hangs up on a call of "drop" after reading it, and refuses a
// call of "mismatch" with HeaderMismatch.
//
// Its tool route has x-mcp-header parameters, which mcp-go checks against
// the Mcp-Param headers, and answers with those headers; its listing also
// carries badheader, a tool whose annotation breaks the revision's rules
// (mcp-go refuses to serve one, other servers may not). touch sends
// notifications/resources/updated for its uri on every open
// subscriptions/listen whose filter names it; the server keeps a log of
// the listen requests opened and closed.
type modernHTTP struct {
	srv     *server.MCPServer
	next    http.Handler
	counted atomic.Int32
	drops   atomic.Int32

	mu      sync.Mutex
	methods []string // "legacy initialize", "tools/call", …
	bad     []string
	listens map[*openListen]bool
	// listenLog is "open a,b" and "close a,b" (the filter's URIs) in the
	// order the server saw them.
	listenLog []string
}

// openListen is a subscriptions/listen request the test server holds.
type openListen struct {
	ch   chan<- mcpgo.JSONRPCNotification
	uris []string
}

// routeSchema marks three top-level parameters and a nested one.
const routeSchema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"count":{"type":"integer","x-mcp-header":"Count"},
	"dry":{"type":"boolean","x-mcp-header":"Dry"},
	"target":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},
	"note":{"type":"string"}}}`

func newModernHTTP() *modernHTTP {
	m := &modernHTTP{listens: map[*openListen]bool{}}
	hooks := &server.Hooks{}
	hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcpgo.ListToolsRequest, r *mcpgo.ListToolsResult) {
		r.Tools = append(r.Tools, mcpgo.NewToolWithRawSchema("badheader", "an object in a header",
			json.RawMessage(`{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}`)))
	})
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcpgo.SubscriptionsListenRequest) {
		s := server.ClientSessionFromContext(ctx)
		if s == nil {
			return
		}
		l := &openListen{ch: s.NotificationChannel(), uris: req.Params.Notifications.ResourceSubscriptions}
		m.mu.Lock()
		m.listens[l] = true
		m.listenLog = append(m.listenLog, "open "+strings.Join(l.uris, ","))
		m.mu.Unlock()
		context.AfterFunc(ctx, func() {
			m.mu.Lock()
			delete(m.listens, l)
			m.listenLog = append(m.listenLog, "close "+strings.Join(l.uris, ","))
			m.mu.Unlock()
		})
	})
	m.srv = server.NewMCPServer("modern-http", "7.0.0", server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true), server.WithHooks(hooks))
	addModernTools(m.srv, &m.counted)
	m.srv.AddTool(mcpgo.NewTool("drop"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("never seen"), nil
	})
	m.srv.AddTool(mcpgo.NewToolWithRawSchema("route", "x-mcp-header parameters", json.RawMessage(routeSchema)),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			var seen []string
			for k, v := range req.Header {
				if name, ok := strings.CutPrefix(k, mcpgo.HeaderParamPrefix); ok {
					seen = append(seen, name+"="+strings.Join(v, "|"))
				}
			}
			slices.Sort(seen)
			return mcpgo.NewToolResultText(strings.Join(seen, " ")), nil
		})
	m.srv.AddResource(mcpgo.NewResource("test://doc", "doc"), func(context.Context, mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
		return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: "test://doc", Text: "doc"}}, nil
	})
	m.srv.AddTool(mcpgo.NewTool("touch", mcpgo.WithString("uri")), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		uri := req.GetString("uri", "")
		n := 0
		m.mu.Lock()
		defer m.mu.Unlock()
		for l := range m.listens {
			if slices.Contains(l.uris, uri) {
				select {
				case l.ch <- mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION, Notification: mcpgo.Notification{
					Method: mcpgo.MethodNotificationResourceUpdated,
					Params: mcpgo.NotificationParams{AdditionalFields: map[string]any{"uri": uri}},
				}}:
					n++
				default:
				}
			}
		}
		return mcpgo.NewToolResultText(fmt.Sprintf("touched %d", n)), nil
	})
	m.next = server.NewStreamableHTTPServer(m.srv, server.WithStreamableHTTPProtocolVersions(ModernProtocolVersion))
	return m
}

// listening returns the log of listen requests and the filters of those
// open now, sorted.
func (m *modernHTTP) listening() (log []string, open []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for l := range m.listens {
		open = append(open, strings.Join(l.uris, ","))
	}
	slices.Sort(open)
	return slices.Clone(m.listenLog), open
}

func (m *modernHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req modernRequest
	_ = json.Unmarshal(body, &req)
	var problems []string
	if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
		problems = append(problems, "authorization "+got)
	}
	full := "http://" + r.Host + r.URL.RequestURI()
	if VerifySignature([]byte(testSecret), r.Header.Get(sigHeader), r.Method, full, body, time.Now(), time.Minute) != nil {
		problems = append(problems, r.Method+" "+req.Method+": signature")
	}
	modern := r.Method == http.MethodPost && req.modern()
	if modern {
		problems = append(problems, req.problems()...)
		if len(req.ID) > 0 && r.Header.Get(mcpgo.HeaderMethod) != req.Method {
			problems = append(problems, req.Method+": Mcp-Method "+r.Header.Get(mcpgo.HeaderMethod))
		}
	}
	m.mu.Lock()
	what := req.Method
	if !modern {
		what = "legacy " + r.Method + " " + req.Method
	}
	m.methods = append(m.methods, what)
	m.bad = append(m.bad, problems...)
	m.mu.Unlock()
	switch {
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case !modern:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(legacyRefusal(req.ID, req.Params.ProtocolVersion))
	case req.Method == "tools/call" && req.Params.Name == "mismatch":
		// A refusal no listing explains.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32020,"message":"Header mismatch"}}`, req.ID)
	case req.Method == "tools/call" && req.Params.Name == "drop":
		// The call arrived; its answer never leaves.
		m.drops.Add(1)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	default:
		m.next.ServeHTTP(w, r)
	}
}

func (m *modernHTTP) seen() ([]string, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.methods...), append([]string(nil), m.bad...)
}

// serveOn serves h on addr (":0" for any port) until the test ends or
// the returned stop is called; it returns the address.
func serveOn(t *testing.T, addr string, h http.Handler) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = hs.Close()
			<-done
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// modernOptions are authOptions against a modern server at addr.
func modernOptions(addr string) UpstreamOptions {
	o := authOptions("http://"+addr+"/mcp", "http")
	o.Name = "modern"
	return o
}

// IM-2, IM-4, IM-17, IM-25, IM-32: an upstream that serves only the
// stateless revision over Streamable HTTP is found by server/discover
// after it refuses initialize, and is listed raw, called, pinged and heard
// from through subscriptions/listen, every request signed and carrying the
// revision's _meta and headers. An elicitation it asks for with no client
// session to ask is declined.
func TestModernOnlyUpstreamHTTP(t *testing.T) {
	leakCheck(t)
	m := newModernHTTP()
	addr, _ := serveOn(t, "127.0.0.1:0", m)
	u, err := NewUpstream(modernOptions(addr))
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	u.(core.ToolsChangedNotifier).OnToolsChanged(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	info, err := u.Connect(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer u.Close()
	if info.Protocol != ModernProtocolVersion || info.Name != "modern-http" || info.Version != "7.0.0" {
		t.Errorf("server info = %+v", info)
	}
	if got := u.(core.TransportReporter).Transport(); got != "http" {
		t.Errorf("transport = %q", got)
	}
	checkModernUpstream(t, u, changed)
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	methods, bad := m.seen()
	for _, p := range bad {
		t.Error(p)
	}
	want := []string{"legacy POST initialize", "server/discover", "subscriptions/listen"}
	if len(methods) < 3 || strings.Join(methods[:3], ",") != strings.Join(want, ",") {
		t.Errorf("requests began %q, want %q", methods, want)
	}
	for _, m := range methods[1:] {
		if strings.HasPrefix(m, "legacy") {
			t.Errorf("a legacy request after discovery: %s", m)
		}
	}
}

// checkModernUpstream runs what both transports must do against a
// connected modern upstream with the addModernTools tools.
func checkModernUpstream(t *testing.T, u core.Upstream, changed <-chan struct{}) {
	t.Helper()
	tools, err := u.ListTools(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]core.RemoteTool{}
	for _, tl := range tools {
		names[tl.Name] = tl
	}
	if tr, ok := names["tricky"]; !ok || string(tr.InputSchema) != compact(t, trickySchema) {
		t.Errorf("tricky's schema = %s", tr.InputSchema)
	}
	if _, ok := names["grown1"]; ok {
		t.Fatal("grown1 listed before it was grown")
	}
	r, err := u.CallTool(ctxT(t, 5*time.Second), "echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil || resultText(t, r) != "hi" || r.IsError {
		t.Fatalf("echo: %s %v", r.JSON, err)
	}
	// The result is the server's, passed on whole (IM-32).
	if !bytes.Contains(r.JSON, []byte(`"resultType":"complete"`)) {
		t.Errorf("echo's result lost the server's members: %s", r.JSON)
	}
	if err := u.Ping(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("Ping: %v", err)
	}
	r, err = u.CallTool(ctxT(t, 5*time.Second), "ask", nil)
	if err != nil || resultText(t, r) != "action=decline state=st-1" {
		t.Errorf("ask with no session to ask: %s %v", r.JSON, err)
	}
	// Connect returned once the subscription was acknowledged, so the
	// change is heard without retrying.
	for len(changed) > 0 {
		<-changed
	}
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "grow", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctxT(t, 10*time.Second).Done():
		t.Fatal("no list_changed through subscriptions/listen")
	}
	tools, err = u.ListTools(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range tools {
		found = found || tl.Name == "grown1"
	}
	if !found {
		t.Error("grown1 not listed after list_changed")
	}
	// The revision answers a method the server lacks with HTTP 404 and
	// -32601: that is an answer, not an ended session.
	var rpc *core.RPCError
	if _, err := u.(core.CatalogUpstream).ListPrompts(ctxT(t, 5*time.Second)); !errors.As(err, &rpc) || rpc.Code != -32601 || core.Transient(err) {
		t.Errorf("prompts/list of a server without prompts: %v", err)
	}
	// A tool the server does not have is the server's definite answer.
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "nope", nil); err == nil || core.Transient(err) {
		t.Errorf("unknown tool: %v", err)
	}
}

// IM-27, IM-29, IM-37: imported through the importer, a modern HTTP
// upstream's action whose answer was lost is not sent again; when the
// server restarts, the lost subscription asks for a refresh, and the next
// call reconnects and runs.
func TestModernOnlyUpstreamHTTPNeverTwiceAndReconnect(t *testing.T) {
	leakCheck(t)
	m := newModernHTTP()
	addr, stopServer := serveOn(t, "127.0.0.1:0", m)
	up, err := NewUpstream(modernOptions(addr))
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	im := importer.NewImporter(reg, []importer.UpstreamSpec{{
		Name: "modern", Prefix: "m", Transport: "http", Actions: []string{"drop", "counted"},
		Timeout: 5 * time.Second, Upstream: up,
	}}, &importer.ImporterOptions{Attempts: 3, Backoff: func(int) time.Duration { return time.Millisecond }})
	defer im.Close()
	if err := im.Start(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := im.Statuses()[0]; st.State != core.StateConnected || st.Server.Protocol != ModernProtocolVersion {
		t.Fatalf("status = %+v", st)
	}
	actor := core.Actor{ID: "x"}
	_, err = reg.Invoke(ctxT(t, 10*time.Second), actor, "m_drop", nil)
	if !errors.Is(err, core.ErrOutcomeUnknown) {
		t.Errorf("action whose answer was lost: %v", err)
	}
	if n := m.drops.Load(); n != 1 {
		t.Errorf("the action reached the server %d times", n)
	}

	// The server goes away and comes back on the same address with a
	// fresh state.
	stopServer()
	m2 := newModernHTTP()
	serveOn(t, addr, m2)
	r, err := reg.Invoke(ctxT(t, 10*time.Second), actor, "m_counted", nil)
	if err != nil || resultText(t, r) != "1" {
		t.Fatalf("call after the restart: %s %v", r.JSON, err)
	}
	if n := m2.counted.Load(); n != 1 {
		t.Errorf("counted ran %d times on the restarted server", n)
	}
	// The new connection listens again: a change on the restarted server
	// is imported.
	if _, err := reg.Invoke(ctxT(t, 10*time.Second), actor, "m_grow", nil); err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, 10*time.Second, "m_grown1 imported after list_changed", func() bool {
		_, ok := reg.Get("m_grown1")
		return ok
	})
	methods, bad := m2.seen()
	for _, p := range bad {
		t.Error(p)
	}
	if !slices.Contains(methods, "subscriptions/listen") {
		t.Errorf("no subscriptions/listen on the restarted server: %q", methods)
	}
}

// IM-2, IM-3, IM-25, IM-29: a stdio child that serves only the stateless
// revision is found by server/discover, listed, called and heard from
// through subscriptions/listen; a call whose child dies before answering
// is ambiguous, never "not sent"; a fresh Connect starts a new child.
func TestModernOnlyUpstreamStdio(t *testing.T) {
	leakCheck(t)
	opts := stdioOptions(t)
	opts.Args = []string{modernStdioServerArg}
	u, err := NewUpstream(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	changed := make(chan struct{}, 16)
	u.(core.ToolsChangedNotifier).OnToolsChanged(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	info, err := u.Connect(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("Connect: %v (stderr: %s)", err, u.(StderrReporter).Stderr())
	}
	if info.Protocol != ModernProtocolVersion || info.Name != "modern-stdio" {
		t.Errorf("server info = %+v", info)
	}
	checkModernUpstream(t, u, changed)
	r, err := u.CallTool(ctxT(t, 5*time.Second), "problems", nil)
	if err != nil || resultText(t, r) != "initialize refused" {
		t.Errorf("what the child saw: %s %v", r.JSON, err)
	}

	_, err = u.CallTool(ctxT(t, 5*time.Second), "crash", nil)
	if err == nil || errors.Is(err, core.ErrNotSent) || !core.Transient(err) {
		t.Errorf("call whose child died: %v", err)
	}
	if _, err := u.Connect(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if r, err := u.CallTool(ctxT(t, 5*time.Second), "counted", nil); err != nil || resultText(t, r) != "1" {
		t.Errorf("call on the new child: %s %v", r.JSON, err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// runModernStdioServer is mcp-go's stdio server behind a front that
// refuses every request without the stateless revision's _meta, as a
// server of that revision only does. The tool problems reports what the
// front saw: "initialize refused", then any request that lacked _meta.
func runModernStdioServer() {
	s := server.NewMCPServer("modern-stdio", "8.0.0", server.WithToolCapabilities(true))
	var counted atomic.Int32
	addModernTools(s, &counted)
	var mu sync.Mutex
	var seen []string
	s.AddTool(mcpgo.NewTool("problems"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		return mcpgo.NewToolResultText(strings.Join(seen, "; ")), nil
	})
	s.AddTool(mcpgo.NewTool("crash"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		// Each run is marked where the test can count it, beyond this
		// process's life.
		if dir := os.Getenv("MODERN_MARKS"); dir != "" {
			f, err := os.OpenFile(filepath.Join(dir, "crash"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				_, _ = f.WriteString("ran\n")
				_ = f.Close()
			}
		}
		os.Exit(3)
		return nil, nil
	})
	out := &lineWriter{w: os.Stdout}
	// chatty logs at three levels and reports progress; the stateless
	// revision logs only at the level a request names. It returns once its
	// notifications are written, as mcp-go's stdio server writes them from
	// a goroutine of their own.
	s.AddTool(mcpgo.NewTool("chatty"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		var token mcpgo.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		var min mcpgo.LoggingLevel
		if info := server.RequestProtocolInfoFromContext(ctx); info != nil {
			min = info.LogLevel
		}
		before, sent := out.notes.Load(), int64(0)
		for i, level := range []mcpgo.LoggingLevel{mcpgo.LoggingLevelDebug, mcpgo.LoggingLevelInfo, mcpgo.LoggingLevelError} {
			_ = s.SendLogMessageToClient(ctx, mcpgo.NewLoggingMessageNotification(level, "chatty", "message "+string(level)))
			if min != "" && level.ShouldSendTo(min) {
				sent++
			}
			if token != nil {
				_ = s.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress), map[string]any{
					"progressToken": token, "progress": i + 1, "total": 3,
				})
				sent++
			}
		}
		waittest.Poll(10*time.Second, func() bool { return out.notes.Load() >= before+sent })
		return mcpgo.NewToolResultText("chatted"), nil
	})
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(os.Stdin)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var req modernRequest
				_ = json.Unmarshal(line, &req)
				switch {
				case req.Method != "" && !req.modern() && len(req.ID) > 0:
					mu.Lock()
					if req.Method == "initialize" {
						seen = append(seen, "initialize refused")
					} else {
						seen = append(seen, "legacy "+req.Method)
					}
					mu.Unlock()
					_, _ = out.Write(append(legacyRefusal(req.ID, req.Params.ProtocolVersion), '\n'))
					continue
				case req.Method != "":
					if p := req.problems(); len(p) > 0 {
						mu.Lock()
						seen = append(seen, p...)
						mu.Unlock()
					}
				}
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				_ = pw.Close()
				return
			}
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := server.NewStdioServer(s).Listen(ctx, pr, out); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

// lineWriter writes whole lines, so that the front's refusals never land
// inside a line of the server's.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	// notes counts the notifications written.
	notes atomic.Int64
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		if _, err := l.w.Write(l.buf[:i+1]); err != nil {
			return 0, err
		}
		l.notes.Add(int64(bytes.Count(l.buf[:i+1], []byte(`"method":"notifications/`))))
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}

// IM-2: with transport auto, a modern-only server is reached over
// Streamable HTTP after its refusal of initialize, before any SSE attempt.
func TestModernOnlyUpstreamAuto(t *testing.T) {
	leakCheck(t)
	m := newModernHTTP()
	addr, _ := serveOn(t, "127.0.0.1:0", m)
	o := modernOptions(addr)
	o.Transport = "auto"
	u := connect(t, o)
	if got := u.(core.TransportReporter).Transport(); got != "http" {
		t.Errorf("transport = %q", got)
	}
	if r, err := u.CallTool(ctxT(t, 5*time.Second), "echo", json.RawMessage(`{"text":"auto"}`)); err != nil || resultText(t, r) != "auto" {
		t.Errorf("echo: %s %v", r.JSON, err)
	}
	if err := u.Close(); err != nil {
		t.Error(err)
	}
	methods, bad := m.seen()
	for _, p := range bad {
		t.Error(p)
	}
	for _, m := range methods {
		if strings.HasPrefix(m, "legacy GET") {
			t.Errorf("an SSE attempt: %q", methods)
		}
	}
}

// IM-27, IM-29, IM-37: imported through the importer, a modern stdio
// upstream's action whose child died before answering is not sent again,
// and the next call starts a new child and runs.
func TestModernOnlyUpstreamStdioNeverTwiceAndReconnect(t *testing.T) {
	leakCheck(t)
	marks := t.TempDir()
	opts := stdioOptions(t)
	opts.Args = []string{modernStdioServerArg}
	opts.Env = map[string]string{"MODERN_MARKS": marks}
	up, err := NewUpstream(opts)
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	im := importer.NewImporter(reg, []importer.UpstreamSpec{{
		Name: "modern", Prefix: "m", Actions: []string{"crash", "counted"}, Timeout: 10 * time.Second, Upstream: up,
	}}, &importer.ImporterOptions{Attempts: 3, Backoff: func(int) time.Duration { return time.Millisecond }})
	defer im.Close()
	if err := im.Start(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := im.Statuses()[0]; st.State != core.StateConnected || st.Server.Protocol != ModernProtocolVersion {
		t.Fatalf("status = %+v", st)
	}
	actor := core.Actor{ID: "x"}
	if _, err := reg.Invoke(ctxT(t, 20*time.Second), actor, "m_crash", nil); !errors.Is(err, core.ErrOutcomeUnknown) {
		t.Errorf("action whose child died: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(marks, "crash"))
	if err != nil || string(b) != "ran\n" {
		t.Errorf("crash ran %q times (%v), want once", b, err)
	}
	r, err := reg.Invoke(ctxT(t, 20*time.Second), actor, "m_counted", nil)
	if err != nil || resultText(t, r) != "1" {
		t.Errorf("call on the new child: %s %v", r.JSON, err)
	}
}
