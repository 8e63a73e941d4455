//go:build linux

package main

// OP-11: any request on any replica. Three `toolgate serve` processes on
// one PostgreSQL behind the round-robin proxy, every client request on
// another replica than the one before: a 2026-07-28 mcp-go client's
// retries answering an upstream's elicitation and sampling requests, and a
// 2025-06-18 client's POSTed answers to the same requests, reach the
// replica the call runs in; the legacy session's DELETE on any replica
// ends it on all; a 2026-07-28 notifications/cancelled reaches
// the replica running the call it names; a request forged as coming from
// a replica is refused.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/internal/lab/rrproxy"
	"github.com/toolgate/toolgate/internal/pgtest"
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
    reads: [ask, hold]
    # Longer than the test waits for a cancellation: only the client's
    # cancellation can end hold.
    timeout: 30m
`

// askingUpstream serves ask, which asks its caller a question and then for
// a sampled message, and reports both answers; and hold, which runs until
// it is cancelled and says so on held and cancelled.
type askingUpstream struct {
	url             string
	held, cancelled chan string
}

func startAskingUpstream(t *testing.T) *askingUpstream {
	t.Helper()
	u := &askingUpstream{held: make(chan string, 4), cancelled: make(chan string, 4)}
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
	up.AddTool(mcpgo.NewTool("hold", mcpgo.WithDescription("Holds."), mcpgo.WithReadOnlyHintAnnotation(true), mcpgo.WithString("tag")),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			tag := req.GetString("tag", "")
			u.held <- tag
			<-ctx.Done()
			u.cancelled <- tag
			return mcpgo.NewToolResultError("cancelled"), nil
		})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(up))
	t.Cleanup(srv.Close)
	u.url = srv.URL + "/mcp"
	return u
}

// relayClient is an mcp-go client of protocol version through url that
// answers elicitation and sampling.
func relayClient(t *testing.T, url, version string) *client.Client {
	t.Helper()
	st, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + topoClientKey}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(st, client.WithProtocolVersion(version),
		client.WithElicitationHandler(relayElicit{}), client.WithSamplingHandler(relaySample{}))
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(boundedCtx(t), mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ProtocolVersion: version}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// askAcross calls ask with c and checks both answers reached the upstream
// and that each of the call's requests (the call, and the answers: retries
// or POSTed responses) went to another replica than the one before.
func askAcross(t *testing.T, c *client.Client, proxy *rrproxy.Proxy, what string, wantRequests int) {
	t.Helper()
	from := len(proxy.Entries())
	res, err := c.CallTool(boundedCtx(t), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "asks_ask"}})
	if err != nil {
		t.Fatalf("%s: call: %v\n%s", what, err, logText(proxy.Entries()))
	}
	var text string
	for _, ct := range res.Content {
		if tc, ok := ct.(mcpgo.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError || !strings.Contains(text, "teal") || !strings.Contains(text, `"heron"`) {
		t.Fatalf("%s: the call answered %q (isError %v); want both answers passed to the upstream\n%s", what, text, res.IsError, logText(proxy.Entries()))
	}
	var reqs []rrproxy.Entry
	for _, e := range proxy.Entries()[from:] {
		if e.Method == http.MethodPost && (e.RPC == "tools/call" || e.RPC == "") {
			reqs = append(reqs, e)
		}
	}
	if len(reqs) != wantRequests {
		t.Fatalf("%s: the proxy saw %d requests of the call, want %d\n%s", what, len(reqs), wantRequests, logText(proxy.Entries()))
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].Backend < 0 || reqs[i].Backend == reqs[i-1].Backend {
			t.Fatalf("%s: request %d was served by the replica of the one before it\n%s", what, i, logText(proxy.Entries()))
		}
	}
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

// Three real replicas on one PostgreSQL behind a round-robin proxy, no
// affinity, each request of a call on another replica than the last: a
// 2026-07-28 client answers an elicitation and a sampling request, a legacy
// client does the same and ends its session elsewhere, a cancel reaches the
// replica running the call, and a forged forwarded request is refused
// (OP-11).
func TestAnyRequestOnAnyReplicaOP11(t *testing.T) {
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	up := startAskingUpstream(t)
	cfg := writeServeConfig(t, fmt.Sprintf(relayConfig, dsn, up.url))
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
	ctx := t.Context()

	// A 2026-07-28 client: the call, then a retry answering the
	// elicitation, then one answering the sampling request.
	modern := relayClient(t, front.URL+"/mcp", mcpgo.ProtocolVersion20260728)
	askAcross(t, modern, proxy, "2026-07-28 client", 3)

	// A client of a revision with sessions: the call, then its POSTed
	// answers to the two server requests.
	legacy := relayClient(t, front.URL+"/mcp", mcpgo.ProtocolVersion20250618)
	askAcross(t, legacy, proxy, "2025-06-18 client", 3)

	// Its DELETE, on whichever replica it reaches, ends the session on
	// every replica: its next requests, each on another replica, are 404.
	sid := legacy.GetSessionId()
	if sid == "" {
		t.Fatal("the 2025-06-18 client has no session")
	}
	if code := sessionRequest(t, front.URL+"/mcp", http.MethodDelete, sid, ""); code != http.StatusOK {
		t.Fatalf("DELETE of the session: %d", code)
	}
	for i := range rs {
		if code := sessionRequest(t, front.URL+"/mcp", http.MethodPost, sid, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`); code != http.StatusNotFound {
			t.Fatalf("request %d on the ended session: %d, want 404\n%s", i+1, code, logText(proxy.Entries()))
		}
	}

	// A 2026-07-28 client's notifications/cancelled reaching another
	// replica than the one running its call.
	callCtx, stop := context.WithCancel(ctx)
	defer stop()
	from := len(proxy.Entries())
	ended := make(chan error, 1)
	go func() {
		_, err := modernPost(callCtx, front.URL+"/mcp", "tools/call", "asks_hold",
			`{"jsonrpc":"2.0","id":"call-9","method":"tools/call","params":{"name":"asks_hold","arguments":{"tag":"modern"},`+relayMeta+`}}`)
		ended <- err
	}()
	waitTag(t, up.held, "modern", "the call reaching the upstream")
	if code, err := modernPost(ctx, front.URL+"/mcp", "notifications/cancelled", "",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-9","reason":"stop",`+relayMeta+`}}`); err != nil || code != http.StatusAccepted {
		t.Fatalf("the cancellation: %d %v", code, err)
	}
	waitTag(t, up.cancelled, "modern", "the upstream's call being cancelled")
	select {
	case <-ended:
	case <-time.After(relayEventWait):
		t.Fatalf("the cancelled call's request did not end within %s", relayEventWait)
	}
	var callAt, cancelAt = -1, -1
	for _, e := range proxy.Entries()[from:] {
		switch e.RPC {
		case "tools/call":
			callAt = e.Backend
		case "notifications/cancelled":
			cancelAt = e.Backend
		}
	}
	if callAt < 0 || cancelAt < 0 || callAt == cancelAt {
		t.Fatalf("the call ran on replica %d and its cancellation went to %d; want two different ones\n%s", callAt+1, cancelAt+1, logText(proxy.Entries()))
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

const relayMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// modernPost posts one 2026-07-28 request as the test's client and reads
// the answer whole.
func modernPost(ctx context.Context, url, method, tool, body string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, relayEventWait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+topoClientKey)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if tool != "" {
		req.Header.Set("Mcp-Name", tool)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// relayEventWait bounds waiting for an event of the test; the upstream's
// timeout is far longer, so a call ended before it was ended by the test.
const relayEventWait = 2 * time.Minute

// boundedCtx is the test's context for one request, ended after
// relayEventWait: a request that hangs fails the test, naming itself,
// instead of the whole test binary at its timeout.
func boundedCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), relayEventWait)
	t.Cleanup(cancel)
	return ctx
}

// waitTag waits, bounded, for tag on ch.
func waitTag(t *testing.T, ch <-chan string, tag, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), relayEventWait)
	defer cancel()
	for {
		select {
		case got := <-ch:
			if got == tag {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no %s within %s", what, relayEventWait)
		}
	}
}

// sessionRequest sends one request of legacy session sid as the test's
// client and returns its status.
func sessionRequest(t *testing.T, url, method, sid, body string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(boundedCtx(t), method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+topoClientKey)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
