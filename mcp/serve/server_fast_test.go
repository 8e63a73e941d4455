package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/serve"
)

// Transparency: a tool's result reaches the client as the upstream wrote it —
// every content kind, fields mcp-go has no type for, structuredContent and
// _meta — not parsed and marshalled again.
// Covers IM-32.
func TestEndpointResultBytesPassThrough(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	result := `{"content":[` +
		`{"type":"text","text":"héllo \u2028 <b>","annotations":{"audience":["user"],"priority":0.25},"x-vendor":{"n":12345678901234567890}},` +
		`{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},` +
		`{"type":"audio","data":"UklGRiYAAABXQVZF","mimeType":"audio/wav"},` +
		`{"type":"resource","resource":{"uri":"test://r","mimeType":"text/plain","text":"embedded","_meta":{"k":1}}},` +
		`{"type":"resource_link","uri":"file:///srv/a.txt","name":"a.txt","size":42,"icons":[{"src":"https://x/i.png"}]}` +
		`],"structuredContent":{"answer":1.50,"list":[]},"isError":false,"_meta":{"dev.example/trace":"t-1"}}`
	if err := s.reg.Register(core.Tool{Name: "kinds", Kind: core.KindRead, Description: "Every kind.",
		Handler: func(context.Context, json.RawMessage) (core.Result, error) {
			return core.Result{JSON: json.RawMessage(result)}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	c := testClient(s.url, "alice", "MEMBER")
	initialize(t, c)
	resp := post(t, c, `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"kinds","arguments":{}}}`)
	body := resp.Body
	if resp.Status != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("HTTP %d %s: %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	want := `{"jsonrpc":"2.0","id":"call-1","result":` + result + `}`
	if got := string(bytes.TrimSpace(body)); got != want {
		t.Fatalf("response changed the result:\n got %s\nwant %s", got, want)
	}
}

// The edges of tools/call get an error and run nothing: an unknown tool
// (the gateway's answer), a wrong JSON-RPC version and a body that is not
// JSON (mcp-go's, which reads what is no request).
// Covers SV-5, QB-3.
func TestEndpointCallEdgesKeepMcpGoAnswers(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	c := testClient(s.url, "alice", "MEMBER")
	initialize(t, c)
	for name, body := range map[string]string{
		"unknown tool": `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
		"bad version":  `{"jsonrpc":"1.0","id":6,"method":"tools/call","params":{"name":"gh_search","arguments":{"q":"x"}}}`,
		"not json":     `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":`,
	} {
		resp := post(t, c, body)
		b := resp.Body
		if resp.Status == http.StatusOK && !strings.Contains(string(b), `"error"`) && !strings.Contains(string(b), `"isError":true`) {
			t.Errorf("%s: HTTP %d %s, want an error", name, resp.Status, b)
		}
		if strings.Contains(string(b), "echo ") {
			t.Errorf("%s: the tool ran: %s", name, b)
		}
	}
}

// The conformance suite's json-schema-2020-12 scenario, which mcp-go's
// fixture cannot run (it has no such tool): a 2020-12 schema with $schema,
// $defs, $ref and additionalProperties is served byte for byte, and the
// gateway validates against it.
// Covers IM-17.
func TestEndpointServes2020SchemaVerbatim(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	schema := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
		`"$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["street"]}},` +
		`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`
	if err := s.reg.Register(core.Tool{Name: "json_schema_2020_12_tool", Kind: core.KindRead, Description: "2020-12.",
		InputSchema: json.RawMessage(schema),
		Handler: func(_ context.Context, args json.RawMessage) (core.Result, error) {
			return core.TextResult("ok " + string(args)), nil
		}}); err != nil {
		t.Fatal(err)
	}
	c := testClient(s.url, "alice", "MEMBER")
	initialize(t, c)
	_, tools := listNames(t, c)
	found := false
	for _, tl := range tools {
		if string(tl["name"]) == `"json_schema_2020_12_tool"` {
			found = true
			if got := string(tl["inputSchema"]); got != schema {
				t.Fatalf("inputSchema served as\n %s\nwant\n %s", got, schema)
			}
		}
	}
	if !found {
		t.Fatal("tool not listed")
	}
	res, _ := rpc(t, c, "tools/call", map[string]any{"name": "json_schema_2020_12_tool", "arguments": map[string]any{"name": "x", "address": map[string]any{"city": "y"}, "extra": 1}})
	if !strings.Contains(string(res), `"isError":true`) || strings.Contains(string(res), "ok ") {
		t.Fatalf("a call breaking the schema (no street, an extra property) ran: %s", res)
	}
}

// tools/list from the kept JSON is the same on a session and on a
// stateless endpoint, per actor, with the output schema, and keeps
// annotation keys mcp-go's types have no field for.
// Covers SV-4, IM-17.
func TestEndpointListSameOnEveryModeKeepsKeys(t *testing.T) {
	reg := core.NewRegistry(nil)
	echo := func(context.Context, json.RawMessage) (core.Result, error) { return core.TextResult("ok"), nil }
	for _, tl := range []core.Tool{
		{Name: "b_read", Source: "up", Kind: core.KindRead, Description: "Reads.", Handler: echo,
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"hits":{"type":"integer"}}}`),
			Annotations:  json.RawMessage(`{"readOnlyHint":true,"title":"Read"}`)},
		{Name: "a_plain", Kind: core.KindRead, Description: "Plain.", Handler: echo},
		{Name: "c_admin", Kind: core.KindRead, Description: "Admins.", Roles: []string{"ADMIN"}, Handler: echo},
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	mux := http.NewServeMux()
	for _, path := range []string{"/fast", "/lib"} {
		ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: path, Registry: reg, Actor: testActor, Stateless: path == "/lib"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ep.Close(context.Background()) })
		mux.Handle(path, testAuth(ep))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	list := func(path string) []any {
		c := testClient(srv.URL+path, "m", "MEMBER")
		if path == "/fast" {
			initialize(t, c)
		}
		res, rpcErr := rpc(t, c, "tools/list", map[string]any{})
		var out struct {
			Tools []any `json:"tools"`
		}
		if err := json.Unmarshal(res, &out); err != nil {
			t.Fatalf("%s: %s", path, rpcErr)
		}
		return out.Tools
	}
	fast, lib := list("/fast"), list("/lib")
	if !reflect.DeepEqual(fast, lib) {
		f, _ := json.Marshal(fast)
		l, _ := json.Marshal(lib)
		t.Fatalf("listings differ\nsession   %s\nstateless %s", f, l)
	}
	if len(fast) != 2 {
		t.Fatalf("listed %d tools, want a_plain and b_read", len(fast))
	}
	if raw, _ := json.Marshal(fast); !strings.Contains(string(raw), `"outputSchema":{"properties":{"hits":{"type":"integer"}},"type":"object"}`) {
		t.Fatalf("outputSchema not served: %s", raw)
	}

	// A key mcp-go would drop survives.
	if err := reg.Register(core.Tool{Name: "d_vendor", Kind: core.KindRead, Description: "Vendor.", Handler: echo,
		Annotations: json.RawMessage(`{"readOnlyHint":true,"x-vendor":{"tier":2}}`)}); err != nil {
		t.Fatal(err)
	}
	waittest.Succeeds(t, 5*time.Second, "the annotations' every key", func() error {
		if raw, _ := json.Marshal(list("/fast")); !strings.Contains(string(raw), `"x-vendor":{"tier":2}`) {
			return fmt.Errorf("annotations lost a key: %s", raw)
		}
		return nil
	})
}

// IM-32 on every session mode: a stateless endpoint answers tools/call with
// the upstream's result bytes too — to a client on a revision with sessions
// byte for byte, to one on 2026-07-28 with every member's bytes kept and the
// resultType and server identity that revision requires added — rather
// than through mcp-go's types, which drop the unknown content kind and
// fields below.
func TestStatelessEndpointResultBytesPassThrough(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{Stateless: true, Name: "toolgate-test", Version: "1.2.3"})
	content := `[{"type":"x-hologram","frames":3,"x-vendor":{"n":12345678901234567890}},` +
		`{"type":"text","text":"héllo \u2028 <b>","annotations":{"priority":0.25}}]`
	result := `{"content":` + content + `,"structuredContent":{"answer":1.50},"isError":false,"x-unknown":[1,2]}`
	if err := s.reg.Register(core.Tool{Name: "kinds", Kind: core.KindRead, Description: "Unknown kinds.",
		Handler: func(context.Context, json.RawMessage) (core.Result, error) {
			return core.Result{JSON: json.RawMessage(result)}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	post := func(version, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Test-Actor", "alice")
		req.Header.Set("X-Test-Roles", "MEMBER")
		req.Header.Set("MCP-Protocol-Version", version)
		if version == "2026-07-28" {
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "kinds")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(bytes.TrimSpace(b))
	}
	// The endpoint learns of the new tool from the bus: wait until it lists it.
	waittest.Succeeds(t, 10*time.Second, "the stateless endpoint to list the tool", func() error {
		if _, b := post("2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); !strings.Contains(b, `"kinds"`) {
			return fmt.Errorf("listed %s", b)
		}
		return nil
	})

	code, got := post("2025-06-18", `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"kinds","arguments":{}}}`)
	if want := `{"jsonrpc":"2.0","id":"call-1","result":` + result + `}`; code != http.StatusOK || got != want {
		t.Fatalf("2025-06-18: HTTP %d\n got %s\nwant %s", code, got, want)
	}

	code, got = post("2026-07-28", `{"jsonrpc":"2.0","id":"call-2","method":"tools/call","params":{"name":"kinds","arguments":{},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	var resp struct {
		ID     json.RawMessage            `json:"id"`
		Result map[string]json.RawMessage `json:"result"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(got), &resp) != nil || string(resp.ID) != `"call-2"` {
		t.Fatalf("2026-07-28: HTTP %d %s", code, got)
	}
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(resp.Result["_meta"], &meta)
	for key, want := range map[string]string{
		"content": content, "structuredContent": `{"answer":1.50}`, "isError": "false", "x-unknown": "[1,2]", "resultType": `"complete"`,
	} {
		if string(resp.Result[key]) != want {
			t.Errorf("2026-07-28: result %s = %s, want %s (%s)", key, resp.Result[key], want, got)
		}
	}
	if !strings.Contains(string(meta["io.modelcontextprotocol/serverInfo"]), `"toolgate-test"`) {
		t.Errorf("2026-07-28: no server identity in _meta: %s", got)
	}
}
