package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/mcp/demo"
)

// SV-9: a call waiting for an operator when the gateway shuts down is
// rejected at once — the client reads isError "the gateway is shutting
// down" — and Close is clean: it does not wait out its grace, and no call
// is cut (the call was cut after 10 s and the process exited 1).
func TestShutdownRejectsPendingApprovals(t *testing.T) {
	ctx := testCtx(t)
	yaml := gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), upstreamYAML("notes", serveDemo(t, "notes"), true)+"    approval: operator\n")
	g, err := gateway.New(ctx, loadConfig(t, yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, sub := g.Registry().Bus().Subscribe(64)
	defer sub.Close()
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	args := map[string]any{"text": "written at shutdown?"}
	preview := call(t, ctx, s, "notes_create_note", args)
	token, _ := preview.StructuredContent.(map[string]any)["confirmToken"].(string)
	if token == "" {
		t.Fatalf("no confirm token in the preview: %+v", preview)
	}
	answered := make(chan *mcpgo.CallToolResult, 1)
	go func() {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "notes_create_note"
		req.Params.Arguments = map[string]any{"text": args["text"], "confirm": true, "confirmToken": token}
		res, err := s.CallTool(ctx, req)
		if err != nil {
			t.Errorf("the waiting call failed instead of answering: %v", err)
		}
		answered <- res
	}()
	for pending := false; !pending; {
		select {
		case ev := <-sub.C():
			_, pending = ev.Data.(core.ConfirmationPending)
		case <-ctx.Done():
			t.Fatal("the confirmation never waited for an operator")
		}
	}
	if n := g.PendingApprovals(); n != 1 {
		t.Fatalf("%d pending approvals, want 1", n)
	}

	start := time.Now()
	closeCtx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	if err := g.Close(closeCtx); err != nil {
		t.Errorf("Close: %v, want a clean shutdown", err)
	}
	if took := time.Since(start); took > closeWait/2 {
		t.Errorf("Close took %v: it waited for the approval instead of rejecting it", took)
	}
	res := <-answered
	if res == nil {
		return
	}
	if text := resultText(res); !res.IsError || !strings.Contains(text, "the gateway is shutting down") {
		t.Fatalf("the waiting call answered %q (isError %v), want isError saying the gateway is shutting down", text, res.IsError)
	}
}

// SV-9: a call still running at the shutdown deadline gets a JSON-RPC
// error saying the gateway shut down, never an empty body.
func TestShutdownCutsCallsWithAnError(t *testing.T) {
	ctx := testCtx(t)
	// The flaky demo in front of a handler that says when a tools/call
	// reached it, so the test knows the call is in flight.
	srv, err := demo.New("flaky", demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{}, 1)
	up := server.NewStreamableHTTPServer(srv)
	upURL := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			select {
			case reached <- struct{}{}:
			default:
			}
		}
		up.ServeHTTP(w, r)
	}))
	yaml := gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), upstreamYAML("flaky", upURL, true))
	g, err := gateway.New(ctx, loadConfig(t, yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := mcptest.New("http://"+g.Addr()+"/mcp", &mcptest.Options{Authorization: "Bearer " + testKey})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		resp mcptest.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		// No seconds: the upstream stalls until it is cancelled.
		resp, err := c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"flaky_stall","arguments":{}}}`), nil)
		answered <- answer{resp, err}
	}()
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatal("the call never reached the upstream")
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := g.Close(closeCtx); err == nil {
		t.Error("Close reported a clean shutdown although a call was cut")
	}
	a := <-answered
	if a.err != nil {
		t.Fatalf("the cut call got no answer: %v", a.err)
	}
	msgs, err := a.resp.Messages()
	if err != nil || len(msgs) == 0 {
		t.Fatalf("the cut call's answer (HTTP %d) is not JSON-RPC: %v %q", a.resp.Status, err, a.resp.Body)
	}
	last := msgs[len(msgs)-1]
	if last.Error == nil || !strings.Contains(last.Error.Message, "shut down") || string(last.ID) != "41" {
		t.Fatalf("the cut call answered %q, want a JSON-RPC error for id 41 saying the gateway shut down", a.resp.Body)
	}
}

// serveHandler serves h on 127.0.0.1 until the test ends and returns its
// URL at /mcp.
func serveHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-served
	})
	return "http://" + ln.Addr().String() + "/mcp"
}
