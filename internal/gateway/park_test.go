package gateway_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	dto "github.com/prometheus/client_model/go"

	"github.com/toolgate/toolgate/internal/waittest"
)

// SV-2, OP-7: through a real gateway over loopback, an mcp-go
// client that keeps no GET stream is parked once idle past
// gateway.sessionParkAfter — toolgate_sessions_parked counts it — and its
// next call, on the same session, is answered; a client with its GET
// stream open, idle longer, is never parked. Parking ends nothing: no
// session is opened again or ended until the client deletes its own, which
// ends it once.
func TestIdleSessionParksAndWakesSV2(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	store := filepath.Join(t.TempDir(), "toolgate.db")
	yaml := strings.Replace(gatewayYAML(store, upstreamYAML("notes", notes, true)), "gateway:\n", "gateway:\n  sessionParkAfter: 100ms\n", 1)
	g := newGateway(t, loadConfig(t, yaml), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	base := "http://" + g.Addr()

	listening := connect(t, ctx, base+"/mcp", testKey) // keeps its GET stream open
	waitServed(t, ctx, listening, notesTools, nil)

	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	st, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPBasicClient(&http.Client{Transport: tr}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testKey}))
	if err != nil {
		t.Fatal(err)
	}
	quiet := client.NewClient(st, client.WithProtocolVersion(testProtocol))
	if err := quiet.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = testProtocol
	init.Params.ClientInfo = mcpgo.Implementation{Name: "quiet-client", Version: "1.0.0"}
	if _, err := quiet.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	id := st.GetSessionId()
	callQuiet := func(query string) {
		t.Helper()
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "notes_search", map[string]any{"query": query}
		res, err := quiet.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("call %q on session %s: %v %+v", query, id, err, res)
		}
	}
	callQuiet("before parking")

	var fams map[string]*dto.MetricFamily
	waittest.Eventually(t, 30*time.Second, "the quiet session to be parked", func() bool {
		fams, _ = metricsText(t, base)
		n, _ := sample(fams, "toolgate_sessions_parked", "endpoint", "/mcp")
		return n >= 1
	})
	// The listening session was idle longer: it would have been parked in
	// the same sweep or before.
	wantSample(t, fams, 1, "toolgate_sessions_parked", "endpoint", "/mcp")
	wantSample(t, fams, 2, "toolgate_sessions", "endpoint", "/mcp")

	callQuiet("after parking")
	if got := st.GetSessionId(); got != id {
		t.Fatalf("the woken session's id changed: %s, then %s", id, got)
	}
	call(t, ctx, listening, "notes_search", map[string]any{"query": "listening"})
	fams, _ = metricsText(t, base)
	wantSample(t, fams, 2, "toolgate_sessions", "endpoint", "/mcp")
	wantSample(t, fams, 2, "toolgate_sessions_started_total", "endpoint", "/mcp")
	if n, ok := sample(fams, "toolgate_sessions_ended_total", "endpoint", "/mcp", "by", "client"); ok && n != 0 {
		t.Fatalf("%v sessions ended by parking and waking", n)
	}

	// The client's own DELETE (mcp-go's Close) carries none of its headers,
	// the API key included (STACK.md): the session is ended as a client
	// with its key ends it.
	del, err := http.NewRequestWithContext(ctx, http.MethodDelete, base+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	del.Header.Set("Authorization", "Bearer "+testKey)
	del.Header.Set("Mcp-Session-Id", id)
	del.Header.Set("Mcp-Protocol-Version", testProtocol)
	resp, err := (&http.Client{Transport: tr}).Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE of the session: %d", resp.StatusCode)
	}
	_ = quiet.Close()
	waittest.Eventually(t, 30*time.Second, "the deleted session to leave the count", func() bool {
		fams, _ = metricsText(t, base)
		n, _ := sample(fams, "toolgate_sessions", "endpoint", "/mcp")
		return n == 1
	})
	wantSample(t, fams, 1, "toolgate_sessions_ended_total", "endpoint", "/mcp", "by", "client")
}
