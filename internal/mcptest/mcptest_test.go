package mcptest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/mcptest"
)

// testWait bounds every wait of these tests.
const testWait = 10 * time.Second

// fakeServer is a Streamable HTTP endpoint just big enough for the client:
// sessions, a negotiated version, JSON and SSE answers, paging, and a
// stream it writes one event at a time. It records what it received.
type fakeServer struct {
	url string

	// release, when not nil, holds tools/call "slow" after its first event
	// until it is closed.
	release chan struct{}

	mu       sync.Mutex
	sessions map[string]bool
	requests []*http.Request // every request, headers as received
	bodies   []string
	ids      []string // the id of every request with one
}

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	f := &fakeServer{sessions: map[string]bool{}, release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		select {
		case <-f.release: // the test released it
		default:
			close(f.release)
		}
		srv.Close()
	})
	f.url = srv.URL + "/mcp"
	return f
}

func (f *fakeServer) received() ([]*http.Request, []string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.requests...), append([]string(nil), f.bodies...), append([]string(nil), f.ids...)
}

func writeJSON(w http.ResponseWriter, status int, v string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, v)
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, &http.Request{Method: r.Method, Header: r.Header.Clone()})
	f.bodies = append(f.bodies, string(body))
	session := r.Header.Get("Mcp-Session-Id")
	known := f.sessions[session]
	f.mu.Unlock()

	switch r.Method {
	case http.MethodDelete:
		f.mu.Lock()
		delete(f.sessions, session)
		f.mu.Unlock()
		if !known {
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
		if !known {
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, ": keep-alive\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		return
	}

	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Name            string `json:"name"`
			Cursor          string `json:"cursor"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
		return
	}
	if req.ID != nil {
		f.mu.Lock()
		f.ids = append(f.ids, string(req.ID))
		f.mu.Unlock()
	}
	if req.Method != "initialize" && !known {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	id := string(req.ID)
	switch req.Method {
	case "initialize":
		version := req.Params.ProtocolVersion
		if version != "2025-06-18" && version != "2025-03-26" {
			version = "2025-03-26" // the server's choice, as the spec lets it
		}
		f.mu.Lock()
		s := fmt.Sprintf("s%d", len(f.sessions)+1)
		f.sessions[s] = true
		f.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", s)
		writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"protocolVersion":"`+version+`","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"0.1"}}}`)
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/list":
		// Two pages, the second over SSE.
		if req.Params.Cursor == "" {
			writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"p2"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{\"tools\":[{\"name\":\"b\",\"x\":1}]}}\n\n")
	case "tools/call":
		switch req.Params.Name {
		case "echo":
			writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"hi"}]}}`)
		case "fails":
			writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"it broke"}],"isError":true}}`)
		case "unknown":
			writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32602,"message":"unknown tool","data":{"name":"unknown"}}}`)
		case "chatty":
			// A notification, a server request, then the response, in the
			// forms the format allows: CRLF lines, a comment, a data field
			// without the space, the response's JSON split over two data
			// lines.
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, ": hello\r\n"+
				"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\r\n\r\n"+
				"data:{\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"elicitation/create\",\"params\":{}}\n\n"+
				"id: 3\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\ndata: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n")
		case "slow":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-f.release:
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+id+",\"result\":{\"content\":[]}}\n\n")
		default:
			writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32601,"message":"no"}}`)
		}
	default:
		writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32601,"message":"Method not found"}}`)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	t.Cleanup(cancel)
	return ctx
}

// Initialize asks for the configured version, keeps the minted session and
// sends the negotiated version from then on; the credentials and the
// custom headers go with every request.
func TestInitialize(t *testing.T) {
	for _, c := range []struct {
		name, ask, want string
	}{
		{"default", "", "2025-06-18"},
		{"older", "2025-03-26", "2025-03-26"},
		{"unknown to the server", "2099-01-01", "2025-03-26"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeServer(t)
			ctx := testCtx(t)
			cl := mcptest.New(f.url, &mcptest.Options{
				Authorization: "Bearer k1", Header: http.Header{"X-Test-Actor": {"alice"}},
				ProtocolVersion: c.ask, ClientName: "unit", ClientVersion: "9", Capabilities: json.RawMessage(`{"elicitation":{}}`),
			})
			ir, err := cl.Initialize(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ir.ProtocolVersion != c.want || ir.ServerInfo.Name != "fake" || string(ir.Capabilities) != `{"tools":{}}` {
				t.Fatalf("initialize result %+v", ir)
			}
			if cl.Session() != "s1" {
				t.Fatalf("session %q, want s1", cl.Session())
			}
			if _, _, err := cl.Call(ctx, "ping", nil); err != nil {
				t.Fatal(err)
			}
			reqs, bodies, _ := f.received()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want initialize, initialized, ping", len(reqs))
			}
			ask := c.ask
			if ask == "" {
				ask = mcptest.LatestProtocol
			}
			var init struct {
				Params struct {
					ProtocolVersion string          `json:"protocolVersion"`
					Capabilities    json.RawMessage `json:"capabilities"`
					ClientInfo      struct{ Name, Version string }
				}
			}
			if err := json.Unmarshal([]byte(bodies[0]), &init); err != nil || init.Params.ProtocolVersion != ask ||
				string(init.Params.Capabilities) != `{"elicitation":{}}` || init.Params.ClientInfo.Name != "unit" || init.Params.ClientInfo.Version != "9" {
				t.Fatalf("initialize sent %s", bodies[0])
			}
			if bodies[1] != `{"jsonrpc":"2.0","method":"notifications/initialized"}` {
				t.Fatalf("initialized sent %s", bodies[1])
			}
			type hdr struct{ Auth, Actor, Session, Version, Accept, ContentType string }
			var got []hdr
			for _, r := range reqs {
				got = append(got, hdr{r.Header.Get("Authorization"), r.Header.Get("X-Test-Actor"), r.Header.Get("Mcp-Session-Id"),
					r.Header.Get("Mcp-Protocol-Version"), r.Header.Get("Accept"), r.Header.Get("Content-Type")})
			}
			const accept, ct = "application/json, text/event-stream", "application/json"
			want := []hdr{
				{"Bearer k1", "alice", "", "", accept, ct},
				{"Bearer k1", "alice", "s1", c.want, accept, ct},
				{"Bearer k1", "alice", "s1", c.want, accept, ct},
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("headers (-want +got):\n%s", d)
			}
		})
	}
}

// Call returns the result of a JSON and of an SSE answer alike, the
// JSON-RPC error as an *Error, and a non-200 answer as a *StatusError.
func TestCall(t *testing.T) {
	f := newFakeServer(t)
	ctx := testCtx(t)
	cl := mcptest.New(f.url, nil)
	if _, err := cl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}

	res, rpcErr, err := cl.Call(ctx, "tools/call", map[string]any{"name": "echo"})
	if err != nil || rpcErr != nil || string(res) != `{"content":[{"type":"text","text":"hi"}]}` {
		t.Fatalf("JSON answer: %s, %v, %v", res, rpcErr, err)
	}
	res, rpcErr, err = cl.Call(ctx, "tools/call", json.RawMessage(`{"name":"chatty"}`))
	if err != nil || rpcErr != nil || string(res) != `{"content":[{"type":"text","text":"done"}]}` {
		t.Fatalf("SSE answer: %s, %v, %v", res, rpcErr, err)
	}
	_, rpcErr, err = cl.Call(ctx, "tools/call", map[string]any{"name": "unknown"})
	if err != nil || rpcErr == nil || rpcErr.Code != -32602 || rpcErr.Message != "unknown tool" || string(rpcErr.Data) != `{"name":"unknown"}` {
		t.Fatalf("error answer: %+v, %v", rpcErr, err)
	}

	// The ids are the client's, one each; params go as given.
	_, bodies, ids := f.received()
	if d := cmp.Diff([]string{"1", "2", "3", "4"}, ids); d != "" {
		t.Fatalf("request ids (-want +got):\n%s", d)
	}
	if bodies[3] != `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"chatty"}}` {
		t.Fatalf("raw params sent as %s", bodies[3])
	}

	cl.SetSession("never-minted", "")
	_, _, err = cl.Call(ctx, "tools/list", nil)
	if se, ok := errors.AsType[*mcptest.StatusError](err); !ok || se.Status != http.StatusNotFound || se.Method != "tools/list" {
		t.Fatalf("an unknown session: %v, want a 404 StatusError", err)
	}
}

// Post sends any bytes and returns the answer unjudged; a parse error's
// response (id null) is still the answer's response.
func TestPostMalformed(t *testing.T) {
	f := newFakeServer(t)
	ctx := testCtx(t)
	cl := mcptest.New(f.url, nil)
	resp, err := cl.Post(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":`), http.Header{"X-Extra": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusBadRequest || resp.ContentType() != "application/json" || resp.IsStream() {
		t.Fatalf("HTTP %d %s", resp.Status, resp.ContentType())
	}
	_, rpcErr, err := resp.Result()
	if err != nil || rpcErr == nil || rpcErr.Code != -32700 {
		t.Fatalf("result of a parse error: %v, %v", rpcErr, err)
	}
	msgs, err := resp.Messages()
	if err != nil || len(msgs) != 1 || !msgs[0].IsResponse() || msgs[0].IsRequest() || string(msgs[0].ID) != "null" {
		t.Fatalf("messages %+v, %v", msgs, err)
	}
	reqs, bodies, _ := f.received()
	if bodies[0] != `{"jsonrpc":"2.0","id":1,"method":` || reqs[0].Header.Get("X-Extra") != "1" {
		t.Fatalf("sent %q with headers %v", bodies[0], reqs[0].Header)
	}
}

// An SSE answer's messages come in order, each verbatim, with what they are.
func TestMessagesOfAStream(t *testing.T) {
	f := newFakeServer(t)
	ctx := testCtx(t)
	cl := mcptest.New(f.url, nil)
	if _, err := cl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := cl.Post(ctx, []byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"chatty"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.IsStream() {
		t.Fatalf("Content-Type %q", resp.ContentType())
	}
	msgs, err := resp.Messages()
	if err != nil {
		t.Fatal(err)
	}
	type kind struct {
		Method                  string
		Note, Request, Response bool
		Raw                     string
	}
	var got []kind
	for _, m := range msgs {
		got = append(got, kind{m.Method, m.IsNotification(), m.IsRequest(), m.IsResponse(), string(m.Raw)})
	}
	want := []kind{
		{"notifications/progress", true, false, false, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`},
		{"elicitation/create", false, true, false, `{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{}}`},
		{"", false, false, true, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\n\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("messages (-want +got):\n%s", d)
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := resp.Decode(&m); err != nil || m.ID != "x" {
		t.Fatalf("Decode took %+v, %v; want the response", m, err)
	}
}

// The event format's corners, through a body parsed whole.
func TestEventFormat(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       []string // each message's Raw
		err        bool
	}{
		{"one event", "data: {\"a\":1}\n\n", []string{`{"a":1}`}, false},
		{"no space after the colon", "data:{\"a\":1}\n\n", []string{`{"a":1}`}, false},
		{"only one space is stripped", "data:  {\"a\":1}\n\n", []string{` {"a":1}`}, false},
		{"data lines join with newlines", "data: {\"a\":\ndata: 1}\n\n", []string{"{\"a\":\n1}"}, false},
		{"CRLF", "event: message\r\ndata: {\"a\":1}\r\n\r\ndata: {\"b\":2}\r\n\r\n", []string{`{"a":1}`, `{"b":2}`}, false},
		{"comments and other fields skipped", ": c\nid: 7\nretry: 10\nevent: message\ndata: {\"a\":1}\n\n", []string{`{"a":1}`}, false},
		{"an event without data is none", "event: message\n\ndata: {\"a\":1}\n\n", []string{`{"a":1}`}, false},
		{"a cut-off event is dropped", "data: {\"a\":1}\n\ndata: {\"b\":2}\n", []string{`{"a":1}`}, false},
		{"empty", "", nil, false},
		{"not JSON", "data: nope\n\n", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &mcptest.Response{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: []byte(c.body)}
			msgs, err := r.Messages()
			if (err != nil) != c.err {
				t.Fatalf("error %v, want error %v", err, c.err)
			}
			var got []string
			for _, m := range msgs {
				got = append(got, string(m.Raw))
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Fatalf("messages (-want +got):\n%s", d)
			}
		})
	}
}

// A JSON answer is one message or a batch; an empty one has no response.
func TestJSONBodies(t *testing.T) {
	batch := &mcptest.Response{Header: http.Header{"Content-Type": {"application/json"}},
		Body: []byte(`[{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}]`)}
	msgs, err := batch.Messages()
	if err != nil || len(msgs) != 2 || string(msgs[0].ID) != "1" || msgs[1].Error == nil || msgs[1].Error.Message != "m" {
		t.Fatalf("batch: %+v, %v", msgs, err)
	}
	// An object with neither result nor error nor method is no response.
	bare := &mcptest.Response{Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"jsonrpc":"2.0","id":1}`)}
	if msgs, err := bare.Messages(); err != nil || len(msgs) != 1 || msgs[0].IsResponse() || msgs[0].IsRequest() || msgs[0].IsNotification() {
		t.Fatalf("an id alone: %+v, %v", msgs, err)
	}
	empty := &mcptest.Response{Status: http.StatusAccepted, Header: http.Header{}}
	if _, _, err := empty.Result(); !errors.Is(err, mcptest.ErrNoResponse) {
		t.Fatalf("empty body: %v, want ErrNoResponse", err)
	}
	notification := &mcptest.Response{Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: []byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n")}
	if _, _, err := notification.Result(); !errors.Is(err, mcptest.ErrNoResponse) {
		t.Fatalf("a stream with only a notification: %v, want ErrNoResponse", err)
	}
}

// ListTools follows the cursor across pages (the second over SSE) and keeps
// each tool verbatim.
func TestListTools(t *testing.T) {
	f := newFakeServer(t)
	ctx := testCtx(t)
	cl := mcptest.New(f.url, nil)
	if _, err := cl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	tools, err := cl.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type tool struct{ Name, Raw string }
	var got []tool
	for _, tl := range tools {
		got = append(got, tool{tl.Name, string(tl.Raw)})
	}
	if d := cmp.Diff([]tool{{"a", `{"name":"a","inputSchema":{"type":"object"}}`}, {"b", `{"name":"b","x":1}`}}, got); d != "" {
		t.Fatalf("tools (-want +got):\n%s", d)
	}
	if _, bodies, _ := f.received(); !strings.Contains(bodies[len(bodies)-1], `"params":{"cursor":"p2"}`) {
		t.Fatalf("second page asked with %s", bodies[len(bodies)-1])
	}
}

// CallTool gives the result typed: a tool's failure is IsError, a refusal
// an *Error.
func TestCallTool(t *testing.T) {
	f := newFakeServer(t)
	ctx := testCtx(t)
	cl := mcptest.New(f.url, nil)
	if _, err := cl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, text string
		isError    bool
		code       int
	}{
		{"echo", "hi", false, 0},
		{"fails", "it broke", true, 0},
		{"unknown", "", false, -32602},
	} {
		res, rpcErr, err := cl.CallTool(ctx, c.name, map[string]any{"k": 1})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.code != 0 {
			if rpcErr == nil || rpcErr.Code != c.code || res != nil {
				t.Fatalf("%s: %v %+v, want error %d", c.name, rpcErr, res, c.code)
			}
			continue
		}
		if rpcErr != nil || res.Text() != c.text || res.IsError != c.isError || !strings.Contains(string(res.Raw), `"text":"`+c.text+`"`) {
			t.Fatalf("%s: %+v %v", c.name, res, rpcErr)
		}
	}
	if _, bodies, _ := f.received(); bodies[2] != `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"k":1}}}` {
		t.Fatalf("tools/call sent %s", bodies[2])
	}
}

// Send hands out each message as it arrives: the first event is read while
// the server still holds the rest.
func TestSendStreams(t *testing.T) {
	f := newFakeServer(t)
	ctx := testCtx(t)
	cl := mcptest.New(f.url, nil)
	if _, err := cl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := cl.Send(ctx, []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Status != http.StatusOK || st.ContentType() != "text/event-stream" {
		t.Fatalf("HTTP %d %s", st.Status, st.ContentType())
	}
	m, err := st.Next()
	if err != nil || m.Method != "notifications/progress" {
		t.Fatalf("first message %+v, %v", m, err)
	}
	close(f.release) // only now may the server answer
	if m, err = st.Next(); err != nil || !m.IsResponse() || string(m.ID) != "9" {
		t.Fatalf("second message %+v, %v", m, err)
	}
	if _, err := st.Next(); err != io.EOF {
		t.Fatalf("after the response: %v, want io.EOF", err)
	}

	// A JSON answer streams too, as its one message.
	st2, err := cl.Send(ctx, []byte(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if m, err = st2.Next(); err != nil || !m.IsResponse() || st2.ContentType() != "application/json" {
		t.Fatalf("JSON answer %+v, %v", m, err)
	}
	if _, err := st2.Next(); err != io.EOF {
		t.Fatalf("after the JSON answer: %v, want io.EOF", err)
	}
}

// Listen opens the session's GET stream; Delete ends the session, and the
// client keeps the id so the next request shows the server's answer.
func TestListenAndDelete(t *testing.T) {
	f := newFakeServer(t)
	ctx := testCtx(t)
	cl := mcptest.New(f.url, nil)
	if _, err := cl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := cl.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.Next()
	st.Close()
	if err != nil || m.Method != "notifications/tools/list_changed" || !m.IsNotification() {
		t.Fatalf("GET stream: %+v, %v", m, err)
	}
	reqs, _, _ := f.received()
	if get := reqs[len(reqs)-1]; get.Method != http.MethodGet || get.Header.Get("Accept") != "text/event-stream" || get.Header.Get("Mcp-Session-Id") != "s1" {
		t.Fatalf("GET sent %s with %v", get.Method, get.Header)
	}

	resp, err := cl.Delete(ctx)
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	if reqs, _, _ := f.received(); reqs[len(reqs)-1].Header.Get("Mcp-Session-Id") != "s1" {
		t.Fatal("DELETE without the session id")
	}
	if cl.Session() != "s1" {
		t.Fatalf("session after DELETE %q, want s1 kept", cl.Session())
	}
	if resp, err := cl.Post(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), nil); err != nil || resp.Status != http.StatusNotFound {
		t.Fatalf("after DELETE: %v %v, want 404", resp, err)
	}
}

// One client, many goroutines: every request gets an id of its own and
// the session's headers (run with -race).
func TestConcurrentUse(t *testing.T) {
	f := newFakeServer(t)
	ctx := testCtx(t)
	cl := mcptest.New(f.url, nil)
	if _, err := cl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			if _, rpcErr, err := cl.CallTool(ctx, "echo", nil); err != nil || rpcErr != nil {
				errs <- fmt.Errorf("%v %v", err, rpcErr)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_, _, ids := f.received()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %s used twice in %v", id, ids)
		}
		seen[id] = true
	}
	if len(ids) != n+1 {
		t.Fatalf("%d ids, want %d", len(ids), n+1)
	}
}

// An answer of MaxBody bytes is read whole; one byte more is ErrTooLarge.
func TestMaxBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(bytes.Repeat([]byte(" "), n))
	}))
	defer srv.Close()
	ctx := testCtx(t)
	for _, c := range []struct {
		n       int
		tooLong bool
	}{{0, false}, {511, false}, {512, false}, {513, false}, {mcptest.MaxBody, false}, {mcptest.MaxBody + 1, true}} {
		resp, err := mcptest.New(srv.URL+"/?n="+strconv.Itoa(c.n), nil).Post(ctx, []byte(`{}`), nil)
		if c.tooLong {
			if !errors.Is(err, mcptest.ErrTooLarge) {
				t.Errorf("%d bytes: %v, want ErrTooLarge", c.n, err)
			}
			continue
		}
		if err != nil || len(resp.Body) != c.n {
			t.Errorf("%d bytes: read %d, %v", c.n, len(resp.Body), err)
		}
	}
}

// A notification is accepted as 202, or as 200 with an event stream of
// notifications only (mcp-go flushes a queued list_changed into the open
// POST); a stream carrying a response, or any other status, is an error.
func TestNotifyAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		ctype  string
		body   string
		ok     bool
	}{
		"202":                 {http.StatusAccepted, "", "", true},
		"queued notification": {http.StatusOK, "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n", true},
		"a response":          {http.StatusOK, "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", false},
		"json 200":            {http.StatusOK, "application/json", `{"jsonrpc":"2.0","method":"x"}`, false},
		"400":                 {http.StatusBadRequest, "text/plain", "no", false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if tc.ctype != "" {
				w.Header().Set("Content-Type", tc.ctype)
			}
			w.WriteHeader(tc.status)
			_, _ = io.WriteString(w, tc.body)
		}))
		err := mcptest.New(srv.URL, nil).Notify(t.Context(), "notifications/initialized", nil)
		srv.Close()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Notify = %v, want ok %v", name, err, tc.ok)
		}
	}
}
