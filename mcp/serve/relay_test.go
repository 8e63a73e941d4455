package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// Transparency: what an upstream sends during a call reaches the session that
// made the call, and only that session. The upstream here is a real stdio
// child (the test binary as an MCP server), so attribution cannot lean on
// per-call HTTP streams.

func relayGateway(t *testing.T, roots ...string) string {
	return relayGatewayOf(t, upstreamtest.StdioServerArg, roots...)
}

// relayGatewayOf serves the test binary in the server mode arg names.
func relayGatewayOf(t *testing.T, arg string, roots ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hub := serve.NewHub()
	up, err := upstream.New(upstream.Options{Name: "child", Command: exe, Args: []string{arg}, Roots: roots, Hub: hub})
	if err != nil {
		t.Fatal(err)
	}
	return serveImported(t, up, hub, 30*time.Second)
}

// serveImported imports up (prefix "", reads) and serves it on /mcp with
// hub; it returns the endpoint's URL.
func serveImported(t *testing.T, up core.Upstream, hub *serve.Hub, timeout time.Duration) string {
	t.Helper()
	reg := core.NewRegistry(nil)
	im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{Name: "child", DefaultKind: core.KindRead, Timeout: timeout, Upstream: up}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := im.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: "/mcp", Registry: reg, Catalog: im, Hub: hub, Actor: testActor})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", testAuth(ep))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = ep.Close(context.Background())
		srv.Close()
		_ = im.Close()
	})
	return srv.URL + "/mcp"
}

// notes collects one client's notifications in arrival order.
type notes struct {
	mu   sync.Mutex
	list []mcpgo.JSONRPCNotification
}

func (n *notes) add(x mcpgo.JSONRPCNotification) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, x)
}

func (n *notes) of(method string) []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []map[string]any
	for _, x := range n.list {
		if x.Method == method {
			out = append(out, x.Params.AdditionalFields)
		}
	}
	return out
}

func relayClient(t *testing.T, url, actor string, opts ...client.ClientOption) (*client.Client, *notes) {
	return relayClientStream(t, url, actor, true, opts...)
}

// relayClientStream is relayClient with or without the standing GET
// stream, where mcp-go's server sends what belongs to no call.
func relayClientStream(t *testing.T, url, actor string, listen bool, opts ...client.ClientOption) (*client.Client, *notes) {
	t.Helper()
	trOpts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"X-Test-Actor": actor, "X-Test-Roles": "MEMBER"})}
	if listen {
		trOpts = append(trOpts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url, trOpts...)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, append([]client.ClientOption{client.WithProtocolVersion(mcpgo.ProtocolVersion20250618)}, opts...)...)
	n := &notes{}
	c.OnNotification(n.add)
	// Start's context is the standing stream's lifetime.
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.Cleanup(func() { _ = c.Close() })
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.ProtocolVersion20250618
	req.Params.ClientInfo = mcpgo.Implementation{Name: actor, Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	return c, n
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any, token any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	if token != nil {
		req.Params.Meta = &mcpgo.Meta{ProgressToken: token}
	}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return resultTexts(res)
}

// resultTexts joins a result's text blocks.
func resultTexts(res *mcpgo.CallToolResult) string {
	var texts []string
	for _, block := range res.Content {
		if tc, ok := block.(mcpgo.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Covers transparency: progress and logging/setLevel.
func TestRelayProgressAndLogsReachTheCallerStdio(t *testing.T) {
	url := relayGateway(t)
	a, aNotes := relayClient(t, url, "alice")
	b, bNotes := relayClient(t, url, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.SetLevel(ctx, mcpgo.SetLevelRequest{Params: mcpgo.SetLevelParams{Level: mcpgo.LoggingLevelError}}); err != nil {
		t.Fatal(err)
	}

	if got := callTool(t, a, "chatty", nil, "alice-token"); got != "chatted" {
		t.Fatalf("alice's result = %q", got)
	}
	// Progress comes back under the client's own token, in order, before
	// the result (the call returned only after they were written).
	progress := aNotes.of("notifications/progress")
	if len(progress) != 3 {
		t.Fatalf("alice got %d progress notifications, want 3: %v (all: %+v)", len(progress), progress, aNotes.list)
	}
	for i, p := range progress {
		if p["progressToken"] != "alice-token" || fmt.Sprint(p["progress"]) != fmt.Sprint(i+1) || fmt.Sprint(p["total"]) != "3" {
			t.Fatalf("progress %d = %v", i, p)
		}
	}
	// No level set: every message is passed on, in order.
	var logs []string
	for _, m := range aNotes.of("notifications/message") {
		logs = append(logs, fmt.Sprint(m["data"]))
	}
	if strings.Join(logs, ",") != "message debug,message info,message error" {
		t.Fatalf("alice's log messages = %q", logs)
	}
	if n := len(bNotes.of("notifications/message")) + len(bNotes.of("notifications/progress")); n != 0 {
		t.Fatalf("bob, who called nothing, got %d of alice's notifications", n)
	}

	// Bob asked for errors only (logging/setLevel), and no progress.
	if got := callTool(t, b, "chatty", nil, nil); got != "chatted" {
		t.Fatalf("bob's result = %q", got)
	}
	var bobLogs []string
	for _, m := range bNotes.of("notifications/message") {
		bobLogs = append(bobLogs, fmt.Sprint(m["data"]))
	}
	if strings.Join(bobLogs, ",") != "message error" {
		t.Fatalf("bob's log messages at level error = %q", bobLogs)
	}
	if p := bNotes.of("notifications/progress"); len(p) != 0 {
		t.Fatalf("bob asked for no progress and got %v", p)
	}
	if n := len(aNotes.of("notifications/message")); n != 3 {
		t.Fatalf("alice got %d messages after bob's call, want still 3", n)
	}
}

type sampler struct {
	name  string
	mu    sync.Mutex
	asked []string
}

func (s *sampler) CreateMessage(_ context.Context, req mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range req.Messages {
		if tc, ok := m.Content.(mcpgo.TextContent); ok {
			s.asked = append(s.asked, tc.Text)
		}
	}
	return &mcpgo.CreateMessageResult{
		SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.TextContent{Type: "text", Text: "from " + s.name}},
		Model:           "test-model",
	}, nil
}

func (s *sampler) prompts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

// Covers transparency: sampling routed to the calling session.
func TestRelaySamplingGoesToTheCallingSessionStdio(t *testing.T) {
	url := relayGateway(t)
	as, bs := &sampler{name: "alice"}, &sampler{name: "bob"}
	// Alice has no GET stream: the request must come on her call's own.
	a, _ := relayClientStream(t, url, "alice", false, client.WithSamplingHandler(as))
	relayClient(t, url, "bob", client.WithSamplingHandler(bs))

	got := callTool(t, a, "ask", map[string]any{"prompt": "what is 2+2"}, nil)
	if !strings.Contains(got, "from alice") {
		t.Fatalf("result = %q, want alice's sampling answer", got)
	}
	if p := as.prompts(); len(p) != 1 || p[0] != "what is 2+2" {
		t.Fatalf("alice's handler saw %q", p)
	}
	if p := bs.prompts(); len(p) != 0 {
		t.Fatalf("bob's handler was asked %q for alice's call", p)
	}
}

// With calls of two sessions in flight on one stdio upstream, a sampling
// request names neither: it is refused, never sent to a guess.
// Covers transparency: no request is sent to a guessed session.
func TestRelaySamplingRefusedWhenNotAttributableStdio(t *testing.T) {
	url := relayGateway(t)
	as, bs := &sampler{name: "alice"}, &sampler{name: "bob"}
	a, _ := relayClient(t, url, "alice", client.WithSamplingHandler(as))
	b, _ := relayClient(t, url, "bob", client.WithSamplingHandler(bs))

	// Bob's call stays in flight until the test cancels it.
	bctx, bcancel := context.WithCancel(context.Background())
	bobDone := make(chan struct{})
	marker := filepath.Join(t.TempDir(), "m")
	go func() {
		defer close(bobDone)
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "wait"
		req.Params.Arguments = map[string]any{"marker": marker}
		_, _ = b.CallTool(bctx, req)
	}()
	defer func() {
		// The upstream writes its marker when the cancellation reaches it;
		// waiting for it keeps the write out of the temp dir's removal.
		bcancel()
		<-bobDone
		waitFile(t, marker, "bob's cancelled call ending upstream")
	}()
	waitFile(t, marker+".started", "bob's call reaching the upstream")

	got := callTool(t, a, "ask", map[string]any{"prompt": "secret question"}, nil)
	if !strings.Contains(got, "sampling failed") || !strings.Contains(got, "cannot be attributed") {
		t.Fatalf("result = %q, want the gateway's refusal", got)
	}
	if p := append(as.prompts(), bs.prompts()...); len(p) != 0 {
		t.Fatalf("a client was asked %q", p)
	}
}

// waitFile waits (bounded) for a file the test server writes.
func waitFile(t *testing.T, path, what string) {
	t.Helper()
	waittest.Eventually(t, 10*time.Second, what, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// Covers transparency: roots/list from config.
func TestRelayRootsComeFromConfigStdio(t *testing.T) {
	url := relayGateway(t, "file:///srv/projects", "file:///srv/shared%20data")
	asked := make(chan struct{}, 1)
	a, _ := relayClient(t, url, "alice", client.WithRootsHandler(rootsFunc(func() { asked <- struct{}{} })))
	got := callTool(t, a, "roots", nil, nil)
	var roots []struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal([]byte(got), &roots); err != nil {
		t.Fatalf("roots result %q: %v", got, err)
	}
	if len(roots) != 2 || roots[0].URI != "file:///srv/projects" || roots[1].URI != "file:///srv/shared%20data" {
		t.Fatalf("upstream saw roots %q", got)
	}
	select {
	case <-asked:
		t.Fatal("the client's roots were asked for; they are paths on the client's machine")
	default:
	}
}

type rootsFunc func()

func (f rootsFunc) ListRoots(context.Context, mcpgo.ListRootsRequest) (*mcpgo.ListRootsResult, error) {
	f()
	return &mcpgo.ListRootsResult{Roots: []mcpgo.Root{{URI: "file:///home/client/secret"}}}, nil
}

// notifications/cancelled from the client reaches the upstream, which stops
// the work (the wait tool writes its marker only when its context ends).
// Covers transparency: cancellation, client to upstream.
func TestRelayCancellationReachesUpstreamStdio(t *testing.T) {
	url := relayGateway(t)
	c := testClient(url, "alice", "MEMBER")
	initialize(t, c)
	marker := filepath.Join(t.TempDir(), "cancelled")
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"wait","arguments":{"marker":%q}}}`, marker)
	done := make(chan string, 1)
	go func() {
		resp, err := c.Post(t.Context(), []byte(body), nil)
		if err != nil {
			done <- err.Error()
			return
		}
		done <- string(resp.Body)
	}()
	waitFile(t, marker+".started", "the call reaching the upstream")
	post(t, c, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"user pressed stop"}}`)

	waitFile(t, marker, "the upstream's call being cancelled")
	if b, _ := os.ReadFile(marker); string(b) != "cancelled" {
		t.Fatalf("marker = %q", b)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call's request did not end")
	}
}

// notifications/resources/updated reaches the sessions subscribed to the URI
// and no other; after unsubscribing, none.
// Covers IM-34: resource subscriptions.
func TestRelayResourceUpdatesGoToSubscribersStdio(t *testing.T) {
	url := relayGateway(t)
	a, aNotes := relayClient(t, url, "alice")
	b, bNotes := relayClient(t, url, "bob")
	c, cNotes := relayClient(t, url, "carol") // stays subscribed throughout
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, cl := range []*client.Client{a, c} {
		if err := cl.Subscribe(ctx, mcpgo.SubscribeRequest{Params: mcpgo.SubscribeParams{URI: "test://doc"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := callTool(t, b, "touch", nil, nil); got != "touched" {
		t.Fatalf("touch = %q", got)
	}
	waitNotes(t, aNotes, "notifications/resources/updated", 1)
	if u := aNotes.of("notifications/resources/updated"); u[0]["uri"] != "test://doc" {
		t.Fatalf("alice got %v", u)
	}
	if err := a.Unsubscribe(ctx, mcpgo.UnsubscribeRequest{Params: mcpgo.UnsubscribeParams{URI: "test://doc"}}); err != nil {
		t.Fatal(err)
	}
	callTool(t, b, "touch", nil, nil)
	// Carol's copy of the second update went out in the same pass over the
	// subscribers that alice's would have.
	waitNotes(t, cNotes, "notifications/resources/updated", 2)
	// A barrier instead of a pause: the upstream announces grow's changes
	// after the update, the gateway handles its notifications in order, and
	// the list_changed reaches alice and bob on the stream an update would
	// have taken. Once they have it, no update can still be on its way.
	if got := callTool(t, b, "grow", nil, nil); got != "grown" {
		t.Fatalf("grow = %q", got)
	}
	for _, n := range []*notes{aNotes, bNotes} {
		waitNotes(t, n, "notifications/prompts/list_changed", 1)
	}
	if n := len(aNotes.of("notifications/resources/updated")); n != 1 {
		t.Fatalf("alice got %d updates, want only the one from before she unsubscribed", n)
	}
	if u := bNotes.of("notifications/resources/updated"); len(u) != 0 {
		t.Fatalf("bob never subscribed and got %v", u)
	}
}

func waitNotes(t *testing.T, n *notes, method string, count int) {
	t.Helper()
	waittest.Succeeds(t, 10*time.Second, method, func() error {
		if have := len(n.of(method)); have < count {
			return fmt.Errorf("%d, want %d", have, count)
		}
		return nil
	})
}

// An upstream's prompts/list_changed and resources/list_changed make the
// gateway refresh it and tell every session, whose next list has the news.
// Covers IM-25, IM-34.
func TestRelayPromptAndResourceListChangedStdio(t *testing.T) {
	url := relayGateway(t)
	a, aNotes := relayClient(t, url, "alice")
	b, bNotes := relayClient(t, url, "bob")
	if got := callTool(t, a, "grow", nil, nil); got != "grown" {
		t.Fatalf("grow = %q", got)
	}
	for _, n := range []*notes{aNotes, bNotes} {
		waitNotes(t, n, "notifications/prompts/list_changed", 1)
		waitNotes(t, n, "notifications/resources/list_changed", 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prompts, err := b.ListPrompts(ctx, mcpgo.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "grown") {
		t.Fatalf("prompts after list_changed = %v", names)
	}
	res, err := b.ReadResource(ctx, mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "test://grown"}})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("reading the new resource: %v %v", res, err)
	}
}

// An upstream's notifications/cancelled for a request it made of the
// gateway reaches the client the request was passed to, as a cancellation
// of the request the client received.
// Covers transparency: cancellation, upstream to client.
func TestRelayUpstreamWithdrawsItsRequestStdio(t *testing.T) {
	url := relayGatewayOf(t, upstreamtest.RawServerArg)
	release := make(chan struct{})
	defer close(release)
	asked := make(chan struct{}, 1)
	a, aNotes := relayClientStream(t, url, "alice", false, client.WithSamplingHandler(blockingSampler{asked, release}))
	type outcome struct {
		res *mcpgo.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := a.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "withdraw"}})
		done <- outcome{res, err}
	}()
	// The upstream withdraws its request once the client has it, and
	// answers the call once the withdrawal has reached the client: each
	// step waits for the event before it, not a pause a loaded machine
	// may outlast.
	waittest.Recv(t, 20*time.Second, "the sampling request to reach the client", asked)
	callTool(t, a, "withdraw_now", nil, nil)
	waitNotes(t, aNotes, "notifications/cancelled", 1)
	callTool(t, a, "withdraw_answer", nil, nil)
	o := waittest.Recv(t, 20*time.Second, "the withdraw call to end", done)
	if o.err != nil {
		t.Fatalf("withdraw: %v", o.err)
	}
	if got := resultTexts(o.res); got != "withdrawn" {
		t.Fatalf("result = %q", got)
	}
	cancels := aNotes.of("notifications/cancelled")
	if len(cancels) != 1 {
		t.Fatalf("client got %d cancellations, want 1: %v", len(cancels), aNotes.list)
	}
	if id, _ := cancels[0]["requestId"].(string); !strings.HasPrefix(id, "tg-ask-") {
		t.Fatalf("cancellation names request %v, not the gateway's request to the client", cancels[0]["requestId"])
	}
}

// blockingSampler is a user who never answers (until the test ends).
type blockingSampler struct {
	asked   chan<- struct{}
	release <-chan struct{}
}

func (s blockingSampler) CreateMessage(ctx context.Context, _ mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	s.asked <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil, context.Canceled
}

// The upstream is subscribed once however many sessions subscribe, and
// unsubscribed when the last subscriber unsubscribes or its session ends.
// Covers IM-34: resource subscriptions.
func TestRelaySubscriptionsCountedAcrossSessionsStdio(t *testing.T) {
	url := relayGatewayOf(t, upstreamtest.RawServerArg)
	a, _ := relayClient(t, url, "alice")
	b, _ := relayClient(t, url, "bob")
	c, _ := relayClient(t, url, "carol")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	upstreamSubs := func() string { return callTool(t, c, "subs", nil, nil) }
	sub := mcpgo.SubscribeRequest{Params: mcpgo.SubscribeParams{URI: "test://raw"}}
	for _, cl := range []*client.Client{a, b} {
		if err := cl.Subscribe(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	if n := upstreamSubs(); n != "1" {
		t.Fatalf("two sessions subscribed; upstream subscriptions = %s, want 1", n)
	}
	if err := a.Unsubscribe(ctx, mcpgo.UnsubscribeRequest{Params: mcpgo.UnsubscribeParams{URI: "test://raw"}}); err != nil {
		t.Fatal(err)
	}
	if n := upstreamSubs(); n != "1" {
		t.Fatalf("bob is still subscribed; upstream subscriptions = %s, want 1", n)
	}
	// Bob's session ends without unsubscribing. (mcp-go's client sends its
	// DELETE without the configured headers, which authentication refuses,
	// so the test ends the session itself.)
	del := testClient(url, "bob", "MEMBER")
	del.SetSession(b.GetSessionId(), mcpgo.ProtocolVersion20250618)
	resp, err := del.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("DELETE of bob's session: HTTP %d", resp.Status)
	}
	waittest.Succeeds(t, 10*time.Second, "the upstream to be unsubscribed", func() error {
		if n := upstreamSubs(); n != "0" {
			return fmt.Errorf("the last subscriber's session ended; upstream subscriptions = %s, want 0", n)
		}
		return nil
	})
}

// An elicitation a person takes longer than 30 seconds to answer still gets
// its answer to an upstream over Streamable HTTP: mcp-go's client bounds
// the answer to a server's request at 30 seconds, and the gateway sends it
// itself. (This test takes that long.)
// Covers transparency: elicitation routed and answered.
func TestRelaySlowElicitationAnswerReachesHTTPUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("waits more than 30 s")
	}
	up := server.NewMCPServer("slow-elicit", "1", server.WithToolCapabilities(true), server.WithElicitation())
	up.AddTool(mcpgo.NewTool("ask_user"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		res, err := up.RequestElicitation(ctx, mcpgo.ElicitationRequest{Params: mcpgo.ElicitationParams{
			Message:         "Take your time.",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
		}})
		if err != nil {
			return mcpgo.NewToolResultError("elicitation failed: " + err.Error()), nil
		}
		return mcpgo.NewToolResultText("answer " + string(res.Action)), nil
	})
	upSrv := httptest.NewServer(server.NewStreamableHTTPServer(up))
	t.Cleanup(upSrv.Close)

	hub := serve.NewHub()
	u, err := upstream.New(upstream.Options{Name: "slow", URL: upSrv.URL + "/mcp", Transport: "http", Hub: hub})
	if err != nil {
		t.Fatal(err)
	}
	url := serveImported(t, u, hub, 2*time.Minute)

	// The client is raw HTTP: mcp-go's client bounds its own answers at 30
	// seconds too, which is what this test must get past.
	opts := testOptions("alice", "MEMBER")
	opts.Capabilities = json.RawMessage(`{"elicitation":{}}`)
	c := mcptest.New(url, opts)
	initialize(t, c)
	st, err := c.Send(t.Context(), []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask_user","arguments":{}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var result string
	for result == "" {
		msg, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the call's answer: %v", err)
		}
		switch {
		case msg.Method == "elicitation/create":
			time.Sleep(35 * time.Second) // a person thinking
			r := post(t, c, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"action":"accept","content":{"ok":true}}}`)
			if r.Status != http.StatusAccepted && r.Status != http.StatusOK {
				t.Fatalf("answering the elicitation: HTTP %d", r.Status)
			}
		case msg.IsResponse() && msg.Result != nil:
			result = string(msg.Result)
		}
	}
	if !strings.Contains(result, `"text":"answer accept"`) {
		t.Fatalf("result = %s, want the accepted answer", result)
	}
}
