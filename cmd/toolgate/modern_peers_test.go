//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/internal/lab/peers"
)

// SV-1, SV-2, QB-1: one endpoint of a real `toolgate serve` with its
// default (stateful) config serves both eras at once: the official
// TypeScript SDK client opens a legacy session and calls, while an mcp-go
// client pinned to 2026-07-28 — and failing on any other revision —
// discovers the server, lists and calls, with no session.
func TestServeBothErasAtOnce(t *testing.T) {
	g, _ := startServeYAML(t, nil)
	url := g.base + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), servePeerRunWait)
	defer cancel()

	// The SDK client runs while the modern client works.
	dir := peers.Dir(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, peers.Node(t), filepath.Join(dir, "sdk-client.mjs"), url, "notes_search", `{"query":"toolgate"}`)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SDK_CLIENT_TOKEN="+serveGatewayKey)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	leader := holdLeader(cmd.Process.Pid)
	t.Cleanup(func() { leader.killGroup(); leader.release() })

	c := startModernClient(t, ctx, url, serveGatewayKey)
	res, err := c.Initialize(ctx, modernInitialize())
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != mcpgo.ProtocolVersion20260728 || c.GetSessionId() != "" {
		t.Fatalf("negotiated %q with session %q, want exactly %s and none", res.ProtocolVersion, c.GetSessionId(), mcpgo.ProtocolVersion20260728)
	}
	list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, serveMCPTools) {
		t.Errorf("modern client listed %q, want %q", names, serveMCPTools)
	}
	for range 5 {
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "notes_search", map[string]any{"query": "toolgate"}
		got, err := c.CallTool(ctx, req)
		if err != nil || got.IsError || len(got.Content) != 1 {
			t.Fatalf("modern call: %v %+v", err, got)
		}
		if text, _ := got.Content[0].(mcpgo.TextContent); text.Text != "1: Welcome to toolgate." {
			t.Errorf("modern call answered %+v", got.Content)
		}
	}

	waitErr := cmd.Wait()
	var out struct{ run serveSDKRun }
	if err := json.Unmarshal(stdout.Bytes(), &out.run); err != nil || waitErr != nil || out.run.Error != "" {
		t.Fatalf("sdk-client: %v %v\nstdout: %s\nstderr: %s", waitErr, err, stdout.String(), stderr.String())
	}
	if !slices.Contains(mcpgo.LegacyProtocolVersions(), out.run.ProtocolVersion) || out.run.SessionID == "" {
		t.Errorf("the SDK client: protocol %q, session %q: want a legacy session", out.run.ProtocolVersion, out.run.SessionID)
	}
	if out.run.Call == nil || out.run.Call.IsError || len(out.run.Call.Content) != 1 || !strings.Contains(out.run.Call.Content[0].Text, "Welcome to toolgate.") {
		t.Errorf("the SDK client's call: %+v", out.run.Call)
	}
}

// startModernClient starts an mcp-go client pinned to 2026-07-28 on url,
// sending key as its bearer token; it is closed when the test ends.
func startModernClient(t *testing.T, ctx context.Context, url, key string) *client.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	st, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: tr}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(st, client.WithProtocolVersion(mcpgo.ProtocolVersion20260728))
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// modernInitialize is the initialize request of a 2026-07-28 client.
func modernInitialize() mcpgo.InitializeRequest {
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.ProtocolVersion20260728
	init.Params.ClientInfo = mcpgo.Implementation{Name: "modern-peer", Version: "1"}
	return init
}
