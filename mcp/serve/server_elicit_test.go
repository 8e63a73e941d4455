package serve_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/mcp/serve"
)

type elicitAnswer struct {
	asked  atomic.Int64
	accept bool
	msg    atomic.Value
}

func (a *elicitAnswer) Elicit(_ context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	a.asked.Add(1)
	a.msg.Store(req.Params.Message)
	if !a.accept {
		return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionDecline}}, nil
	}
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true},
	}}, nil
}

func elicitingClient(t *testing.T, url string, h client.ElicitationHandler, declare bool) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"X-Test-Actor": "m", "X-Test-Roles": "MEMBER"}))
	if err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	if declare {
		// mcp-go declares the capability whenever a handler is set.
		opts = append(opts, client.WithElicitationHandler(h))
	}
	c := client.NewClient(tr, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = "2025-06-18"
	req.Params.ClientInfo = mcpgo.Implementation{Name: "eliciting", Version: "1"}
	if declare {
		req.Params.Capabilities.Elicitation = &mcpgo.ElicitationCapability{}
	}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	return c
}

func callText(t *testing.T, c *client.Client, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// CF-6: a client that declared elicitation is asked to confirm in the same
// call; yes runs the tool once, no runs nothing; a client without the
// capability gets the two-call preview.
func TestEndpointElicitConfirm(t *testing.T) {
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("0123456789abcdef0123456789abcdef!"), Ledger: memory.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	s := serveEndpoint(t, serve.EndpointOptions{Gate: gate, ElicitConfirm: true})

	yes := &elicitAnswer{accept: true}
	c := elicitingClient(t, s.url, yes, true)
	text, isErr := callText(t, c, "gh_delete", map[string]any{"id": 5})
	if isErr || !strings.Contains(text, `echo {"id":5}`) || yes.asked.Load() != 1 {
		t.Fatalf("accepted: %q isError=%v asked=%d", text, isErr, yes.asked.Load())
	}
	if msg, _ := yes.msg.Load().(string); !strings.Contains(msg, "gh_delete") || !strings.Contains(msg, `{"id":5}`) {
		t.Fatalf("question: %q", msg)
	}
	<-s.calls

	no := &elicitAnswer{}
	c2 := elicitingClient(t, s.url, no, true)
	text, isErr = callText(t, c2, "gh_delete", map[string]any{"id": 6})
	if !isErr || !strings.Contains(text, "declined") || no.asked.Load() != 1 {
		t.Fatalf("declined: %q isError=%v", text, isErr)
	}

	plain := &elicitAnswer{accept: true}
	c3 := elicitingClient(t, s.url, plain, false)
	text, isErr = callText(t, c3, "gh_delete", map[string]any{"id": 7})
	if isErr || plain.asked.Load() != 0 || !strings.Contains(text, "confirmToken") {
		t.Fatalf("without the capability: %q isError=%v asked=%d", text, isErr, plain.asked.Load())
	}
	select {
	case <-s.calls:
		t.Fatal("a declined or preview-only call ran the tool")
	default:
	}
}
