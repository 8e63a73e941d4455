package upstream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// IM-34 over a real MCP server: resources keep their URI and are read from
// the upstream that listed them; prompts are prefixed like tools.
func TestCatalogThroughRealServer(t *testing.T) {
	reg := core.NewRegistry(nil)
	var specs []upstreams.UpstreamSpec
	for _, name := range []string{"notes", "echo"} {
		up, err := upstream.New(upstream.Options{Name: name, URL: upstreamtest.ServeDemo(t, name), Transport: "http"})
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, upstreams.UpstreamSpec{Name: name, Prefix: name, Transport: "http", Upstream: up, Timeout: 10 * time.Second})
	}
	im := upstreams.NewImporter(reg, specs, nil)
	defer im.Close()
	if err := im.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := im.Catalog()
	if len(c.Resources) != 1 || c.Resources[0].URI != "notes://welcome" || c.Resources[0].Source != "notes" {
		t.Fatalf("resources: %+v", c.Resources)
	}
	if len(c.Prompts) != 1 || c.Prompts[0].Name != "notes_summarize" {
		t.Fatalf("prompts: %+v", c.Prompts)
	}
	ctx := context.Background()
	out, err := im.ReadResource(ctx, "notes://welcome")
	if err != nil || !strings.Contains(string(out), "Welcome to toolgate.") {
		t.Fatalf("read: %v %s", err, out)
	}
	out, err = im.GetPrompt(ctx, "notes_summarize", nil)
	if err != nil || !strings.Contains(string(out), "Summarize my notes") {
		t.Fatalf("prompt: %v %s", err, out)
	}
	if _, err := im.ReadResource(ctx, "notes://nope"); err == nil {
		t.Fatal("unknown resource read succeeded")
	}
}
