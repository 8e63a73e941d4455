//go:build linux

package main

// Transparency: everything an upstream MCP server offers passes
// through `toolgate serve` — progress, logging, sampling, elicitation,
// every content kind, resources (subscriptions included), prompts and
// completion. Black-box: mcp-go's own conformance fixture server
// (github.com/mark3labs/mcp-go/examples/conformance, the server the official
// conformance suite is run against) is built and started on 127.0.0.1, a
// real `toolgate serve` is put in front of it, and mcp-go's Go client (or raw
// JSON-RPC over HTTP, where whole results are compared) talks to both. Where
// a result is compared, the direct answer of the fixture is the reference.
//
// The fixture's own HTTP server now and then drops the last notification a
// tool sends right before returning (its notification forwarder races the
// final response; mcp-go v1.2.1), so the progress and logging tests repeat
// the call until one run delivers all three, and hold every run to the same
// rules otherwise. testdata/peers/conformance.sh runs the suite itself.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/waittest"
)

const (
	trTestWait   = 90 * time.Second       // one whole test's exchanges
	trCallWait   = 20 * time.Second       // one request
	trStreamWait = 10 * time.Second       // a standalone GET stream to open
	trSettle     = 300 * time.Millisecond // for stray notifications to show up
	trAttempts   = 15                     // runs of a tool whose last notification the fixture may drop
	trFixturePkg = "github.com/mark3labs/mcp-go/examples/conformance"
	trProtocol   = mcpgo.ProtocolVersion20251125 // the newest revision with sessions
)

var (
	trBuildOnce sync.Once
	trBuilt     string
	trBuildErr  error
)

// trFixtureBinary builds mcp-go's conformance fixture once per test binary,
// next to the toolgate binary (TestMain removes that directory).
func trFixtureBinary(t *testing.T) string {
	t.Helper()
	dir := filepath.Dir(toolgateBinary(t))
	trBuildOnce.Do(func() {
		bin := filepath.Join(dir, "conformance-fixture")
		out, err := exec.Command("go", "build", "-o", bin, trFixturePkg).CombinedOutput()
		if err != nil {
			trBuildErr = fmt.Errorf("go build %s: %v\n%s", trFixturePkg, err, out)
			return
		}
		trBuilt = bin
	})
	if trBuildErr != nil {
		t.Fatal(trBuildErr)
	}
	return trBuilt
}

// trServers starts the fixture on a loopback port and `toolgate serve` in
// front of it (open mode, the fixture as its only upstream, unprefixed, every
// tool a read), and returns the fixture's and the gateway's MCP URLs. Both
// are killed at cleanup.
func trServers(t *testing.T) (direct, via string) {
	t.Helper()
	bin := trFixtureBinary(t)
	port := peers.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin)
	cmd.Env = append(cmd.Environ(), "CONFORMANCE_ADDR="+addr)
	out := &serveLog{}
	cmd.Stdout, cmd.Stderr = out, out
	fixture := peers.Start(t, cmd)
	hc := &http.Client{Timeout: 2 * time.Second}
	waittest.Succeeds(t, serveBootWait, "the conformance fixture to answer /health", func() error {
		resp, err := hc.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if fixture.Exited() {
			t.Fatalf("the conformance fixture exited: %v\n%s", fixture.Err(), out)
		}
		return fmt.Errorf("%v\n%s", err, out)
	})
	direct = "http://" + addr + "/mcp"
	cfg := writeServeConfig(t, fmt.Sprintf(`endpoints:
  - path: /mcp
    actor: {id: transparency, roles: [MEMBER]}   # open mode, loopback only
upstreams:
  - name: conformance
    url: %s
    transport: http
    prefix: ""
    defaultKind: read
    required: true
`, direct))
	g := startServe(t, cfg, nil)
	return direct, g.base + "/mcp"
}

// trClient is one mcp-go client session and what it received.
type trClient struct {
	*client.Client
	mu     sync.Mutex
	notes  []mcpgo.JSONRPCNotification
	stream chan struct{} // closed once a standalone GET stream is open
	wake   chan struct{} // signalled (never blocking) on every notification
}

// trConnect opens a session on url with mcp-go's Streamable HTTP client on
// the 2025-11-25 revision (sessions, logging/setLevel, server-to-client
// requests), recording every notification. With listen it also keeps the
// standalone GET stream open, and waits (bounded) until it is.
func trConnect(t *testing.T, ctx context.Context, url string, listen bool, opts ...client.ClientOption) *trClient {
	t.Helper()
	c := &trClient{stream: make(chan struct{}), wake: make(chan struct{}, 1)}
	var once sync.Once
	hc := &http.Client{Transport: trStreamSignal{next: http.DefaultTransport, opened: func() { once.Do(func() { close(c.stream) }) }}}
	topts := []transport.StreamableHTTPCOption{
		transport.WithHTTPBasicClient(hc),
		transport.WithHTTPLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}
	if listen {
		topts = append(topts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	c.Client = client.NewClient(tr, append([]client.ClientOption{client.WithProtocolVersion(trProtocol)}, opts...)...)
	t.Cleanup(func() { _ = c.Close() })
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.notes = append(c.notes, n)
		select {
		case c.wake <- struct{}{}:
		default:
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Fatalf("%s: start: %v", url, err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = trProtocol
	init.Params.ClientInfo = mcpgo.Implementation{Name: "toolgate-transparency-test", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("%s: initialize: %v", url, err)
	}
	if c.GetSessionId() == "" {
		t.Fatalf("%s: no session id after initialize", url)
	}
	if listen {
		select {
		case <-c.stream:
		case <-time.After(trStreamWait):
			t.Fatalf("%s: the standalone GET stream did not open within %v", url, trStreamWait)
		}
	}
	return c
}

// trStreamSignal calls opened when a GET answers 200 with an event stream:
// the client's standalone stream is connected.
type trStreamSignal struct {
	next   http.RoundTripper
	opened func()
}

func (s trStreamSignal) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && resp.StatusCode == http.StatusOK &&
		strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		s.opened()
	}
	return resp, err
}

// all returns every notification so far, in order.
func (c *trClient) all() []mcpgo.JSONRPCNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]mcpgo.JSONRPCNotification(nil), c.notes...)
}

// received returns the notifications of this method so far, in order.
func (c *trClient) received(method string) []mcpgo.JSONRPCNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []mcpgo.JSONRPCNotification
	for _, n := range c.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// call runs a tool and returns its first text block; a JSON-RPC error or a
// result without text fails the test.
func (c *trClient) call(t *testing.T, ctx context.Context, name string, args map[string]any, meta *mcpgo.Meta) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, trCallWait)
	defer cancel()
	if args == nil {
		// As the conformance suite does. (Whether a call without
		// "arguments" passes through is another question.)
		args = map[string]any{}
	}
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = meta
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return trText(t, name, res)
}

func trText(t *testing.T, name string, res *mcpgo.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("tools/call %s: no content (isError %v)", name, res.IsError)
	}
	text, ok := res.Content[0].(mcpgo.TextContent)
	if !ok {
		t.Fatalf("tools/call %s: first block %T, want text", name, res.Content[0])
	}
	if res.IsError {
		t.Errorf("tools/call %s: isError: %s", name, text.Text)
	}
	return text.Text
}

func trCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), trTestWait)
	t.Cleanup(cancel)
	return ctx
}

// trJSON is v as JSON, decoded back into plain values: what a peer sees.
func trJSON(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func trShow(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// trProgress is one progress notification as the client saw it.
type trProgress struct {
	Token    any
	Progress float64
	Total    float64
}

func (c *trClient) progress() []trProgress {
	var out []trProgress
	for _, n := range c.received(string(mcpgo.MethodNotificationProgress)) {
		f := n.Params.AdditionalFields
		p, _ := f["progress"].(float64)
		total, _ := f["total"].(float64)
		out = append(out, trProgress{Token: f["progressToken"], Progress: p, Total: total})
	}
	return out
}

// Transparency, progress. Two sessions call test_tool_with_progress at once, one
// with a string progress token, one with an integer one; each receives the
// fixture's notifications 0, 50, 100 (of 100) with its own token, type
// included, in order, before the tool's result, and nothing with another
// session's token. Every run is held to that (a prefix of the three, none
// after the result); at least one run per session delivers all three.
// Covers transparency: progress.
func TestTransparencyProgress(t *testing.T) {
	ctx := trCtx(t)
	_, via := trServers(t)
	type side struct {
		c        *trClient
		token    any
		complete bool
	}
	sides := []*side{
		{c: trConnect(t, ctx, via, true), token: "tg-progress-" + strconv.FormatInt(time.Now().UnixNano(), 36)},
		{c: trConnect(t, ctx, via, true), token: 4242},
	}
	want := []float64{0, 50, 100}
	for attempt := 1; attempt <= trAttempts && !(sides[0].complete && sides[1].complete); attempt++ {
		type outcome struct {
			text   string
			err    error
			before []trProgress // what had arrived when the result did
		}
		outcomes := make([]outcome, len(sides))
		seen := make([]int, len(sides))
		var wg sync.WaitGroup
		for i, s := range sides {
			seen[i] = len(s.c.progress())
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(ctx, trCallWait)
				defer cancel()
				req := mcpgo.CallToolRequest{}
				req.Params.Name = "test_tool_with_progress"
				req.Params.Arguments = map[string]any{}
				req.Params.Meta = &mcpgo.Meta{ProgressToken: s.token}
				res, err := s.c.CallTool(cctx, req)
				o := outcome{err: err, before: s.c.progress()[seen[i]:]}
				if err == nil && len(res.Content) > 0 {
					if text, ok := res.Content[0].(mcpgo.TextContent); ok {
						o.text = text.Text
					}
				}
				outcomes[i] = o
			}()
		}
		wg.Wait()
		time.Sleep(trSettle)
		for i, s := range sides {
			o := outcomes[i]
			if o.err != nil || o.text != "progress reported" {
				t.Fatalf("session %d, run %d: tools/call test_tool_with_progress: %q, %v", i, attempt, o.text, o.err)
			}
			if after := s.c.progress()[seen[i]:]; len(after) > len(o.before) {
				t.Errorf("session %d, run %d: %d progress notification(s) after the result (progress may only reference a request in progress): %s", i, attempt, len(after)-len(o.before), trShow(after))
			}
			if len(o.before) > len(want) {
				t.Fatalf("session %d, run %d: %d progress notifications, want at most 3: %s", i, attempt, len(o.before), trShow(o.before))
			}
			wantToken := trJSON(t, s.token)
			for j, p := range o.before {
				if !reflect.DeepEqual(p.Token, wantToken) || p.Progress != want[j] || p.Total != 100 {
					t.Fatalf("session %d, run %d: progress #%d = %s, want token %s, progress %v of 100 (all: %s)",
						i, attempt, j, trShow(p), trShow(wantToken), want[j], trShow(o.before))
				}
			}
			if len(o.before) == len(want) {
				s.complete = true
			}
			t.Logf("session %d, run %d: %d of 3 progress notifications before the result", i, attempt, len(o.before))
		}
	}
	for i, s := range sides {
		if !s.complete {
			t.Errorf("session %d (token %v): no run out of %d delivered all 3 progress notifications", i, s.token, trAttempts)
		}
	}
}

// logs are the notifications/message a client got, as "level:data".
func (c *trClient) logs() []string {
	var out []string
	for _, n := range c.received(string(mcpgo.MethodNotificationMessage)) {
		out = append(out, fmt.Sprint(n.Params.AdditionalFields["level"], ":", n.Params.AdditionalFields["data"]))
	}
	return out
}

var trLogWant = []string{"info:Tool execution started", "info:Tool processing data", "info:Tool execution completed"}

// Transparency, logging. The caller of test_tool_with_logging receives the
// fixture's three notifications/message (level info) in order before the
// result; a second session that set logging/setLevel to error calls the same
// tool and receives none of them (the gateway honours setLevel per session;
// the fixture itself ignores it, so the gateway has to filter); a third,
// idle session with its standalone stream open receives nothing at all, and
// the first receives nothing from the second's call.
// Covers transparency: logging/setLevel.
func TestTransparencyLogging(t *testing.T) {
	ctx := trCtx(t)
	direct, via := trServers(t)
	a := trConnect(t, ctx, via, true)
	quiet := trConnect(t, ctx, via, true)
	idle := trConnect(t, ctx, via, true)

	lvl := mcpgo.SetLevelRequest{}
	lvl.Params.Level = mcpgo.LoggingLevelError
	if err := quiet.SetLevel(ctx, lvl); err != nil {
		t.Errorf("logging/setLevel error: %v", err)
	}

	complete := false
	for attempt := 1; attempt <= trAttempts && !complete; attempt++ {
		seen := len(a.logs())
		if got := a.call(t, ctx, "test_tool_with_logging", nil, nil); got != "Tool with logging executed successfully" {
			t.Fatalf("run %d: test_tool_with_logging: %q", attempt, got)
		}
		before := a.logs()[seen:]
		if len(before) > len(trLogWant) || !slices.Equal(before, trLogWant[:len(before)]) {
			t.Fatalf("run %d: log messages before the result %q, want (a prefix of) %q", attempt, before, trLogWant)
		}
		complete = len(before) == len(trLogWant)
		t.Logf("run %d: %d of 3 log messages before the result", attempt, len(before))
	}
	if !complete {
		// The fixture queues its last message as it returns, on a channel
		// its POST and GET streams share, so on a loaded machine that
		// message often goes out after the result or on the GET stream, run
		// after run. The gateway's own client to the fixture listens on a
		// GET stream, so the fair comparison is a direct client that does
		// too; and since a rare complete run directly is chance, the
		// gateway is at fault only if such a client gets all three before
		// the result in several runs (a third of them) while it got none.
		d := trConnect(t, ctx, direct, true)
		directly := 0
		for range trAttempts {
			seen := len(d.logs())
			d.call(t, ctx, "test_tool_with_logging", nil, nil)
			if len(d.logs()[seen:]) == len(trLogWant) {
				directly++
			}
		}
		if directly >= trAttempts/3 {
			t.Errorf("no run out of %d delivered all 3 log messages through toolgate; directly, %d did", trAttempts, directly)
		} else {
			t.Logf("no run out of %d delivered all 3 log messages through toolgate, %d directly: the fixture's order, not the gateway's", trAttempts, directly)
		}
	}
	time.Sleep(trSettle)
	aCount := len(a.logs())

	if got := quiet.call(t, ctx, "test_tool_with_logging", nil, nil); got != "Tool with logging executed successfully" {
		t.Fatalf("session at level error: test_tool_with_logging: %q", got)
	}
	time.Sleep(trSettle)
	if got := quiet.logs(); len(got) != 0 {
		t.Errorf("session at level error received info messages: %q", got)
	}
	if got := a.logs(); len(got) != aCount {
		t.Errorf("the first session received another session's log messages: %q", got[aCount:])
	}
	if got := idle.logs(); len(got) != 0 {
		t.Errorf("an idle session received log messages: %q", got)
	}
	if all := idle.all(); len(all) != 0 {
		t.Errorf("an idle session received notifications: %s", trShow(all))
	}

	// For the record: the fixture does not filter by level itself.
	d := trConnect(t, ctx, direct, false)
	if err := d.SetLevel(ctx, lvl); err != nil {
		t.Logf("direct logging/setLevel: %v", err)
	}
	d.call(t, ctx, "test_tool_with_logging", nil, nil)
	t.Logf("directly, a session at level error got %d info message(s) from the fixture", len(d.logs()))
}

// trSampler answers sampling/createMessage with a fixed text and records
// what it was asked.
type trSampler struct {
	answer string
	mu     sync.Mutex
	asked  []mcpgo.CreateMessageRequest
}

func (s *trSampler) CreateMessage(_ context.Context, req mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	s.mu.Lock()
	s.asked = append(s.asked, req)
	s.mu.Unlock()
	return &mcpgo.CreateMessageResult{
		SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.TextContent{Type: "text", Text: s.answer}},
		Model:           "transparency-test-model",
		StopReason:      "endTurn",
	}, nil
}

// Transparency, sampling. A client that declared sampling calls test_sampling
// through the gateway; the fixture's sampling/createMessage reaches this
// client's handler, and only it, with the prompt and the fixture's
// maxTokens, and the handler's answer comes back in the tool's result, as it
// does calling the fixture directly. The clients keep their standalone GET
// streams open: the fixture sends sampling requests only there (unlike
// elicitation, which it sends on the POST's stream), and the gateway may
// choose either.
// Covers transparency: sampling.
func TestTransparencySampling(t *testing.T) {
	ctx := trCtx(t)
	direct, via := trServers(t)
	prompt := "What is the capital of Transparency?"
	other := &trSampler{answer: "not this session's answer"}
	trConnect(t, ctx, via, true, client.WithSamplingHandler(other))
	for _, x := range []struct{ where, url string }{{"directly", direct}, {"via toolgate", via}} {
		s := &trSampler{answer: "sampled " + x.where + " 5e1f"}
		c := trConnect(t, ctx, x.url, true, client.WithSamplingHandler(s))
		got := c.call(t, ctx, "test_sampling", map[string]any{"prompt": prompt}, nil)
		if want := "LLM response: " + s.answer; got != want {
			t.Errorf("%s: test_sampling: %q, want %q", x.where, got, want)
		}
		s.mu.Lock()
		asked := append([]mcpgo.CreateMessageRequest(nil), s.asked...)
		s.mu.Unlock()
		if len(asked) != 1 {
			t.Errorf("%s: the sampling handler was asked %d times, want 1", x.where, len(asked))
			continue
		}
		msgs := asked[0].Messages
		if len(msgs) != 1 || msgs[0].Role != mcpgo.RoleUser {
			t.Errorf("%s: sampling messages %s", x.where, trShow(msgs))
		} else if text, ok := msgs[0].Content.(mcpgo.TextContent); !ok || text.Text != prompt {
			t.Errorf("%s: sampling message content %s, want the prompt %q", x.where, trShow(msgs[0].Content), prompt)
		}
		if asked[0].MaxTokens != 100 {
			t.Errorf("%s: sampling maxTokens %d, want the fixture's 100", x.where, asked[0].MaxTokens)
		}
	}
	other.mu.Lock()
	defer other.mu.Unlock()
	if len(other.asked) != 0 {
		t.Errorf("an idle session's sampling handler was asked %s", trShow(other.asked))
	}
}

// trElicitor answers elicitation/create with accept and content chosen by
// the message, and records what it was asked.
type trElicitor struct {
	mu    sync.Mutex
	asked []mcpgo.ElicitationParams
}

var trElicitAnswers = map[string]map[string]any{
	"Provide your information": {"name": "Jane Roe", "age": 31, "score": 88.5, "status": "pending", "verified": false},
	"Select options":           {"untitledSingle": "option2", "titledSingle": "value1", "legacyEnum": "opt2", "untitledMulti": []any{"option1"}, "titledMulti": []any{"value2"}},
}

func (e *trElicitor) Elicit(_ context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	e.mu.Lock()
	e.asked = append(e.asked, req.Params)
	e.mu.Unlock()
	content, ok := trElicitAnswers[req.Params.Message]
	if !ok {
		content = map[string]any{"username": "tg-user", "email": "tg-user@example.com"}
	}
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept, Content: content}}, nil
}

func (e *trElicitor) calls() []mcpgo.ElicitationParams {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]mcpgo.ElicitationParams(nil), e.asked...)
}

// The fixture's requested schemas (examples/conformance/main.go), as JSON.
var trElicitSchemas = map[string]string{
	"test_elicitation": `{"type":"object","properties":{
		"username":{"type":"string","description":"User's response"},
		"email":{"type":"string","description":"User's email address"}},
		"required":["username","email"]}`,
	"test_elicitation_sep1034_defaults": `{"type":"object","properties":{
		"name":{"type":"string","default":"John Doe"},
		"age":{"type":"integer","default":30},
		"score":{"type":"number","default":95.5},
		"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
		"verified":{"type":"boolean","default":true}}}`,
	"test_elicitation_sep1330_enums": `{"type":"object","properties":{
		"untitledSingle":{"type":"string","enum":["option1","option2"]},
		"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"Value One"},{"const":"value2","title":"Value Two"}]},
		"legacyEnum":{"type":"string","enum":["opt1","opt2"],"enumNames":["Option One","Option Two"]},
		"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2"]}},
		"titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"Value One"},{"const":"value2","title":"Value Two"}]}}}}`,
}

// Transparency, elicitation. Through the gateway, the fixture's
// elicitation/create reaches the client's handler with its message and its
// requestedSchema unchanged (defaults, enum, enumNames, oneOf, anyOf — SEP-1034
// and SEP-1330), and the tool's result, which echoes the handler's answer,
// equals the one the same handler gets calling the fixture directly.
// Covers transparency: elicitation.
func TestTransparencyElicitation(t *testing.T) {
	ctx := trCtx(t)
	direct, via := trServers(t)
	ev, ed := &trElicitor{}, &trElicitor{}
	cv := trConnect(t, ctx, via, false, client.WithElicitationHandler(ev))
	cd := trConnect(t, ctx, direct, false, client.WithElicitationHandler(ed))
	message := "Who is calling through toolgate?"
	for _, name := range []string{"test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"} {
		t.Run(name, func(t *testing.T) {
			var args map[string]any
			if name == "test_elicitation" {
				args = map[string]any{"message": message}
			}
			nv, nd := len(ev.calls()), len(ed.calls())
			gotDirect := cd.call(t, ctx, name, args, nil)
			gotVia := cv.call(t, ctx, name, args, nil)
			if !strings.Contains(gotDirect, "action=accept") {
				t.Fatalf("directly: %q; the fixture did not get the answer", gotDirect)
			}
			if gotVia != gotDirect {
				t.Errorf("result via toolgate %q, directly %q", gotVia, gotDirect)
			}
			askedVia, askedDirect := ev.calls()[nv:], ed.calls()[nd:]
			if len(askedVia) != 1 || len(askedDirect) != 1 {
				t.Fatalf("the handler was asked %d times via toolgate, %d directly; want 1 each", len(askedVia), len(askedDirect))
			}
			var want any
			if err := json.Unmarshal([]byte(trElicitSchemas[name]), &want); err != nil {
				t.Fatal(err)
			}
			for _, x := range []struct {
				where string
				p     mcpgo.ElicitationParams
			}{{"directly", askedDirect[0]}, {"via toolgate", askedVia[0]}} {
				if got := trJSON(t, x.p.RequestedSchema); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: requestedSchema\n%s\nwant\n%s", x.where, trShow(got), trShow(want))
				}
			}
			if askedVia[0].Message != askedDirect[0].Message || (name == "test_elicitation" && askedVia[0].Message != message) {
				t.Errorf("message via toolgate %q, directly %q", askedVia[0].Message, askedDirect[0].Message)
			}
		})
	}
}

// Transparency, an elicitation goes to the session whose call caused it. Two
// sessions with elicitation handlers, both with their standalone streams
// open; A calls test_elicitation; only A's handler is asked.
// Covers transparency: routing to the calling session.
func TestTransparencyElicitationRoutedToCaller(t *testing.T) {
	ctx := trCtx(t)
	_, via := trServers(t)
	ea, eb := &trElicitor{}, &trElicitor{}
	a := trConnect(t, ctx, via, true, client.WithElicitationHandler(ea))
	b := trConnect(t, ctx, via, true, client.WithElicitationHandler(eb))
	message := "Only session A should see this"
	got := a.call(t, ctx, "test_elicitation", map[string]any{"message": message}, nil)
	if want := "User response: action=accept, content=map[email:tg-user@example.com username:tg-user]"; got != want {
		t.Errorf("test_elicitation: %q, want %q", got, want)
	}
	time.Sleep(trSettle)
	if asked := ea.calls(); len(asked) != 1 || asked[0].Message != message {
		t.Errorf("session A's handler was asked %s, want once with %q", trShow(asked), message)
	}
	if asked := eb.calls(); len(asked) != 0 {
		t.Errorf("session B's handler was asked %s; it made no call", trShow(asked))
	}
	if all := b.all(); len(all) != 0 {
		t.Errorf("session B received notifications: %s", trShow(all))
	}
}

// trRaw is one raw JSON-RPC session (serveSession: initialize, then
// notifications/initialized) on url.
type trRaw struct {
	url, session string
	id           atomic.Int64
}

func trOpen(t *testing.T, url string) *trRaw {
	t.Helper()
	r := &trRaw{url: url, session: serveSession(t, url, "")}
	r.id.Store(100)
	return r
}

// rpc sends method with params and returns the response's result and error
// members; the answer may be JSON or an SSE stream (servePost).
func (r *trRaw) rpc(t *testing.T, method string, params any) (result, rpcErr any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.id.Add(1), "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	x := servePost(t, r.url, "", r.session, string(body))
	if x.message == nil {
		t.Fatalf("%s at %s: HTTP %d, no JSON-RPC response: %s", method, r.url, x.status, x.body)
	}
	return x.message["result"], x.message["error"]
}

// trSame asserts that method with params answers the same result via the
// gateway as directly, _meta aside (where the gateway may annotate: the
// result's own and its list items'), and that neither answers an error.
func trSame(t *testing.T, direct, via *trRaw, method string, params any) any {
	t.Helper()
	rd, ed := direct.rpc(t, method, params)
	rv, evia := via.rpc(t, method, params)
	if ed != nil || rd == nil {
		t.Fatalf("%s %s directly: error %s (result %s)", method, trShow(params), trShow(ed), trShow(rd))
	}
	if evia != nil || rv == nil {
		t.Errorf("%s %s via toolgate: error %s (result %s)", method, trShow(params), trShow(evia), trShow(rv))
		return rd
	}
	rd, rv = trDropMeta(rd), trDropMeta(rv)
	if !reflect.DeepEqual(rv, rd) {
		t.Errorf("%s %s:\nvia toolgate %s\ndirectly     %s", method, trShow(params), trShow(rv), trShow(rd))
	}
	return rd
}

// trDropMeta removes _meta from a result object and from the objects in its
// array members.
func trDropMeta(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		if k == "_meta" {
			continue
		}
		if list, ok := x.([]any); ok {
			items := make([]any, len(list))
			for i, it := range list {
				if o, ok := it.(map[string]any); ok && o["_meta"] != nil {
					c := make(map[string]any, len(o))
					for k2, v2 := range o {
						if k2 != "_meta" {
							c[k2] = v2
						}
					}
					it = c
				}
				items[i] = it
			}
			x = items
		}
		out[k] = x
	}
	return out
}

// IM-32: results pass through unchanged. Image, audio, embedded
// resource, mixed content and an isError result answer the same via the
// gateway as directly.
func TestTransparencyContentKinds(t *testing.T) {
	direct, via := trServers(t)
	d, v := trOpen(t, direct), trOpen(t, via)
	wantTypes := map[string]string{
		"test_image_content":          "image",
		"test_audio_content":          "audio",
		"test_embedded_resource":      "resource",
		"test_multiple_content_types": "text,image,resource",
		"test_error_handling":         "text",
	}
	for _, name := range []string{"test_image_content", "test_audio_content", "test_embedded_resource", "test_multiple_content_types", "test_error_handling"} {
		t.Run(name, func(t *testing.T) {
			res := trSame(t, d, v, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
			var got struct {
				Content []struct{ Type string } `json:"content"`
				IsError bool                    `json:"isError"`
			}
			_ = json.Unmarshal([]byte(trShow(res)), &got)
			var types []string
			for _, c := range got.Content {
				types = append(types, c.Type)
			}
			if strings.Join(types, ",") != wantTypes[name] || got.IsError != (name == "test_error_handling") {
				t.Errorf("directly: content types %q, isError %v; the fixture changed?", types, got.IsError)
			}
		})
	}
}

// IM-34: resources. resources/subscribe and resources/unsubscribe
// of test://static-text succeed through the gateway (as they do directly);
// resources/list, resources/templates/list and resources/read of the text,
// the binary and a templated resource answer the same as directly.
func TestTransparencyResourcesSubscribe(t *testing.T) {
	direct, via := trServers(t)
	d, v := trOpen(t, direct), trOpen(t, via)
	for _, method := range []string{"resources/subscribe", "resources/unsubscribe"} {
		params := map[string]any{"uri": "test://static-text"}
		if res, rpcErr := d.rpc(t, method, params); rpcErr != nil || res == nil {
			t.Fatalf("%s directly: %s", method, trShow(rpcErr))
		}
		if res, rpcErr := v.rpc(t, method, params); rpcErr != nil || res == nil {
			t.Errorf("%s via toolgate: error %s", method, trShow(rpcErr))
		}
	}
	list := trSame(t, d, v, "resources/list", map[string]any{})
	if n := len(trDropMeta(list).(map[string]any)["resources"].([]any)); n != 2 {
		t.Errorf("directly: %d resources, want the fixture's 2", n)
	}
	templates := trSame(t, d, v, "resources/templates/list", map[string]any{})
	if n := len(trDropMeta(templates).(map[string]any)["resourceTemplates"].([]any)); n != 1 {
		t.Errorf("directly: %d resource templates, want the fixture's 1", n)
	}
	for _, uri := range []string{"test://static-text", "test://static-binary", "test://template/42/data"} {
		res := trSame(t, d, v, "resources/read", map[string]any{"uri": uri})
		if contents, _ := res.(map[string]any)["contents"].([]any); len(contents) != 1 {
			t.Errorf("resources/read %s directly: %s", uri, trShow(res))
		}
	}
}

// IM-34: prompts and completion. prompts/list and prompts/get
// (with and without arguments, embedded resource, image) answer the same
// via the gateway as directly, and so does completion/complete for an
// argument of test_prompt_with_arguments.
func TestTransparencyPromptsAndCompletion(t *testing.T) {
	direct, via := trServers(t)
	d, v := trOpen(t, direct), trOpen(t, via)
	list := trSame(t, d, v, "prompts/list", map[string]any{})
	if n := len(list.(map[string]any)["prompts"].([]any)); n != 4 {
		t.Errorf("directly: %d prompts, want the fixture's 4", n)
	}
	for _, p := range []map[string]any{
		{"name": "test_simple_prompt"},
		{"name": "test_prompt_with_arguments", "arguments": map[string]any{"arg1": "first value", "arg2": "second value"}},
		{"name": "test_prompt_with_embedded_resource", "arguments": map[string]any{"resourceUri": "test://static-text"}},
		{"name": "test_prompt_with_image"},
	} {
		res := trSame(t, d, v, "prompts/get", p)
		if msgs, _ := res.(map[string]any)["messages"].([]any); len(msgs) == 0 {
			t.Errorf("prompts/get %s directly: no messages: %s", p["name"], trShow(res))
		}
	}
	res := trSame(t, d, v, "completion/complete", map[string]any{
		"ref":      map[string]any{"type": "ref/prompt", "name": "test_prompt_with_arguments"},
		"argument": map[string]any{"name": "arg1", "value": "fi"},
	})
	if _, ok := res.(map[string]any)["completion"].(map[string]any); !ok {
		t.Errorf("completion/complete directly: no completion: %s", trShow(res))
	}
}

const trChangeWait = 30 * time.Second // upstream change to list_changed: debounce, refresh, load

// await waits until more than seen notifications of method have arrived,
// or until deadline, and returns how many there are then.
func (c *trClient) await(method string, seen int, deadline time.Time) int {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		if n := len(c.received(method)); n > seen {
			return n
		}
		select {
		case <-c.wake:
		case <-timer.C:
			return len(c.received(method))
		}
	}
}

// trAwaitChange waits for c to receive method (beyond the first seen) and
// then asks visible whether the list shows the change. A list_changed may
// also come from an unrelated refresh, so until visible says yes it waits
// for the next one, until trChangeWait is spent. The list is only looked at
// after a notification: a change that shows without one still fails.
func trAwaitChange(t *testing.T, c *trClient, who, method string, seen int, visible func() bool) {
	t.Helper()
	deadline := time.Now().Add(trChangeWait)
	before := seen
	for {
		n := c.await(method, seen, deadline)
		if n == seen {
			t.Fatalf("%s: no %s followed by a list showing the change within %v (%d received since the change)",
				who, method, trChangeWait, n-before)
		}
		seen = n
		if visible() {
			return
		}
	}
}

func trToolNames(t *testing.T, ctx context.Context, c *trClient) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, trCallWait)
	defer cancel()
	res, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func trResourceURIs(t *testing.T, ctx context.Context, c *trClient) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, trCallWait)
	defer cancel()
	res, err := c.ListResources(ctx, mcpgo.ListResourcesRequest{})
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	return uris
}

// IM-25, IM-34: an upstream that changes its lists. mcp-go's
// conformance fixture never does, so other real upstreams stand behind a
// real `toolgate serve`, and two mcp-go client sessions with their
// standalone streams open (where a notification outside any call arrives)
// must each receive the list_changed and then see the new list.
//
//   - tools: the built-in flaky upstream over Streamable HTTP, run by the
//     test. Another client calls its grow tool directly, so the change is
//     the upstream's own and reaches the gateway only as the upstream's
//     notifications/tools/list_changed (IM-25: a refresh, then one
//     notification to every live session). flaky_grown_1 is then listed
//     and callable through the gateway.
//   - resources: server-everything over stdio. Its gzip-file-as-resource
//     tool, called through the gateway with a data: URL (no network),
//     registers a resource and sends notifications/resources/list_changed;
//     the new URI is then listed and reads back as the gzip of the data
//     (IM-34: URIs kept, routed to the upstream that listed them).
//
// Prompts are not covered here: no upstream the binary can run changes its
// prompts (the built-in demo servers, server-everything 2026.8.31 and the
// fixture register theirs once, at start). mcp's
// TestRelayPromptAndResourceListChangedStdio covers prompts in-process.
func TestTransparencyListChanged(t *testing.T) {
	ctx := trCtx(t)
	t.Run("tools", func(t *testing.T) {
		_, up := startHTTPDemo(t, "flaky")
		g := startServe(t, writeServeConfig(t, fmt.Sprintf(`endpoints:
  - path: /mcp
    actor: {id: transparency, roles: [MEMBER]}   # open mode, loopback only
upstreams:
  - name: flaky
    url: %s
    transport: http
    defaultKind: read   # no confirm gate needed; grow is called on the upstream directly
    required: true
`, up)), nil)
		via := g.base + "/mcp"
		sessions := []*trClient{trConnect(t, ctx, via, true), trConnect(t, ctx, via, true)}
		const grown = "flaky_grown_1"
		if names := trToolNames(t, ctx, sessions[0]); !slices.Contains(names, "flaky_ok") || slices.Contains(names, grown) {
			t.Fatalf("tools before the change: %q, want flaky_ok and no %s", names, grown)
		}
		method := string(mcpgo.MethodNotificationToolsListChanged)
		seen := []int{len(sessions[0].received(method)), len(sessions[1].received(method))}

		direct := trConnect(t, ctx, up, false)
		if got := direct.call(t, ctx, "grow", nil, nil); got != "added grown_1" {
			t.Fatalf("grow on the upstream: %q", got)
		}
		for i, c := range sessions {
			trAwaitChange(t, c, fmt.Sprintf("session %d", i), method, seen[i], func() bool {
				return slices.Contains(trToolNames(t, ctx, c), grown)
			})
		}
		if got := sessions[1].call(t, ctx, grown, nil, nil); got != "grown_1" {
			t.Errorf("%s through the gateway: %q", grown, got)
		}
	})
	t.Run("resources", func(t *testing.T) {
		quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		g := startServe(t, writeServeConfig(t, fmt.Sprintf(`endpoints:
  - path: /mcp
    actor: {id: transparency, roles: [MEMBER]}   # open mode, loopback only
upstreams:
  - name: everything
    command: %s
    args: [%s]
    defaultKind: read   # served without a confirm gate; the one tool called only registers a resource
    required: true
`, quote(peers.Node(t)), quote(peers.EverythingJS(t)))), nil)
		via := g.base + "/mcp"
		a, b := trConnect(t, ctx, via, true), trConnect(t, ctx, via, true)
		name := "toolgate-im25-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ".txt.gz"
		uri := "demo://resource/session/" + name
		data := "list_changed passes through toolgate (IM-25)\n"
		if uris := trResourceURIs(t, ctx, b); slices.Contains(uris, uri) {
			t.Fatalf("%s is listed before the change: %q", uri, uris)
		}
		method := string(mcpgo.MethodNotificationResourcesListChanged)
		seenA, seenB := len(a.received(method)), len(b.received(method))

		cctx, cancel := context.WithTimeout(ctx, trCallWait)
		defer cancel()
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "everything_gzip-file-as-resource"
		req.Params.Arguments = map[string]any{
			"name":       name,
			"data":       "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte(data)),
			"outputType": "resourceLink",
		}
		res, err := a.CallTool(cctx, req)
		if err != nil {
			t.Fatalf("tools/call %s: %v", req.Params.Name, err)
		}
		if link, ok := trFirst(res).(mcpgo.ResourceLink); !ok || link.URI != uri || res.IsError {
			t.Fatalf("tools/call %s: %s, want a resource_link to %s", req.Params.Name, trShow(res), uri)
		}
		for _, x := range []struct {
			who  string
			c    *trClient
			seen int
		}{{"the calling session", a, seenA}, {"an idle session", b, seenB}} {
			trAwaitChange(t, x.c, x.who, method, x.seen, func() bool {
				return slices.Contains(trResourceURIs(t, ctx, x.c), uri)
			})
		}

		rctx, cancel := context.WithTimeout(ctx, trCallWait)
		defer cancel()
		read, err := b.ReadResource(rctx, mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: uri}})
		if err != nil || len(read.Contents) != 1 {
			t.Fatalf("resources/read %s: %s, %v", uri, trShow(read), err)
		}
		blob, ok := read.Contents[0].(mcpgo.BlobResourceContents)
		if !ok || blob.MIMEType != "application/gzip" {
			t.Fatalf("resources/read %s: %s, want an application/gzip blob", uri, trShow(read.Contents[0]))
		}
		if got := trGunzip(t, blob.Blob); got != data {
			t.Errorf("resources/read %s: gunzipped %q, want %q", uri, got, data)
		}
	})
}

// trFirst is a result's first content block, or nil.
func trFirst(res *mcpgo.CallToolResult) mcpgo.Content {
	if len(res.Content) == 0 {
		return nil
	}
	return res.Content[0]
}

func trGunzip(t *testing.T, b64 string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("blob: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("blob: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("blob: %v", err)
	}
	return string(out)
}
