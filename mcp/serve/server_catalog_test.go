package serve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// IM-34 end to end: an endpoint serves the upstreams' resources and
// prompts, reads and gets routed to the upstream that listed them.
func TestEndpointServesCatalog(t *testing.T) {
	reg := core.NewRegistry(nil)
	up, err := upstream.New(upstream.Options{Name: "notes", URL: upstreamtest.ServeDemo(t, "notes"), Transport: "http"})
	if err != nil {
		t.Fatal(err)
	}
	im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{Name: "notes", Prefix: "notes", Upstream: up, Timeout: 10 * time.Second}}, nil)
	defer im.Close()
	if err := im.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: "/mcp", Registry: reg, Catalog: im, Actor: testActor})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", testAuth(ep))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer ep.Close(context.Background())

	c := testClient(srv.URL+"/mcp", "m", "")
	initialize(t, c)
	if res, rpcErr := rpc(t, c, "resources/list", map[string]any{}); !strings.Contains(string(res), `"uri":"notes://welcome"`) {
		t.Fatalf("resources/list: %s %s", res, rpcErr)
	}
	if res, rpcErr := rpc(t, c, "resources/read", map[string]any{"uri": "notes://welcome"}); !strings.Contains(string(res), "Welcome to toolgate.") {
		t.Fatalf("resources/read: %s %s", res, rpcErr)
	}
	if res, rpcErr := rpc(t, c, "prompts/list", map[string]any{}); !strings.Contains(string(res), `"name":"notes_summarize"`) {
		t.Fatalf("prompts/list: %s %s", res, rpcErr)
	}
	if res, rpcErr := rpc(t, c, "prompts/get", map[string]any{"name": "notes_summarize"}); !strings.Contains(string(res), "Summarize my notes") {
		t.Fatalf("prompts/get: %s %s", res, rpcErr)
	}
}
