package mcp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

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
		methods, _ := m.seen()
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

	// The server does check: without the bindings the call is refused
	// with HeaderMismatch.
	u.(*httpUpstream).mod.params.set(nil)
	var rpc *core.RPCError
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "route", json.RawMessage(`{"region":"eu"}`)); !errors.As(err, &rpc) || rpc.Code != -32020 {
		t.Errorf("a call without its headers: %v", err)
	}
	_, bad := m.seen()
	for _, p := range bad {
		t.Error(p)
	}
}
