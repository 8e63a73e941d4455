// Package upstreamtest holds the MCP servers the tests of the upstream
// side connect to: mcp-go's stdio server with the tools the relay tests
// use, one written by hand for what mcp-go never sends, and servers of the
// stateless revision (2026-07-28) only, over stdio and Streamable HTTP.
// A test binary becomes a stdio server when its first argument names one
// (Serve), so that the tests start it as a real child process; the tests
// of package mcp/upstream and of package mcp (an endpoint in front of a
// real upstream) share them.
package upstreamtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// StdioServerArg, as the first argument, makes the test binary an MCP stdio
// server: the stdio tests start it as a real child process. An argument rather
// than an environment variable, because IM-3 tests start it with the minimal
// environment.
const StdioServerArg = "toolgate-test-stdio-server"

// Serve runs the test server the test binary's first argument names, if
// it names one, and reports whether it did: a TestMain calls it first and
// returns when it did.
func Serve() bool {
	if len(os.Args) < 2 {
		return false
	}
	switch os.Args[1] {
	case StdioServerArg:
		runStdioServer()
	case ModernStdioServerArg:
		runModernStdioServer()
	case RawServerArg:
		runRawServer()
	default:
		return false
	}
	return true
}

// runStdioServer is mcp-go's stdio server with the tools the stdio and
// relay tests call.
func runStdioServer() {
	fmt.Fprintln(os.Stderr, "test stdio server starting")
	s := server.NewMCPServer("stdio-test", "1.2.3", server.WithToolCapabilities(true), server.WithLogging(),
		server.WithResourceCapabilities(true, true), server.WithPromptCapabilities(true))
	s.EnableSampling()
	text := func(s string) *mcpgo.CallToolResult { return mcpgo.NewToolResultText(s) }
	addRelayTools(s)
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return text(req.GetString("text", "")), nil
		})
	s.AddTool(mcpgo.NewTool("print_env"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return text(strings.Join(os.Environ(), "\n")), nil
		})
	s.AddTool(mcpgo.NewTool("cwd"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			wd, err := os.Getwd()
			if err != nil {
				return nil, err
			}
			return text(wd), nil
		})
	s.AddTool(mcpgo.NewTool("spawn_grandchild"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			go func() { _ = cmd.Wait() }()
			return text(fmt.Sprint(cmd.Process.Pid)), nil
		})
	s.AddTool(mcpgo.NewTool("crash"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(mcpgo.NewTool("stderr", mcpgo.WithNumber("n")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			n := int(req.GetFloat("n", 0))
			os.Stderr.Write(bytes.Repeat([]byte("x"), n))
			os.Stderr.WriteString("END-OF-STDERR\n")
			return text("ok"), nil
		})
	// As server.ServeStdio, with stdout counted for chatty.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := server.NewStdioServer(s).Listen(ctx, os.Stdin, notesCounter{os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

// TrickySchema has what mcp-go's typed client loses: $schema, $defs, anyOf,
// x-* keys, a number beyond float64 precision, additionalProperties:false.
const TrickySchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {"id": {"type": "string", "pattern": "^[a-z]+$"}},
  "properties": {
    "id": {"$ref": "#/$defs/id"},
    "n": {"anyOf": [{"type": "integer", "maximum": 12345678901234567890}, {"type": "null"}]},
    "x": {"x-custom": {"keep": ["me", 1.50]}}
  },
  "required": ["id"],
  "additionalProperties": false
}`
