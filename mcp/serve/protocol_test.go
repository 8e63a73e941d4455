package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/session"
)

// SV-5, IM-20: a tool that is unknown and one that is off the actor's list
// get the same answer, in the spec's words, on every kind of endpoint.
func TestUnknownAndHiddenToolsAnswerAlikeSV5(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		s := serveEndpoint(t, serve.EndpointOptions{Stateless: stateless})
		c := testClient(s.url, "alice", "MEMBER")
		if !stateless {
			initialize(t, c)
		}
		answer := func(name string) string {
			t.Helper()
			resp := post(t, c, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`)
			if resp.Status != http.StatusOK {
				t.Fatalf("stateless=%v %s: HTTP %d %s", stateless, name, resp.Status, resp.Body)
			}
			return strings.ReplaceAll(string(bytes.TrimSpace(resp.Body)), name, "NAME")
		}
		unknown, hidden := answer("no_such_tool"), answer("admin_only")
		if unknown != hidden {
			t.Errorf("stateless=%v: unknown and hidden differ:\n%s\n%s", stateless, unknown, hidden)
		}
		if want := `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"unknown tool: NAME"}}`; unknown != want {
			t.Errorf("stateless=%v: %s, want %s", stateless, unknown, want)
		}
	}
}

// SV-2: an initialize that fails creates no session: no id is handed out,
// and one that succeeds still gets its id.
func TestFailedInitializeMintsNoSessionSV2(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	c := testClient(s.url, "alice", "MEMBER")
	resp := post(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`)
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		t.Fatalf("a failed initialize (%s) handed out session %s", resp.Body, id)
	}
	if !strings.Contains(string(resp.Body), `"error"`) {
		t.Fatalf("initialize with bad params answered %s", resp.Body)
	}
	if len(s.sessions.List()) != 0 {
		t.Errorf("sessions after a failed initialize: %+v", s.sessions.List())
	}
	initialize(t, c)
}

// SV-2: no kind of failed initialize keeps anything: no id is handed out,
// the endpoint's session maps, the caps and the sessions listed are as
// before it, and SessionStarted and SessionEnded are told of nothing.
func TestFailedInitializesKeepNothing(t *testing.T) {
	var told atomic.Int32
	limits := session.NewLimits(0, 0)
	s := serveEndpoint(t, serve.EndpointOptions{Limits: limits,
		SessionStarted: func(context.Context, string) { told.Add(1) },
		SessionEnded:   func(string) { told.Add(1) }})
	held := testClient(s.url, "alice", "MEMBER")
	initialize(t, held)
	known, open := s.ep.KnownSessionsForTest(), limits.Open()
	told.Store(0)
	good := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	c := testClient(s.url, "alice", "MEMBER")
	for _, tc := range []struct {
		name, body string
		onHeld     bool
	}{
		{"params a string", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`, false},
		{"params an array", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}`, false},
		{"JSON-RPC 1.0", strings.Replace(good, `"2.0"`, `"1.0"`, 1), false},
		{"no id", strings.Replace(good, `"id":1,`, ``, 1), false},
		{"a result besides", strings.Replace(good, `"params"`, `"result":{},"params"`, 1), false},
		{"not JSON", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{`, false},
		{"in a batch", "[" + good + "]", false},
		{"on a live session", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`, true},
	} {
		c.SetSession("", "")
		if tc.onHeld {
			c.SetSession(held.Session(), "")
		}
		resp := post(t, c, tc.body)
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" || resp.Status == http.StatusOK && !strings.Contains(string(resp.Body), `"error"`) {
			t.Errorf("%s: HTTP %d, session %q handed out: %s", tc.name, resp.Status, id, resp.Body)
		}
		if n := s.ep.KnownSessionsForTest(); n != known {
			t.Errorf("%s: the endpoint keeps %d session entries, %d before", tc.name, n, known)
		}
		if n := limits.Open(); n != open {
			t.Errorf("%s: %d places taken under the caps, %d before", tc.name, n, open)
		}
		if n := len(s.sessions.List()); n != 1 {
			t.Errorf("%s: %d sessions listed, want the one held", tc.name, n)
		}
		if n := told.Load(); n != 0 {
			t.Errorf("%s: SessionStarted and SessionEnded were told %d times", tc.name, n)
		}
	}
	if _, err := held.ListTools(t.Context()); err != nil {
		t.Errorf("the held session after them: %v", err)
	}
}

// SV-1: one header rule for every method: a body that is not declared
// application/json is refused for ping, which mcp-go answers, as for the
// requests the gateway answers itself.
func TestContentTypeRuleForEveryMethod(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	c := testClient(s.url, "alice", "MEMBER")
	initialize(t, c)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"gh_search","arguments":{"q":"x"}}}`,
	} {
		resp, err := c.Post(t.Context(), []byte(body), http.Header{"Content-Type": {"text/plain"}, "Accept": {"text/html"}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusBadRequest {
			t.Errorf("%s as text/plain: HTTP %d %s, want 400", body, resp.Status, resp.Body)
		}
	}
}

// SV-1 (protocol 2025-03-26): JSON-RPC batches exist on that revision only: there each message is
// answered as if posted alone, in one array; on a later revision the batch
// is refused with a JSON-RPC error that says why.
func TestBatchesOnTheirRevision(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	old := mcptest.New(s.url, &mcptest.Options{Header: testOptions("alice", "MEMBER").Header, ProtocolVersion: "2025-03-26"})
	if _, err := old.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},` +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}},` +
		`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"gh_search","arguments":{"q":"go"}}},` +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}]`
	resp := post(t, old, batch)
	var answers []struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &answers) != nil || len(answers) != 3 {
		t.Fatalf("2025-03-26 batch: HTTP %d %s", resp.Status, resp.Body)
	}
	if string(answers[0].ID) != "1" || answers[0].Error != nil {
		t.Errorf("ping: %s %+v", answers[0].ID, answers[0].Error)
	}
	if string(answers[1].ID) != `"two"` || !strings.Contains(string(answers[1].Result), `echo {\"q\":\"go\"}`) {
		t.Errorf("tools/call: %s %s", answers[1].ID, answers[1].Result)
	}
	if string(answers[2].ID) != "3" || answers[2].Error == nil || answers[2].Error.Message != "unknown tool: no_such_tool" {
		t.Errorf("unknown tool: %s %+v", answers[2].ID, answers[2].Error)
	}

	current := testClient(s.url, "bob", "MEMBER")
	initialize(t, current)
	resp = post(t, current, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`)
	if resp.Status != http.StatusBadRequest || !strings.Contains(string(resp.Body), `"code":-32600`) || !strings.Contains(string(resp.Body), "2025-03-26") {
		t.Errorf("batch on a later revision: HTTP %d %s", resp.Status, resp.Body)
	}
}
