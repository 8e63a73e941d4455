package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/report"
)

// IM-19, RV-2: an upstream over Streamable HTTP lists a tool whose input
// schema has a quadratic pattern and whose output schema a cubic one, one
// whose quadratic pattern a short maxLength bounds, and one with an
// exponential pattern. The gateway drops the exponential one, serves the
// others to a client with their schemas as sent, and the report (what
// `tools --json`, `check` and `review list` print) flags the slow patterns,
// at their pointers, as warnings.
func TestSlowPatternServedAndFlagged(t *testing.T) {
	ctx := testCtx(t)
	up := server.NewMCPServer("patterns", "1.0.0", server.WithToolCapabilities(true))
	answer := func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("ok"), nil
	}
	trim := mcpgo.NewToolWithRawSchema("trim", "Trims trailing white space.",
		json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","pattern":"\\s+$"}}}`))
	trim.RawOutputSchema = json.RawMessage(`{"type":"object","properties":{"line":{"type":"string","pattern":"^.*.*.*=$"}}}`)
	up.AddTools(
		server.ServerTool{Tool: trim, Handler: answer},
		server.ServerTool{Tool: mcpgo.NewToolWithRawSchema("short", "Trims a short text.",
			json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","maxLength":100,"pattern":"\\s+$"}}}`)), Handler: answer},
		server.ServerTool{Tool: mcpgo.NewToolWithRawSchema("nested", "Hangs a client.",
			json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","pattern":"^(a+)+$"}}}`)), Handler: answer},
	)
	ts := httptest.NewServer(server.NewStreamableHTTPServer(up))
	t.Cleanup(ts.Close)

	cfg := loadConfig(t, gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"),
		upstreamYAML("pat", ts.URL+"/mcp", true)+"    defaultKind: read\n"))
	g := newGateway(t, cfg, nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	waitServed(t, ctx, s, []string{"pat_trim", "pat_short"}, []string{"pat_nested"})
	listed, err := s.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	served := false
	for _, tl := range listed.Tools {
		if tl.Name == "pat_trim" {
			text, _ := tl.InputSchema.Properties["text"].(map[string]any)
			served = text["pattern"] == `\s+$`
		}
	}
	if !served {
		t.Errorf("pat_trim is not served with its pattern: %+v", listed.Tools)
	}

	snap := g.Registry().Bus().Snapshot()
	if !slices.ContainsFunc(snap.Dropped, func(d core.Drop) bool {
		return d.Source == "pat" && d.RemoteName == "nested" && d.Kind == core.DropPattern
	}) {
		t.Errorf("the exponential pattern's tool is not dropped: %+v", snap.Dropped)
	}
	type place struct{ tool, where, severity string }
	var got []place
	for _, row := range report.Tools(g.Reviewer(), snap) {
		for _, f := range row.Flags {
			if f.Kind == core.FlagSlowPattern {
				got = append(got, place{row.Name, f.Where, f.Severity})
			}
		}
	}
	want := []place{
		{"pat_trim", "/properties/text/pattern", core.SeverityWarn},
		{"pat_trim", "outputSchema/properties/line/pattern", core.SeverityWarn},
	}
	if !slices.Equal(got, want) {
		t.Errorf("slow-pattern flags %+v, want %+v", got, want)
	}
}
