package upstreamtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/internal/waittest"
)

// addRelayTools gives the test stdio server tools that use everything a
// server can send during a call: progress, log messages, sampling, roots,
// and a call that only ends when cancelled.
func addRelayTools(s *server.MCPServer) {
	text := func(s string) *mcpgo.CallToolResult { return mcpgo.NewToolResultText(s) }
	s.AddTool(mcpgo.NewTool("chatty"),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			var token mcpgo.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			// mcp-go's stdio server writes notifications from a goroutine
			// of their own, so one sent just before returning could follow
			// the response: the call returns once they are written.
			before, sent := notesWritten.Load(), int64(0)
			for i, level := range []mcpgo.LoggingLevel{mcpgo.LoggingLevelDebug, mcpgo.LoggingLevelInfo, mcpgo.LoggingLevelError} {
				_ = s.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationMessage), map[string]any{
					"level": level, "logger": "chatty", "data": "message " + string(level),
				})
				sent++
				if token != nil {
					_ = s.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress), map[string]any{
						"progressToken": token, "progress": i + 1, "total": 3,
					})
					sent++
				}
			}
			waittest.Poll(10*time.Second, func() bool { return notesWritten.Load() >= before+sent })
			return text("chatted"), nil
		})
	s.AddResource(mcpgo.NewResource("test://doc", "doc", mcpgo.WithMIMEType("text/plain")),
		func(context.Context, mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: "test://doc", MIMEType: "text/plain", Text: "doc"}}, nil
		})
	// touch announces a change of test://doc to its subscribers, or to
	// everyone when the server was never asked to subscribe (the gateway
	// must then keep it from sessions that did not subscribe).
	s.AddTool(mcpgo.NewTool("touch"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			s.SendNotificationToAllClients(mcpgo.MethodNotificationResourceUpdated, map[string]any{"uri": "test://doc"})
			return text("touched"), nil
		})
	// grow adds a prompt and a resource, which the server announces with
	// prompts/list_changed and resources/list_changed.
	s.AddTool(mcpgo.NewTool("grow"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			s.AddPrompt(mcpgo.NewPrompt("grown"), func(context.Context, mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
				return &mcpgo.GetPromptResult{Messages: []mcpgo.PromptMessage{{Role: mcpgo.RoleUser, Content: mcpgo.TextContent{Type: "text", Text: "grown"}}}}, nil
			})
			s.AddResource(mcpgo.NewResource("test://grown", "grown"), func(context.Context, mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
				return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: "test://grown", Text: "grown"}}, nil
			})
			return text("grown"), nil
		})
	s.AddTool(mcpgo.NewTool("ask", mcpgo.WithString("prompt")),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := s.RequestSampling(ctx, mcpgo.CreateMessageRequest{CreateMessageParams: mcpgo.CreateMessageParams{
				Messages:  []mcpgo.SamplingMessage{{Role: mcpgo.RoleUser, Content: mcpgo.TextContent{Type: "text", Text: req.GetString("prompt", "")}}},
				MaxTokens: 10,
			}})
			if err != nil {
				return mcpgo.NewToolResultError("sampling failed: " + err.Error()), nil
			}
			raw, _ := json.Marshal(res.Content)
			return text("answer " + string(raw)), nil
		})
	s.AddTool(mcpgo.NewTool("roots"),
		func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := s.RequestRoots(ctx, mcpgo.ListRootsRequest{})
			if err != nil {
				return mcpgo.NewToolResultError("roots failed: " + err.Error()), nil
			}
			raw, _ := json.Marshal(res.Roots)
			return text(string(raw)), nil
		})
	// hold stays in flight until release names its key (or the call is
	// cancelled), so that a test has a call of its own in flight while
	// others run, and ends it when it chooses; a progress notification, for
	// a caller that gave a token, says the call reached the server.
	s.AddTool(mcpgo.NewTool("hold", mcpgo.WithString("key")),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			released := holds.wait(req.GetString("key", ""))
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				_ = s.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress), map[string]any{
					"progressToken": req.Params.Meta.ProgressToken, "progress": 0,
				})
			}
			select {
			case <-released:
				return text("released"), nil
			case <-ctx.Done():
				return text("cancelled"), nil
			}
		})
	s.AddTool(mcpgo.NewTool("release", mcpgo.WithString("key")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			holds.release(req.GetString("key", ""))
			return text("released"), nil
		})
	// wait blocks until its call is cancelled, then writes "cancelled" to
	// the file named by marker, so a test can see the cancellation arrive;
	// marker+".started" says the call reached the server.
	s.AddTool(mcpgo.NewTool("wait", mcpgo.WithString("marker")),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			_ = os.WriteFile(req.GetString("marker", "")+".started", nil, 0o600)
			select {
			case <-ctx.Done():
				marker := req.GetString("marker", "")
				// Written whole, then renamed: a reader never sees it half done.
				_ = os.WriteFile(marker+".tmp", []byte("cancelled"), 0o600)
				_ = os.Rename(marker+".tmp", marker)
				return text("cancelled"), nil
			case <-time.After(30 * time.Second):
				return text("finished"), nil
			}
		})
}

// holds are the keys hold waits on, each released once by release.
var holds = &holdKeys{m: map[string]chan struct{}{}}

type holdKeys struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (h *holdKeys) of(key string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.m[key]
	if c == nil {
		c = make(chan struct{})
		h.m[key] = c
	}
	return c
}

func (h *holdKeys) wait(key string) <-chan struct{} { return h.of(key) }

func (h *holdKeys) release(key string) {
	c := h.of(key)
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-c:
	default:
		close(c)
	}
}

// notesWritten counts the notifications the test stdio server has written.
var notesWritten atomic.Int64

// notesCounter passes the stdio server's output on, counting notifications.
// mcp-go writes each message with one Write.
type notesCounter struct{ w io.Writer }

func (c notesCounter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	if bytes.Contains(b, []byte(`"method":"notifications/`)) {
		notesWritten.Add(1)
	}
	return n, err
}

// RawServerArg makes the test binary a stdio MCP server written by hand, for
// what mcp-go's server never does: withdrawing a request it made.
const RawServerArg = "toolgate-test-raw-server"

// runRawServer offers the tool withdraw: it asks the client for a sampling
// (id "srv-1"); the tool withdraw_now then withdraws the request with
// notifications/cancelled, and withdraw_answer answers the withdraw call. It also offers the resource test://raw
// and keeps count of subscriptions to it, which the tool subs reports.
func runRawServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	var mu sync.Mutex
	out := json.NewEncoder(os.Stdout)
	send := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		_ = out.Encode(v)
	}
	reply := func(id json.RawMessage, result any) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	text := func(s string) any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	}
	subscribed := 0                 // test://raw subscribes minus unsubscribes
	var withdrawing json.RawMessage // the withdraw call withdraw_answer answers
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			reply(m.ID, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{},
				"resources": map[string]any{"subscribe": true}},
				"serverInfo": map[string]any{"name": "raw-test", "version": "1"}})
		case "ping":
			reply(m.ID, map[string]any{})
		case "tools/list":
			reply(m.ID, map[string]any{"tools": []any{
				map[string]any{"name": "withdraw", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "subs", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "withdraw_now", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "withdraw_answer", "inputSchema": map[string]any{"type": "object"}},
			}})
		case "resources/list":
			reply(m.ID, map[string]any{"resources": []any{map[string]any{"uri": "test://raw", "name": "raw"}}})
		case "resources/subscribe":
			subscribed++
			reply(m.ID, map[string]any{})
		case "resources/unsubscribe":
			subscribed--
			reply(m.ID, map[string]any{})
		case "tools/call":
			if m.Params.Name == "subs" {
				reply(m.ID, text(fmt.Sprint(subscribed)))
				continue
			}
			switch m.Params.Name {
			case "withdraw_now":
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": "srv-1", "reason": "changed my mind"}})
				reply(m.ID, text("done"))
				continue
			case "withdraw_answer":
				reply(withdrawing, text("withdrawn"))
				reply(m.ID, text("done"))
				continue
			}
			withdrawing = m.ID
			send(map[string]any{"jsonrpc": "2.0", "id": "srv-1", "method": "sampling/createMessage",
				"params": map[string]any{"maxTokens": 5, "messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "never mind"}}}}})
		default:
			if len(m.ID) > 0 && m.Method != "" {
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			}
		}
	}
}
