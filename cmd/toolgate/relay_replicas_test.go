//go:build linux

package main

// OP-15: any request on any replica. Three `toolgate serve` processes on
// one PostgreSQL behind the round-robin proxy, a 2026-07-28 mcp-go client
// whose every request goes to the next replica: its retries answering an
// upstream's elicitation and sampling requests reach the replica the call
// is parked in; a request forged as coming from a replica is refused.

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/rrproxy"
)

const relayConfig = `gateway:
  store: %s
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
  admin:
    listen: ${ADMIN_LISTEN}
    keys:
      - key: ${ADMIN_KEY}
        operator: alice
endpoints:
  - path: /mcp
    auth:
      apiKeys:
        - key: ${CLIENT_KEY}
          actor: {id: sdk, roles: [MEMBER]}
upstreams:
  - name: asks
    url: %s
    transport: http
    required: true
    reads: [ask]
`

// startAskingUpstream serves ask, which asks its caller a question and
// then for a sampled message, and reports both answers.
func startAskingUpstream(t *testing.T) string {
	t.Helper()
	up := server.NewMCPServer("asks", "1", server.WithToolCapabilities(false), server.WithElicitation())
	up.AddTool(mcpgo.NewTool("ask", mcpgo.WithDescription("Asks."), mcpgo.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			el, err := up.RequestElicitation(ctx, mcpgo.ElicitationRequest{Params: mcpgo.ElicitationParams{
				Message:         "Which colour?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"colour": map[string]any{"type": "string"}}},
			}})
			if err != nil {
				return mcpgo.NewToolResultError("elicitation failed: " + err.Error()), nil
			}
			sm, err := up.RequestSampling(ctx, mcpgo.CreateMessageRequest{CreateMessageParams: mcpgo.CreateMessageParams{
				Messages:  []mcpgo.SamplingMessage{{Role: mcpgo.RoleUser, Content: mcpgo.NewTextContent("name it")}},
				MaxTokens: 10,
			}})
			if err != nil {
				return mcpgo.NewToolResultError("sampling failed: " + err.Error()), nil
			}
			text, _ := sm.Content.(mcpgo.TextContent)
			return mcpgo.NewToolResultText(fmt.Sprintf("colour %v, sampled %q", el.Content, text.Text)), nil
		})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(up))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

type relayElicit struct{}

func (relayElicit) Elicit(context.Context, mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept,
		Content: map[string]any{"colour": "teal"}}}, nil
}

type relaySample struct{}

func (relaySample) CreateMessage(context.Context, mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	return &mcpgo.CreateMessageResult{SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.NewTextContent("heron")}, Model: "m"}, nil
}

func TestAnyRequestOnAnyReplicaOP15(t *testing.T) {
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	cfg := writeServeConfig(t, fmt.Sprintf(relayConfig, dsn, startAskingUpstream(t)))
	rs := startTopoReplicas(t, cfg, dsn, 3)
	var bases []string
	for _, r := range rs {
		bases = append(bases, r.base)
	}
	proxy, err := rrproxy.New(bases, &rrproxy.Options{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(proxy.CloseIdleConnections)
	t.Cleanup(front.Close)

	st, err := transport.NewStreamableHTTP(front.URL+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + topoClientKey}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(st, client.WithProtocolVersion(mcpgo.ProtocolVersion20260728),
		client.WithElicitationHandler(relayElicit{}), client.WithSamplingHandler(relaySample{}))
	t.Cleanup(func() { _ = c.Close() })
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	from := len(proxy.Entries())
	res, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "asks_ask"}})
	if err != nil {
		t.Fatalf("call: %v\n%s", err, logText(proxy.Entries()))
	}
	var text string
	for _, ct := range res.Content {
		if tc, ok := ct.(mcpgo.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError || !strings.Contains(text, "teal") || !strings.Contains(text, `"heron"`) {
		t.Fatalf("the call answered %q (isError %v); want both answers passed to the upstream\n%s", text, res.IsError, logText(proxy.Entries()))
	}
	calls := toolCalls(proxy.Entries()[from:])
	if len(calls) != 3 {
		t.Fatalf("the proxy saw %d tools/call, want the call and its two retries\n%s", len(calls), logText(proxy.Entries()))
	}
	for i := 1; i < len(calls); i++ {
		if calls[i].Backend < 0 || calls[i].Backend == calls[i-1].Backend {
			t.Fatalf("retry %d was served by the replica of the request before it; the proxy did not spread them\n%s", i, logText(proxy.Entries()))
		}
	}

	// A request claiming to come from a replica, not signed by one.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rs[0].base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+topoClientKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Toolgate-Forwarded", "someone;1;forged")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a forged forwarded request got %d, want 403", resp.StatusCode)
	}
}
