//go:build linux

package main

// `toolgate serve` against real MCP peers from npm (testdata/peers): the
// official TypeScript SDK client, the Inspector's CLI and the conformance
// suite's server scenarios (QB-1).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/mcp/serve"
)

const (
	servePeerRunWait     = 60 * time.Second // one client run
	serveConformanceWait = 2 * time.Minute  // one conformance scenario
)

// runServePeer runs a node peer to completion in dir (bounded), in a process
// group of its own, with env added, and returns its exit status, stdout and
// stderr. Its output is captured, never streamed.
func runServePeer(t *testing.T, dir string, wait time.Duration, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, peers.Node(t), args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Start()
	if err != nil {
		t.Fatal(err)
	}
	leader := holdLeader(cmd.Process.Pid)
	t.Cleanup(func() { leader.killGroup(); leader.release() })
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("node %q still ran after %v\nstdout: %s\nstderr: %s", args, wait, out.String(), errOut.String())
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("node %q: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// serveSDKTool is a tool as the SDK client reports it.
type serveSDKTool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations struct {
		ReadOnlyHint *bool `json:"readOnlyHint"`
	} `json:"annotations"`
	Meta map[string]any `json:"_meta"`
}

// serveSDKRun is what testdata/peers/sdk-client.mjs prints.
type serveSDKRun struct {
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Instructions    string         `json:"instructions"`
	ProtocolVersion string         `json:"protocolVersion"`
	SessionID       string         `json:"sessionId"`
	Tools           []serveSDKTool `json:"tools"`
	Call            *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"call"`
	Terminated bool   `json:"terminated"`
	Error      string `json:"error"`
	// Code is the failure's code: the HTTP status of a refused request, the
	// JSON-RPC code of an error response.
	Code any `json:"code"`
}

// runServeSDKClient runs sdk-client.mjs against url with token; args are the
// tool, its JSON arguments and --terminate.
func runServeSDKClient(t *testing.T, url, token string, args ...string) (serveSDKRun, int) {
	t.Helper()
	dir := peers.Dir(t)
	code, stdout, stderr := runServePeer(t, dir, servePeerRunWait, map[string]string{"SDK_CLIENT_TOKEN": token},
		append([]string{filepath.Join(dir, "sdk-client.mjs"), url}, args...)...)
	var r serveSDKRun
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("sdk-client (exit %d) printed no result: %v\nstdout: %s\nstderr: %s", code, err, stdout, stderr)
	}
	return r, code
}

// checkServeSDKTools asserts the listed tools by name, that every one carries
// its source in _meta and its verbatim schema, and that the one action tool
// is served behind the confirm gate (CF-1).
func checkServeSDKTools(t *testing.T, tools []serveSDKTool, want []string) {
	t.Helper()
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		source, _, _ := strings.Cut(tool.Name, "_")
		if got := tool.Meta[serve.SourceMetaKey]; got != source {
			t.Errorf("%s: _meta[%q] = %v, want %q", tool.Name, serve.SourceMetaKey, got, source)
		}
		var schema struct {
			Type       string `json:"type"`
			Properties map[string]struct {
				MinLength *int `json:"minLength"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: inputSchema %s (%v)", tool.Name, tool.InputSchema, err)
		}
		_, gated := schema.Properties["confirmToken"]
		if ro := tool.Annotations.ReadOnlyHint; (ro != nil && *ro) == gated {
			t.Errorf("%s: readOnlyHint %v but confirm fields %v: reads are served as they are, actions behind the gate", tool.Name, ro, gated)
		}
		// The upstream's schema, constraints included, is served verbatim.
		if q := schema.Properties["query"]; tool.Name == "notes_search" && (q.MinLength == nil || *q.MinLength != 1) {
			t.Errorf("notes_search's schema lost its constraints: %s", tool.InputSchema)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("tools %q, want %q", names, want)
	}
}

var serveMCPTools = []string{"echo_echo", "notes_create_note", "notes_list_notes", "notes_search", "notes_side_effects"}

// SV-1, AU-1, IM-16, QB-1: the official TypeScript SDK client, with the API
// key as its bearer, initializes, lists the tools (prefixed, source in
// _meta; notes_create_note, an action, behind the confirm gate), calls
// notes_search, and ends its session with DELETE (SV-2), after which the
// session id answers 404.
func TestServeSDKClientAPIKeySV1(t *testing.T) {
	g, _ := startServeYAML(t, nil)
	url := g.base + "/mcp"
	r, code := runServeSDKClient(t, url, serveGatewayKey, "notes_search", `{"query":"toolgate"}`, "--terminate")
	if code != 0 || r.Error != "" {
		t.Fatalf("sdk-client: exit %d: %s", code, r.Error)
	}
	if r.Server.Name != "toolgate serve" || r.Server.Version != "1.0.0" || r.Instructions != "Notes and echo, behind an API key or an OAuth token." {
		t.Errorf("server %+v, instructions %q", r.Server, r.Instructions)
	}
	// A stateful endpoint offers the revisions that have sessions.
	if !slices.Contains(mcpgo.LegacyProtocolVersions(), r.ProtocolVersion) || r.SessionID == "" {
		t.Errorf("protocol %q (offered: %q), session %q", r.ProtocolVersion, mcpgo.LegacyProtocolVersions(), r.SessionID)
	}
	t.Logf("SDK client negotiated %s", r.ProtocolVersion)
	checkServeSDKTools(t, r.Tools, serveMCPTools)
	if r.Call == nil || r.Call.IsError || len(r.Call.Content) != 1 || r.Call.Content[0].Text != "1: Welcome to toolgate." {
		t.Errorf("notes_search: %+v", r.Call)
	}
	if !r.Terminated {
		t.Error("the SDK did not end its session")
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if x := serveRaw(t, serveOn(url, serveGatewayKey, r.SessionID), list); x.Status != 404 {
		t.Errorf("the SDK's ended session: HTTP %d, want 404: %s", x.Status, x.Body)
	}
}

// AU-1, SV-3, SV-4, SV-5: the SDK client with OAuth access tokens from a
// real OpenID provider. On /mcp (audience = its resource URL) it sees every
// read tool and calls echo_echo; on /admin, whose allow-list is notes_*, it
// sees only the notes tools, and echo_echo answers as an unknown tool does; the
// /mcp token is refused by /admin.
func TestServeSDKClientOAuthAU1(t *testing.T) {
	g, p := startServeYAML(t, nil)
	mcpURL, adminURL := g.base+"/mcp", g.base+"/admin"

	r, code := runServeSDKClient(t, mcpURL, serveToken(t, p, mcpURL, "alice"), "echo_echo", `{"message":"hello over oauth"}`)
	if code != 0 || r.Error != "" {
		t.Fatalf("/mcp: exit %d: %s", code, r.Error)
	}
	checkServeSDKTools(t, r.Tools, serveMCPTools)
	if r.Call == nil || r.Call.IsError || len(r.Call.Content) != 1 || r.Call.Content[0].Text != "hello over oauth" {
		t.Errorf("/mcp echo_echo: %+v", r.Call)
	}

	// echo_echo, off /admin's allow-list, answers exactly as a tool that
	// does not exist anywhere.
	adminToken := serveToken(t, p, adminURL, "alice")
	r, code = runServeSDKClient(t, adminURL, adminToken, "echo_echo", `{"message":"not here"}`)
	unknown, _ := runServeSDKClient(t, adminURL, adminToken, "no_such_tool", `{"message":"not here"}`)
	if r.Server.Name != "toolgate admin" {
		t.Errorf("/admin server %+v", r.Server)
	}
	checkServeSDKTools(t, r.Tools, []string{"notes_create_note", "notes_list_notes", "notes_search", "notes_side_effects"})
	if code != 1 || r.Call != nil || !strings.Contains(r.Error, "unknown tool: echo_echo") ||
		r.Error != strings.ReplaceAll(unknown.Error, "no_such_tool", "echo_echo") || r.Code != unknown.Code {
		t.Errorf("/admin echo_echo: exit %d, %v %q; an unknown tool: %v %q", code, r.Code, r.Error, unknown.Code, unknown.Error)
	}

	r, code = runServeSDKClient(t, adminURL, serveToken(t, p, mcpURL, "alice"))
	if code != 1 || r.Code != float64(401) || !strings.Contains(r.Error, `"error":"invalid_token"`) {
		t.Errorf("/mcp token on /admin: exit %d, code %v, error %q; want a 401 invalid_token", code, r.Code, r.Error)
	}
}

// QB-1: the Inspector's CLI lists tools through toolgate with the API key
// sent by its --header option, and calls echo_echo.
func TestServeInspectorCLI(t *testing.T) {
	g, _ := startServeYAML(t, nil)
	dir := peers.Dir(t)
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector-cli", "build", "cli.js")
	// The CLI reads ../package.json relative to its working directory.
	cwd := filepath.Join(dir, "node_modules")
	base := []string{cli, "--cli", g.base + "/mcp", "--transport", "http", "--header", "Authorization: Bearer " + serveGatewayKey}

	code, stdout, stderr := runServePeer(t, cwd, servePeerRunWait, nil, append(base, "--method", "tools/list")...)
	var list struct {
		Tools []serveSDKTool `json:"tools"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); code != 0 || err != nil {
		t.Fatalf("inspector-cli tools/list: exit %d, %v\nstdout: %s\nstderr: %s", code, err, stdout, stderr)
	}
	checkServeSDKTools(t, list.Tools, serveMCPTools)

	code, stdout, stderr = runServePeer(t, cwd, servePeerRunWait, nil,
		append(base, "--method", "tools/call", "--tool-name", "echo_echo", "--tool-arg", "message=from the inspector")...)
	var call struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal([]byte(stdout), &call); code != 0 || err != nil || call.IsError || len(call.Content) != 1 || call.Content[0].Text != "from the inspector" {
		t.Fatalf("inspector-cli tools/call: exit %d, %v\nstdout: %s\nstderr: %s", code, err, stdout, stderr)
	}

	// Without the header it is refused.
	code, stdout, stderr = runServePeer(t, cwd, servePeerRunWait, nil, cli, "--cli", g.base+"/mcp", "--transport", "http", "--method", "tools/list")
	if code == 0 || !strings.Contains(stdout+stderr, "a bearer token is required") {
		t.Errorf("inspector-cli without a token: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

// serveConformanceConfig is an open-mode endpoint (the suite sends no
// token) over the notes and echo demo upstreams.
const serveConformanceConfig = `gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
endpoints:
  - path: /mcp
    name: toolgate conformance
    actor: {id: conformance, roles: [ADMIN]}   # open mode (AU-7), loopback only
upstreams:
  - name: notes
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, notes]
    required: true
  - name: echo
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, echo]
    required: true
`

var (
	serveANSI    = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	serveSummary = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings`)
)

// SV-1, SV-2, QB-1: the conformance suite's server scenarios that need no
// fixture tools pass against `toolgate serve`.
func TestServeConformanceServer(t *testing.T) {
	dir := peers.Dir(t)
	pkg := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance")
	raw, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Bin map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Bin["conformance"] == "" {
		t.Fatalf("%s/package.json names no conformance bin (%v)", pkg, err)
	}
	conformance := []string{"--import", filepath.Join(dir, "register-hook.mjs"), filepath.Join(pkg, meta.Bin["conformance"])}

	g := startServe(t, writeServeConfig(t, serveConformanceConfig), map[string]string{"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret})
	for _, scenario := range []string{"server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"} {
		t.Run(scenario, func(t *testing.T) {
			code, stdout, stderr := runServePeer(t, t.TempDir(), serveConformanceWait, nil,
				append(conformance, "server", "--url", g.base+"/mcp", "--scenario", scenario)...)
			text := serveANSI.ReplaceAllString(stdout+stderr, "")
			m := serveSummary.FindStringSubmatch(text)
			if code != 0 || m == nil || m[1] != m[2] || m[1] == "0" || m[3] != "0" || m[4] != "0" {
				t.Fatalf("conformance %s: exit %d\n%s", scenario, code, serveConformanceLog(text))
			}
			t.Logf("conformance %s: %s of %s checks ok", scenario, m[1], m[2])
		})
	}
}

// serveConformanceLog is the suite's output fit for t.Log: the lines that
// read like a test count ("Total: N passed, N failed", "Passed: N/M") are
// reworded so nothing mistakes them for this run's count.
func serveConformanceLog(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 80 {
		lines = lines[len(lines)-80:]
	}
	for i, l := range lines {
		l = strings.ReplaceAll(l, " passed,", " ok,")
		l = strings.ReplaceAll(l, "Passed:", "Checks ok:")
		lines[i] = fmt.Sprintf("  | %s", l)
	}
	return strings.Join(lines, "\n")
}
