package upstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
)

// IM-2, IM-29: a modern HTTP upstream's tool with x-mcp-header parameters
// is called with the matching Mcp-Param headers, encoded as the revision
// says, which the server checks against the body; the bindings survive a
// reconnect. An argument no header can carry is refused before anything
// is sent, and a tool whose annotation breaks the rules is not listed.
func TestModernUpstreamParamHeadersHTTP(t *testing.T) {
	leakCheck(t)
	m := newModernHTTP()
	addr, _ := serveOn(t, "127.0.0.1:0", m)
	u := connect(t, modernOptions(addr))
	defer u.Close()
	tools, err := u.ListTools(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "route") || slices.Contains(names, "badheader") {
		t.Errorf("listed %q: want route, and not badheader", names)
	}

	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	cases := []struct {
		name, args, want string
	}{
		{"plain", `{"region":"us-west1","count":42,"dry":true,"target":{"zone":"a"},"note":"n"}`,
			"Count=42 Dry=true Region=us-west1 Zone=a"},
		{"non-ASCII", `{"region":"Zürich"}`, "Region=" + b64("Zürich")},
		{"padded", `{"region":" padded "}`, "Region=" + b64(" padded ")},
		{"newline", `{"target":{"zone":"line1\nline2"}}`, "Zone=" + b64("line1\nline2")},
		{"looks encoded", `{"region":"=?base64?x?="}`, "Region=" + b64("=?base64?x?=")},
		{"empty string", `{"region":""}`, "Region="},
		{"integral float", `{"count":42.0,"dry":false}`, "Count=42 Dry=false"},
		{"negative", `{"count":-7}`, "Count=-7"},
		{"absent and null", `{"region":null,"note":"only the body"}`, ""},
		{"arguments not an object", `[]`, ""},
	}
	for _, tc := range cases {
		r, err := u.CallTool(ctxT(t, 5*time.Second), "route", json.RawMessage(tc.args))
		if err != nil || r.IsError {
			t.Errorf("%s: %s %v", tc.name, r.JSON, err)
			continue
		}
		if got := resultText(t, r); got != tc.want {
			t.Errorf("%s: the server saw headers %q, want %q", tc.name, got, tc.want)
		}
	}

	calls := func() int {
		methods, _ := m.Seen()
		n := 0
		for _, x := range methods {
			if x == "tools/call" {
				n++
			}
		}
		return n
	}
	before := calls()
	for _, tc := range []struct{ args, why string }{
		{`{"count":1.5}`, "not an integer"},
		{`{"count":9007199254740993}`, "beyond"},
		{`{"count":1e400}`, "beyond"},
		{`{"target":{"zone":{"x":1}}}`, "an object"},
		{`{"region":["a"]}`, "an array"},
	} {
		_, err := u.CallTool(ctxT(t, 5*time.Second), "route", json.RawMessage(tc.args))
		if !errors.Is(err, core.ErrNotSent) || !errors.Is(err, errHeaderValue) || !strings.Contains(err.Error(), tc.why) ||
			!strings.Contains(err.Error(), "Mcp-Param-") {
			t.Errorf("%s: %v", tc.args, err)
		}
		if err != nil && strings.Contains(err.Error(), "1.5") {
			t.Errorf("the error quotes the value: %v", err)
		}
	}
	if n := calls(); n != before {
		t.Errorf("%d refused calls reached the server", n-before)
	}

	// A new connection calls with the headers before any new listing.
	if _, err := u.Connect(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	r, err := u.CallTool(ctxT(t, 5*time.Second), "route", json.RawMessage(`{"region":"eu"}`))
	if err != nil || resultText(t, r) != "Region=eu" {
		t.Errorf("after reconnecting: %s %v", r.JSON, err)
	}

	// The server does check: a call sent without its headers is refused
	// with HeaderMismatch, and the gateway lists the tools again and sends
	// it once more with them, as the revision advises.
	u.(*httpUpstream).mod.params.set(nil)
	before = calls()
	r, err = u.CallTool(ctxT(t, 5*time.Second), "route", json.RawMessage(`{"region":"eu"}`))
	if err != nil || resultText(t, r) != "Region=eu" {
		t.Errorf("a call with stale bindings: %s %v", r.JSON, err)
	}
	if n := calls() - before; n != 2 {
		t.Errorf("the call was sent %d times, want twice: refused, then with its headers", n)
	}
	// A tool whose schema gains an annotation after it was listed.
	m.Server.AddTool(mcpgo.NewToolWithRawSchema("echo", "", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","x-mcp-header":"Text"}}}`)),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(req.GetString("text", "") + " " + req.Header.Get("Mcp-Param-Text")), nil
		})
	r, err = u.CallTool(ctxT(t, 5*time.Second), "echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil || resultText(t, r) != "hi hi" {
		t.Errorf("a tool whose schema changed: %s %v", r.JSON, err)
	}
	// A refusal that a new listing does not explain is the answer.
	var rpc *core.RPCError
	before = calls()
	_, err = u.CallTool(ctxT(t, 5*time.Second), "mismatch", nil)
	if !errors.As(err, &rpc) || rpc.Code != -32020 || core.Transient(err) || calls()-before != 1 {
		t.Errorf("a refusal no listing explains: %v, sent %d times", err, calls()-before)
	}
	_, bad := m.Seen()
	for _, p := range bad {
		t.Error(p)
	}
}
