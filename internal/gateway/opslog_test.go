package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/internal/gateway"
)

// logBuffer collects a logger's output from any goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// logRecord is one JSON log line; the fields the operator log writes.
type logRecord struct {
	Msg          string   `json:"msg"`
	Level        string   `json:"level"`
	Upstream     string   `json:"upstream"`
	Tool         string   `json:"tool"`
	Name         string   `json:"name"`
	Kind         string   `json:"kind"`
	Reason       string   `json:"reason"`
	Added        int      `json:"added"`
	Removed      int      `json:"removed"`
	Changed      int      `json:"changed"`
	AddedTools   []string `json:"addedTools"`
	RemovedTools []string `json:"removedTools"`
	ChangedTools []string `json:"changedTools"`
}

func records(t *testing.T, out string) []logRecord {
	t.Helper()
	var recs []logRecord
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r logRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not a JSON record: %v\n%s", err, sc.Text())
		}
		recs = append(recs, r)
	}
	return recs
}

// liveServer is an MCP server whose tool list the test rewrites.
type liveServer struct {
	*server.MCPServer
	URL string
}

func serveLive(t *testing.T) *liveServer {
	t.Helper()
	s := server.NewMCPServer("live", "1.0.0", server.WithToolCapabilities(true))
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return &liveServer{MCPServer: s, URL: ts.URL + "/mcp"}
}

// set replaces the whole list at once: one list_changed, one refresh.
func (l *liveServer) set(tools map[string]string) {
	var st []server.ServerTool
	for name, schema := range tools {
		desc := "tool " + name
		if i := strings.IndexByte(schema, '|'); i >= 0 {
			desc, schema = schema[:i], schema[i+1:]
		}
		st = append(st, server.ServerTool{
			Tool: mcpgo.NewToolWithRawSchema(name, desc, json.RawMessage(schema)),
			Handler: func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText(name), nil
			},
		})
	}
	l.SetTools(st...)
}

const objectSchema = `{"type":"object"}`

// OP-7, IM-18, IM-19, IM-13, IM-26, IM-5: a gateway with a logger writes
// each dropped tool (broken schema, dangerous pattern, non-object root) and
// each collision (across upstreams, and within one) once, as a JSON record
// naming upstream, tool and reason; each refresh diff as one record whose
// names are capped; and no secret.
func TestOperatorLogRecordsDropsCollisionsDiffsOnce(t *testing.T) {
	ctx := testCtx(t)
	live := serveLive(t)
	live.set(map[string]string{
		"t1": objectSchema, "t2": objectSchema,
		"bad_root": `{"type":"string"}`,
		// Both reshape to live_a_b (IM-12): the first listed keeps it.
		"a.b": objectSchema, "a_b": objectSchema,
	})
	echo := serveDemo(t, "echo")
	ups := []string{
		upstreamYAML("sneaky", serveDemo(t, "sneaky"), true),
		// Both import echo as echo_echo: e2 is refused (IM-13).
		upstreamYAML("e1", echo, true) + "    prefix: echo\n",
		upstreamYAML("e2", echo, true) + "    prefix: echo\n",
		upstreamYAML("live", live.URL, true) + "    defaultKind: read\n    headers: {X-Api-Key: ${KEY}}\n",
	}
	cfg := loadConfig(t, gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), ups...))
	var buf logBuffer
	g, err := gateway.NewHandler(ctx, cfg, &gateway.Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			closeGateway(t, g)
		}
	})
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Refreshes that change nothing re-publish the drops and collisions.
	for range 2 {
		if _, err := g.Importer().RefreshAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// One change of live: t1 removed, t2 changed, 30 tools and one more
	// broken one added, the earlier drops and collision still there.
	next := map[string]string{
		"t2":       "another description|" + objectSchema,
		"bad_root": `{"type":"string"}`, "bad_new": `{"type":"object","properties":{"n":{"type":"integr"}}}`,
		"a.b": objectSchema, "a_b": objectSchema,
	}
	for i := range 30 {
		next[fmt.Sprintf("many_%02d", i)] = objectSchema
	}
	live.set(next)
	if _, err := g.Importer().Refresh(ctx, "live"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Importer().RefreshAll(ctx); err != nil {
		t.Fatal(err)
	}
	// Close logs everything published before it.
	closeGateway(t, g)
	closed = true

	out := buf.String()
	for _, secret := range []string{testKey, testSecret} {
		if strings.Contains(out, secret) {
			t.Fatalf("a secret is in the log (IM-5):\n%s", out)
		}
	}
	drops := map[string]int{}
	collisions := map[string]int{}
	var imported []string
	var refreshed []logRecord
	for _, r := range records(t, out) {
		switch r.Msg {
		case "tool dropped":
			if r.Level != "WARN" || r.Reason == "" {
				t.Errorf("drop record: %+v", r)
			}
			drops[r.Upstream+"/"+r.Tool+" "+r.Kind]++
		case "tool name collision":
			if r.Level != "WARN" || !strings.HasPrefix(r.Reason, "the name is held by ") {
				t.Errorf("collision record: %+v", r)
			}
			collisions[r.Upstream+"/"+r.Tool+" as "+r.Name]++
		case "tools imported":
			imported = append(imported, r.Upstream)
		case "tools refreshed":
			refreshed = append(refreshed, r)
		}
	}
	wantDrops := map[string]int{
		"sneaky/check_email pattern": 1, "sneaky/broken_schema schema": 1,
		"live/bad_root schema": 1, "live/bad_new schema": 1,
	}
	if fmt.Sprint(drops) != fmt.Sprint(wantDrops) {
		t.Errorf("drop records %v, want %v\n%s", drops, wantDrops, out)
	}
	wantCollisions := map[string]int{"e2/echo as echo_echo": 1, "live/a_b as live_a_b": 1}
	if fmt.Sprint(collisions) != fmt.Sprint(wantCollisions) {
		t.Errorf("collision records %v, want %v\n%s", collisions, wantCollisions, out)
	}
	slices.Sort(imported)
	if !slices.Equal(imported, []string{"e1", "e2", "live", "sneaky"}) {
		t.Errorf("import records for %q, want one per upstream", imported)
	}
	if len(refreshed) != 1 {
		t.Fatalf("%d refresh records, want 1 (a refresh that changes nothing logs nothing):\n%s", len(refreshed), out)
	}
	r := refreshed[0]
	if r.Upstream != "live" || r.Added != 30 || r.Removed != 1 || r.Changed != 1 ||
		len(r.AddedTools) != gateway.MaxLoggedNames || !strings.HasPrefix(r.AddedTools[0], "many_") ||
		!slices.Equal(r.RemovedTools, []string{"t1"}) || !slices.Equal(r.ChangedTools, []string{"t2"}) {
		t.Errorf("refresh record: %+v", r)
	}
}
