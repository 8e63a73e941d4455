//go:build linux

package main

// Tool search (DS-1, DS-2, DS-3) on a real `toolgate serve` in front of
// upstreams serving real tool definitions (testdata/review/benign, through
// testdata/peers/benign-server.mjs as child processes), driven by the
// official TypeScript SDK client (a legacy session) and by an mcp-go
// client pinned to 2026-07-28, over real HTTP on loopback.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/waittest"
)

const discoveryPeerKey = "discovery-SECRET-dev-key-8f1e2d3c4b"

// discoveryPeerConfig: three upstreams of real definitions. github's reads
// and actions are named; linear needs a role dev lacks; a rule denies
// slack_post_message to everyone whatever the arguments; slack's server
// adds time.json's tools once MARKER exists and says its list changed.
// slack's and linear's names carry their product already: no prefix.
// Code searches wait for an operator; issue lists are rated 1/min.
const discoveryPeerConfig = `gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
  review: {mode: off}
  admin:
    listen: ${ADMIN_LISTEN}
    keys:
      - key: ${ADMIN_KEY}
        operator: alice
endpoints:
  - path: /mcp
    auth:
      apiKeys:
        - key: ${DEV_KEY}
          actor: {id: dev, roles: [MEMBER]}
    discovery:
      mode: search
      alwaysList: [github_get_issue, linear_getViewer]
upstreams:
  - name: github
    command: ${NODE}
    args: ["${PEERS}/benign-server.mjs", "${BENIGN}/github.json"]
    reads: ["get_*", "list_*", "search_*"]
    defaultKind: action
    timeout: 20s
    required: true
  - name: slack
    command: ${NODE}
    args: ["${PEERS}/benign-server.mjs", "${BENIGN}/slack.json", "${BENIGN}/time.json", "${MARKER}"]
    prefix: ""
    defaultKind: read
    timeout: 20s
    required: true
  - name: linear
    command: ${NODE}
    args: ["${PEERS}/benign-server.mjs", "${BENIGN}/linear.json"]
    prefix: ""
    defaultKind: read
    roles: [ADMIN]
    timeout: 20s
    required: true
policies:
  default: allow
  rules:
    - id: no-slack-posts
      when: tool.name == "slack_post_message"
      effect: deny
      reason: posting to Slack is off
    - id: ask-before-code-search
      when: tool.name == "github_search_code"
      effect: approve
      reason: code searches need an operator
limits:
  - id: issue-list-rate
    per: actor+tool
    match: tool.name == "github_list_issues"
    rate: 1/min
    burst: 1
`

// sdkLine is one line of sdk-driver.mjs: a result or an error with its
// JSON-RPC code.
type sdkLine struct {
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	} `json:"result"`
	Error string `json:"error"`
	Code  *int   `json:"code"`
}

func (d *sdkDriver) line(tool string, args any) sdkLine {
	d.t.Helper()
	d.send(tool, args)
	raw := d.next(sdkCallWait)
	var l sdkLine
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		d.t.Fatalf("sdk-driver: %q: %v", raw, err)
	}
	return l
}

// found are the names search_tools answers for query, best first; its
// text block must be its structuredContent.
func (d *sdkDriver) found(query string) []string {
	d.t.Helper()
	l := d.line("search_tools", map[string]any{"query": query})
	if l.Result == nil || l.Result.IsError || len(l.Result.Content) != 1 {
		d.t.Fatalf("search %q: %+v", query, l)
	}
	return searchResultNames(d.t, l.Result.Content[0].Text, l.Result.StructuredContent)
}

func searchResultNames(t *testing.T, text string, structured json.RawMessage) []string {
	t.Helper()
	var s, fromText struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(structured, &s); err != nil {
		t.Fatalf("structuredContent %s: %v", structured, err)
	}
	if err := json.Unmarshal([]byte(text), &fromText); err != nil || len(fromText.Tools) != len(s.Tools) {
		t.Fatalf("the text block is not the structuredContent: %s", text)
	}
	var names []string
	for _, tl := range s.Tools {
		if len(tl.InputSchema) == 0 {
			t.Errorf("%s found without its inputSchema", tl.Name)
		}
		names = append(names, tl.Name)
	}
	return names
}

// DS-1, DS-2, DS-3, QB-1: the SDK client sees the two meta-tools and the
// alwaysList tool it may call; finds an issue tool among the upstreams'
// 232 from a request in plain words; calls a read, and an action through
// preview and confirm inside arguments; never finds a tool hidden by role
// or by a policy, and call_tool on one answers exactly as on a name nobody
// has; a tool an upstream adds is found once its list_changed arrived; the
// audit names the inner tool and call_tool; policy test --via call_tool
// says the hidden tool is unknown there; an operator's approval and a
// rate limit hold for calls through call_tool. A 2026-07-28 client does the same
// without a session.
func TestDiscoveryServeSDK(t *testing.T) {
	dir := peers.Dir(t)
	benign, err := filepath.Abs(filepath.Join("..", "..", "testdata", "review", "benign"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	marker, store := filepath.Join(tmp, "more-tools"), filepath.Join(tmp, "toolgate.db")
	adminAddr := fmt.Sprintf("127.0.0.1:%d", serveFreePort(t))
	cfg := writeServeConfig(t, discoveryPeerConfig)
	env := map[string]string{
		"ADMIN_LISTEN": adminAddr, "ADMIN_KEY": topoAdminKey, "TOOLGATE_CONFIRM_SECRET": serveConfirmSecret,
		"DEV_KEY": discoveryPeerKey, "NODE": peers.Node(t), "PEERS": dir, "BENIGN": benign, "MARKER": marker,
		"TOOLGATE_GATEWAY_STORE": store,
	}
	g := startServe(t, cfg, env)
	url := g.base + "/mcp"
	d := startSDKDriver(t, url, discoveryPeerKey)

	if want := []string{"call_tool", "github_get_issue", "search_tools"}; !slices.Equal(d.ready.Tools, want) {
		t.Fatalf("tools/list: %v, want %v", d.ready.Tools, want)
	}

	// Search: the issue tool among hundreds, from plain words.
	if got := d.found("open a new bug report in our GitHub project"); len(got) == 0 || got[0] != "github_create_issue" {
		t.Errorf("search for a bug report: %v, want github_create_issue first", got)
	}
	// Hidden by a policy whatever the arguments, or by role: never found.
	for _, q := range []string{"post a message to a Slack channel", "slack post message", "create a Linear issue", "linear"} {
		for _, n := range d.found(q) {
			if n == "slack_post_message" || strings.HasPrefix(n, "linear_") {
				t.Errorf("search %q found the hidden %s", q, n)
			}
		}
	}

	// A read.
	read := d.line("call_tool", map[string]any{"name": "github_get_issue", "arguments": map[string]any{"owner": "o", "repo": "r", "issue_number": 7}})
	if read.Result == nil || read.Result.IsError || !strings.Contains(read.Result.Content[0].Text, `get_issue ran with {"issue_number":7,"owner":"o","repo":"r"}`) {
		t.Fatalf("call_tool github_get_issue: %+v", read)
	}
	// An action: a preview, then the confirmation inside arguments.
	args := map[string]any{"owner": "o", "repo": "r", "title": "crash on start"}
	preview := d.line("call_tool", map[string]any{"name": "github_create_issue", "arguments": args})
	var p struct {
		ConfirmToken string `json:"confirmToken"`
	}
	if preview.Result == nil || preview.Result.IsError || json.Unmarshal(preview.Result.StructuredContent, &p) != nil || p.ConfirmToken == "" {
		t.Fatalf("call_tool github_create_issue: want a preview, got %+v", preview)
	}
	args["confirm"], args["confirmToken"] = true, p.ConfirmToken
	done := d.line("call_tool", map[string]any{"name": "github_create_issue", "arguments": args})
	if done.Result == nil || done.Result.IsError || !strings.Contains(done.Result.Content[0].Text, `create_issue ran with {"owner":"o","repo":"r","title":"crash on start"}`) {
		t.Fatalf("the confirmed call: %+v", done)
	}

	// Hidden tools answer as a name nobody has.
	answer := func(name string) string {
		l := d.line("call_tool", map[string]any{"name": name, "arguments": map[string]any{}})
		if l.Result != nil || l.Code == nil {
			t.Fatalf("call_tool %s: %+v, want an error", name, l)
		}
		return fmt.Sprint(*l.Code, " ", strings.ReplaceAll(l.Error, name, "NAME"))
	}
	want := answer("no_such_tool")
	for _, name := range []string{"slack_post_message", "linear_createIssue", "linear_getViewer"} {
		if got := answer(name); got != want {
			t.Errorf("call_tool %s: %q, want %q as for an unknown tool", name, got, want)
		}
	}

	// The upstream's list changes: the next searches find the new tool.
	if got := d.found("convert a time from one timezone to another"); slices.Contains(got, "convert_time") {
		t.Fatalf("found before it exists: %v", got)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !waittest.Poll(30*time.Second, func() bool {
		got := d.found("convert a time from one timezone to another")
		return len(got) > 0 && got[0] == "convert_time"
	}) {
		t.Fatal("the tool the upstream added was never found")
	}

	// The audit names the inner tool and call_tool.
	var recs []struct{ Tool, Outcome, Via string }
	if !waittest.Poll(30*time.Second, func() bool {
		code, out, errOut := runTool(t, env, "", "audit", "--config", cfg, "--json")
		if code != 0 {
			t.Fatalf("toolgate audit: %d %s", code, errOut)
		}
		recs = nil
		_ = json.Unmarshal([]byte(out), &recs)
		return len(recs) >= 4
	}) {
		t.Fatalf("audit records: %+v", recs)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Tool+" "+r.Outcome+" "+r.Via)
	}
	if want := []string{"github_get_issue ok call_tool", "github_create_issue preview call_tool", "github_create_issue intent call_tool", "github_create_issue ok call_tool"}; !slices.Equal(got, want) {
		t.Errorf("audit: %q, want %q", got, want)
	}

	// The operator's check: through call_tool the hidden tool is unknown.
	code, out, errOut := runTool(t, map[string]string{"TOOLGATE_ADMIN_KEY": topoAdminKey}, "", "policy", "test", "--attach", "http://"+adminAddr,
		"--actor", "dev", "--tool", "slack_post_message", "--args", `{"channel_id":"C1","text":"hi"}`, "--via", "call_tool", "--json")
	var trial struct{ Rule, Effect, Reason, Via string }
	if code != 0 || json.Unmarshal([]byte(out), &trial) != nil || trial.Effect != "deny" || trial.Reason != "unknown tool: slack_post_message" || trial.Via != "call_tool" {
		t.Errorf("policy test --via call_tool: %d %s %s", code, out, errOut)
	}

	// An operator's approval and a rate limit hold through call_tool.
	d.send("call_tool", map[string]any{"name": "github_search_code", "arguments": map[string]any{"q": "parser"}})
	id := waitTopoPending(t, "http://"+adminAddr)
	if code, out, errOut := runTool(t, map[string]string{"TOOLGATE_ADMIN_KEY": topoAdminKey}, "", "approve", id, "--attach", "http://"+adminAddr); code != 0 {
		t.Fatalf("toolgate approve: exit %d\n%s%s", code, out, errOut)
	}
	var approved sdkLine
	if err := json.Unmarshal([]byte(d.next(sdkCallWait)), &approved); err != nil || approved.Result == nil || approved.Result.IsError ||
		!strings.Contains(approved.Result.Content[0].Text, `search_code ran with {"q":"parser"}`) {
		t.Fatalf("the approved code search: %+v %v", approved, err)
	}
	list := map[string]any{"name": "github_list_issues", "arguments": map[string]any{"owner": "o", "repo": "r"}}
	if first := d.line("call_tool", list); first.Result == nil || first.Result.IsError {
		t.Fatalf("the first issue list: %+v", first)
	}
	if second := d.line("call_tool", list); second.Result == nil || !second.Result.IsError ||
		!strings.Contains(second.Result.Content[0].Text, "rate limit reached for issue-list-rate") {
		t.Fatalf("the second issue list within a minute: %+v", second)
	}

	t.Run("2026-07-28", func(t *testing.T) { discoveryModern(t, url) })
}

// discoveryModern: a 2026-07-28 client lists, searches, calls through
// call_tool and is refused a hidden tool as unknown, with no session.
func discoveryModern(t *testing.T, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), servePeerRunWait)
	defer cancel()
	c := startModernClient(t, ctx, url, discoveryPeerKey)
	if res, err := c.Initialize(ctx, modernInitialize()); err != nil || res.ProtocolVersion != mcpgo.ProtocolVersion20260728 || c.GetSessionId() != "" {
		t.Fatalf("initialize: %v %+v", err, res)
	}
	list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if want := []string{"call_tool", "github_get_issue", "search_tools"}; !slices.Equal(names, want) {
		t.Fatalf("tools/list: %v, want %v", names, want)
	}
	call := func(name string, args map[string]any) (*mcpgo.CallToolResult, error) {
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		return c.CallTool(ctx, req)
	}
	res, err := call("search_tools", map[string]any{"query": "list the channels in our Slack workspace", "limit": 3})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("search: %v %+v", err, res)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	text, _ := res.Content[0].(mcpgo.TextContent)
	if got := searchResultNames(t, text.Text, structured); len(got) == 0 || len(got) > 3 || got[0] != "slack_list_channels" {
		t.Errorf("search: %v, want slack_list_channels first, at most 3", got)
	}
	res, err = call("call_tool", map[string]any{"name": "slack_list_channels", "arguments": map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("call_tool: %v %+v", err, res)
	}
	if text, _ := res.Content[0].(mcpgo.TextContent); !strings.HasPrefix(text.Text, "slack_list_channels ran with") {
		t.Errorf("call_tool answered %+v", res.Content)
	}
	_, hidden := call("call_tool", map[string]any{"name": "linear_createIssue", "arguments": map[string]any{}})
	_, unknown := call("call_tool", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}})
	if hidden == nil || unknown == nil || strings.ReplaceAll(hidden.Error(), "linear_createIssue", "X") != strings.ReplaceAll(unknown.Error(), "no_such_tool", "X") {
		t.Errorf("hidden: %v; unknown: %v", hidden, unknown)
	}
}
