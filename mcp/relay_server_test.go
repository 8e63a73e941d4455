package mcp

import (
	"context"
	"encoding/json"
	"os"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
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
			// of their own, so one sent just before returning can follow the
			// response; the pauses keep this server's order deterministic.
			for i, level := range []mcpgo.LoggingLevel{mcpgo.LoggingLevelDebug, mcpgo.LoggingLevelInfo, mcpgo.LoggingLevelError} {
				_ = s.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationMessage), map[string]any{
					"level": level, "logger": "chatty", "data": "message " + string(level),
				})
				if token != nil {
					_ = s.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress), map[string]any{
						"progressToken": token, "progress": i + 1, "total": 3,
					})
				}
				time.Sleep(20 * time.Millisecond)
			}
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
