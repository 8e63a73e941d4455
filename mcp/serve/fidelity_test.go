package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/mcp/serve"
)

// fidelityTools are tools as third-party servers really write them: a root
// schema of {} (servers built without a schema library), one with
// properties but no type, and one with a title, icons, execution, its own
// _meta (with a spoofed source) and no annotations at all.
func fidelityTools() []core.Tool {
	echo := func(context.Context, json.RawMessage) (core.Result, error) { return core.TextResult("ok"), nil }
	return []core.Tool{
		{Name: "up_empty", Source: "up", RemoteName: "empty", Kind: core.KindRead, Description: "Takes anything.",
			InputSchema: json.RawMessage(`{}`), Handler: echo},
		{Name: "up_notype", Source: "up", RemoteName: "notype", Kind: core.KindRead, Description: "Needs q.",
			InputSchema: json.RawMessage(`{"properties":{"q":{"type":"string"}},"required":["q"]}`), Handler: echo},
		{Name: "up_rich", Source: "up", RemoteName: "rich", Kind: core.KindRead, Description: "Every member.",
			Title:       "Rich <tool>",
			Icons:       json.RawMessage(`[{"src":"https://example.com/i.png","mimeType":"image/png","sizes":["48x48"],"x-extra":1}]`),
			Execution:   json.RawMessage(`{"taskSupport":"optional"}`),
			Meta:        json.RawMessage(`{"vendor.example/k":{"n":1},"dev.toolgate/source":"spoof"}`),
			InputSchema: json.RawMessage(`{"type":"object","properties":{}}`), Handler: echo},
	}
}

// fidelityServer serves fidelityTools on a stateful and a stateless
// endpoint, every request as one actor.
func fidelityServer(t *testing.T) string {
	t.Helper()
	reg := core.NewRegistry(nil)
	for _, tl := range fidelityTools() {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return asActor(t, reg, "sdk")
}

// asActor serves reg on /mcp (with sessions) and /stateless, every request
// as the MEMBER actor id, and returns the server's base URL.
func asActor(t *testing.T, reg *core.Registry, id string) string {
	t.Helper()
	return asActorWith(t, reg, id, nil)
}

// asActorWith is asActor with a confirm gate, so action tools are served.
func asActorWith(t *testing.T, reg *core.Registry, id string, gate *confirm.Gate) string {
	t.Helper()
	mux := http.NewServeMux()
	for _, path := range []string{"/mcp", "/stateless"} {
		ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: path, Registry: reg, Actor: testActor, Gate: gate, Stateless: path == "/stateless"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ep.Close(context.Background()) })
		mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a := core.Actor{ID: id, Roles: []string{"MEMBER"}}
			ep.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, a)))
		}))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// IM-36, IM-17: every tool reaches clients in a form the official SDKs
// accept — a root without "type":"object" gets it — and every member the
// upstream sent as it sent it: title, icons, execution, its _meta merged
// with the gateway's source (which wins), and no annotations where it sent
// none. Stateful and stateless endpoints list the same bytes, and the
// upstream's original schema is what calls are validated against.
func TestListingFidelityIM36(t *testing.T) {
	base := fidelityServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	listed := func(path string) map[string]map[string]json.RawMessage {
		t.Helper()
		c := mcptest.New(base+path, nil)
		if path == "/mcp" {
			if _, err := c.Initialize(ctx); err != nil {
				t.Fatal(err)
			}
		}
		res, rpcErr, err := c.Call(ctx, "tools/list", map[string]any{})
		if err != nil || rpcErr != nil {
			t.Fatalf("%s tools/list: %v %v", path, err, rpcErr)
		}
		var body struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(res, &body); err != nil {
			t.Fatal(err)
		}
		out := map[string]map[string]json.RawMessage{}
		for _, tl := range body.Tools {
			var name string
			_ = json.Unmarshal(tl["name"], &name)
			out[name] = tl
		}
		return out
	}
	stateful, stateless := listed("/mcp"), listed("/stateless")
	for name, tl := range stateful {
		for key, val := range tl {
			if string(stateless[name][key]) != string(val) {
				t.Errorf("%s.%s: stateful %s, stateless %s", name, key, val, stateless[name][key])
			}
		}
		if len(stateless[name]) != len(tl) {
			t.Errorf("%s: stateful members %d, stateless %d", name, len(tl), len(stateless[name]))
		}
	}
	for name, want := range map[string]map[string]string{
		"up_empty":  {"inputSchema": `{"type":"object"}`},
		"up_notype": {"inputSchema": `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`},
		"up_rich": {
			"title": `"Rich <tool>"`, "execution": `{"taskSupport":"optional"}`,
			"icons": `[{"src":"https://example.com/i.png","mimeType":"image/png","sizes":["48x48"],"x-extra":1}]`,
			"_meta": `{"dev.toolgate/source":"up","vendor.example/k":{"n":1}}`,
		},
	} {
		for key, val := range want {
			if got := string(stateful[name][key]); got != val {
				t.Errorf("%s.%s = %s, want %s", name, key, got, val)
			}
		}
		if a, ok := stateful[name]["annotations"]; ok {
			t.Errorf("%s: annotations %s served, but none were sent", name, a)
		}
	}

	// The upstream's own schema is enforced: q is required.
	c := mcptest.New(base+"/mcp", nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	res, rpcErr, err := c.Call(ctx, "tools/call", map[string]any{"name": "up_notype", "arguments": map[string]any{}})
	if err != nil || rpcErr != nil || !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), "invalid arguments") {
		t.Errorf("calling up_notype without q: %s %v %v, want an invalid-arguments isError", res, rpcErr, err)
	}

	// The official Go SDK client lists and calls.
	gc := gosdk.NewClient(&gosdk.Implementation{Name: "toolgate-test", Version: "1"}, nil)
	gs, err := gc.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("Go SDK connect: %v", err)
	}
	defer gs.Close()
	tools, err := gs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("Go SDK ListTools: %v", err)
	}
	if len(tools.Tools) != 3 {
		t.Errorf("Go SDK listed %d tools, want 3", len(tools.Tools))
	}
	for _, tl := range tools.Tools {
		if tl.Name == "up_rich" && (tl.Title != "Rich <tool>" || len(tl.Icons) != 1 || tl.Meta["vendor.example/k"] == nil) {
			t.Errorf("Go SDK sees up_rich as %+v", tl)
		}
	}
	if r, err := gs.CallTool(ctx, &gosdk.CallToolParams{Name: "up_empty", Arguments: map[string]any{"anything": 1}}); err != nil || r.IsError {
		t.Errorf("Go SDK calling up_empty: %+v %v", r, err)
	}
}

// IM-36 with the official TypeScript SDK client, which refuses a whole
// tools/list over one root schema without "type":"object" — Claude Desktop,
// Claude Code and Cursor among its users.
func TestListingTypeScriptSDKIM36(t *testing.T) {
	base := fidelityServer(t)
	dir := peers.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, peers.Node(t), filepath.Join(dir, "sdk-client.mjs"), base+"/mcp", "up_empty", `{"x":1}`)
	cmd.Dir = dir
	out, err := cmd.Output()
	var run struct {
		Error string `json:"error"`
		Tools []struct {
			Name        string         `json:"name"`
			Title       string         `json:"title"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
		Call struct {
			IsError bool `json:"isError"`
		} `json:"call"`
	}
	if jerr := json.Unmarshal(out, &run); jerr != nil || err != nil || run.Error != "" {
		t.Fatalf("sdk-client: %v %v %s", err, jerr, out)
	}
	if len(run.Tools) != 3 || run.Call.IsError {
		t.Fatalf("TS SDK listed %d tools, call isError %v: %s", len(run.Tools), run.Call.IsError, out)
	}
	for _, tl := range run.Tools {
		if tl.InputSchema["type"] != "object" {
			t.Errorf("%s: inputSchema %v", tl.Name, tl.InputSchema)
		}
	}
}
