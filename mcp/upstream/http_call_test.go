package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// streamServer answers tools/call by the tool's name: "json" as one JSON
// answer, "sse" on an event stream after a notification, "resume" with a
// stream it ends after an event id (the answer waits for the GET that
// resumes it, SEP-1699), "cut" with a stream that breaks off after a
// notification. It records what each tools/call carried.
type streamServer struct {
	mu      sync.Mutex
	headers []http.Header
	bodies  []string
	resumed string // Last-Event-ID of the resuming GET
	pending string // the id of the call waiting to be resumed
	// onCall, if set, sees every tools/call.
	onCall func(*http.Request)
}

func (s *streamServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		s.mu.Lock()
		last, id := r.Header.Get("Last-Event-ID"), s.pending
		s.resumed = last
		s.mu.Unlock()
		if last == "" || id == "" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", id)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result := func(text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, req.ID, text)
	}
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}`
	switch req.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "stream-session")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"stream","version":"1"}}}`, req.ID)
		return
	case "tools/call":
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)
		return
	}
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.bodies = append(s.bodies, string(body))
	onCall := s.onCall
	s.mu.Unlock()
	if onCall != nil {
		onCall(r)
	}
	switch req.Params.Name {
	case "json":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, result("plain"))
	case "sse":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: %s\n\nevent: message\ndata: %s\n\n", note, result("streamed"))
	case "resume":
		s.mu.Lock()
		s.pending = string(req.ID)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: e1\nretry: 10\ndata:\n\n")
	case "cut":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", note)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

// IM-32, IM-29, IM-27: tools/call over Streamable HTTP goes out as one POST
// with the session's headers; a JSON answer, a stream (its notifications
// delivered) and a stream resumed with Last-Event-ID all come back with
// their result; a stream that breaks off is an answer lost, never "not sent".
func TestRawToolsCallOverStreamableHTTP(t *testing.T) {
	leakCheck(t)
	srv := &streamServer{}
	ts := startServer(t, srv)
	u := connect(t, Options{Name: "s", URL: ts.URL + "/mcp", Transport: "http",
		Headers: map[string]string{"X-Upstream-Key": "k1"}})

	for _, tc := range []struct{ tool, want string }{{"json", "plain"}, {"sse", "streamed"}, {"resume", "resumed"}} {
		r, err := u.CallTool(ctxT(t, 5*time.Second), tc.tool, json.RawMessage(`{"a": 1}`))
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if got := resultText(t, r); got != tc.want {
			t.Errorf("%s: result %q, want %q", tc.tool, got, tc.want)
		}
	}
	srv.mu.Lock()
	if srv.resumed != "e1" {
		t.Errorf("resumed with Last-Event-ID %q, want e1", srv.resumed)
	}
	for i, h := range srv.headers {
		if h.Get("Mcp-Session-Id") != "stream-session" || h.Get(mcpgo.HeaderProtocolVersion) != ProtocolVersion ||
			h.Get("X-Upstream-Key") != "k1" || !strings.Contains(h.Get("Accept"), "text/event-stream") {
			t.Errorf("call %d headers: %v", i, h)
		}
	}
	var sent struct {
		Method string `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(srv.bodies[0]), &sent); err != nil || sent.Method != "tools/call" ||
		sent.Params.Name != "json" || string(sent.Params.Arguments) != `{"a": 1}` {
		t.Errorf("request body %s (%v)", srv.bodies[0], err)
	}
	srv.mu.Unlock()

	_, err := u.CallTool(ctxT(t, 5*time.Second), "cut", nil)
	if err == nil || errors.Is(err, core.ErrNotSent) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("stream cut before the answer: %v, want an answer lost (io.ErrUnexpectedEOF), not ErrNotSent", err)
	}
}

// IM-32.
func TestCallParamsJSON(t *testing.T) {
	cases := []struct {
		name string
		args string
		meta callMeta
		want string
	}{
		{"t", `{}`, callMeta{}, `{"name":"t","arguments":{}}`},
		{"t", `{"x":1}`, callMeta{IdempotencyKey: "k"}, `{"name":"t","arguments":{"x":1},"_meta":{"dev.toolgate/idempotencyKey":"k"}}`},
		{"t", `{}`, callMeta{ProgressToken: "p", IdempotencyKey: "k"}, `{"name":"t","arguments":{},"_meta":{"progressToken":"p","dev.toolgate/idempotencyKey":"k"}}`},
		{"t", `{}`, callMeta{LogLevel: "info"}, `{"name":"t","arguments":{},"_meta":{"io.modelcontextprotocol/logLevel":"info"}}`},
		{"t", `{}`, callMeta{ProgressToken: "p", IdempotencyKey: "k", LogLevel: "debug"}, `{"name":"t","arguments":{},"_meta":{"progressToken":"p","dev.toolgate/idempotencyKey":"k","io.modelcontextprotocol/logLevel":"debug"}}`},
		{"a\"b<é\n", `[]`, callMeta{ProgressToken: "p"}, `{"name":"a\"b\u003cé\n","arguments":[],"_meta":{"progressToken":"p"}}`},
	}
	for _, c := range cases {
		got := string(callParamsJSON(c.name, json.RawMessage(c.args), &c.meta))
		if got != c.want {
			t.Errorf("callParamsJSON(%q) = %s, want %s", c.name, got, c.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("not valid JSON: %s", got)
		}
	}
	if b := callBody("tg-1", []byte(`{"name":"t"}`)); string(b) != `{"jsonrpc":"2.0","id":"tg-1","method":"tools/call","params":{"name":"t"}}` {
		t.Errorf("callBody = %s", b)
	}
}

// countConns counts the TCP connections a test server accepted.
func countConns(ts *httptest.Server) *atomic.Int64 {
	var n atomic.Int64
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

// IM-29: calls share pooled connections; one the server closed while idle
// is not used (the call would be lost after it left), an informational
// answer before the answer is skipped, a redirect is followed, and a call
// cut by its context returns at once with the context's error.
func TestRawToolsCallConnections(t *testing.T) {
	leakCheck(t)
	srv := &streamServer{}
	release := make(chan struct{})
	var redirected atomic.Bool
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		switch {
		case bytes.Contains(body, []byte(`"hang"`)):
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		case bytes.Contains(body, []byte(`"slowbody"`)):
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0",`))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		case bytes.Contains(body, []byte(`"hinted"`)):
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			body = bytes.Replace(body, []byte(`"hinted"`), []byte(`"json"`), 1)
			r.Body = io.NopCloser(bytes.NewReader(body))
		case bytes.Contains(body, []byte(`"moved"`)) && r.URL.Path == "/mcp":
			redirected.Store(true)
			http.Redirect(w, r, "/mcp/", http.StatusTemporaryRedirect)
			return
		case bytes.Contains(body, []byte(`"moved"`)):
			body = bytes.Replace(body, []byte(`"moved"`), []byte(`"json"`), 1)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		srv.ServeHTTP(w, r)
	}))
	conns := countConns(ts)
	ts.Start()
	t.Cleanup(ts.Close)
	defer close(release)
	u := connect(t, Options{Name: "s", URL: ts.URL + "/mcp", Transport: "http"})

	call := func(tool string) {
		t.Helper()
		r, err := u.CallTool(ctxT(t, 5*time.Second), tool, nil)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if got := resultText(t, r); got != "plain" {
			t.Fatalf("%s: result %q", tool, got)
		}
	}
	call("json")
	// mcp-go's standing GET stream opens connections of its own: count the
	// ones the calls came on.
	var mu sync.Mutex
	seen := map[string]bool{}
	setOnCall := func(f func(*http.Request)) {
		srv.mu.Lock()
		srv.onCall = f
		srv.mu.Unlock()
	}
	setOnCall(func(r *http.Request) {
		mu.Lock()
		seen[r.RemoteAddr] = true
		mu.Unlock()
	})
	for range 20 {
		call("json")
	}
	setOnCall(nil)
	if n := len(seen); n != 1 {
		t.Errorf("20 sequential calls came on %d connections, want 1 (pooled)", n)
	}
	if conns.Load() == 0 {
		t.Error("no connection counted")
	}

	ts.CloseClientConnections()
	// The pool's own check sees the server's close before the next call.
	waittest.Eventually(t, 10*time.Second, "the pooled connections to read as closed", func() bool {
		return idleAllClosed(t, u)
	})
	call("json")

	call("hinted")
	call("moved")
	if !redirected.Load() {
		t.Error("the redirect was not exercised")
	}

	// Cut before the answer's head, and in the middle of its body.
	for _, tool := range []string{"hang", "slowbody"} {
		start := time.Now()
		_, err := u.CallTool(ctxT(t, 200*time.Millisecond), tool, nil)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, core.ErrNotSent) {
			t.Errorf("%s cut by its deadline: %v, want context.DeadlineExceeded, not ErrNotSent", tool, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: cut call returned after %v", tool, d)
		}
	}
	call("json")
}

// IM-32: jsonrpc.IDKey writes an id exactly as encoding/json does, so that a call and its
// cancellation, keyed apart, meet.
func TestIDKeyMatchesJSON(t *testing.T) {
	for _, id := range []any{"a", "tg-1", "é<&>\"\\\n", "", 0.0, -0.0, 1.0, 42.0, -7.0, 1.5, 1e-7, 1e20, 1e21, 123456789012.0, nil, true} {
		want, _ := json.Marshal(id)
		if got := jsonrpc.IDKey(id); got != string(want) {
			t.Errorf("jsonrpc.IDKey(%#v) = %s, want %s", id, got, want)
		}
	}
	if got := jsonrpc.IDTextOf("x", json.RawMessage(`"x"`)); got != "x" {
		t.Errorf("requestIDOf string = %q", got)
	}
	if got := jsonrpc.IDTextOf(7.0, json.RawMessage(` 7 `)); got != "7" {
		t.Errorf("requestIDOf number = %q", got)
	}
}

// IM-4: credentials in the upstream's URL go as Basic auth on a pooled call,
// as net/http's client sends them.
func TestRawToolsCallURLCredentials(t *testing.T) {
	leakCheck(t)
	srv := &streamServer{}
	ts := startServer(t, srv)
	u := connect(t, Options{Name: "s", URL: strings.Replace(ts.URL, "http://", "http://user:pa%20ss@", 1) + "/mcp", Transport: "http"})
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "json", nil); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	req := &http.Request{Header: srv.headers[0]}
	if user, pw, ok := req.BasicAuth(); !ok || user != "user" || pw != "pa ss" {
		t.Errorf("tools/call Authorization %q, want Basic user:pa ss", srv.headers[0].Get("Authorization"))
	}
}

// idleAllClosed reports whether every idle connection in u's call pool reads
// as closed by the server, as the pool checks before it uses one.
func idleAllClosed(t *testing.T, u core.Upstream) bool {
	t.Helper()
	s, err := u.(*httpUpstream).current()
	if err != nil || s.post == nil || s.post.pool == nil {
		t.Fatalf("no call pool: %v", err)
	}
	p := s.post.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.idle {
		if idleOpen(pc.c) {
			return false
		}
	}
	return true
}
