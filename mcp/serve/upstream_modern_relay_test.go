package serve_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// accepter is a user who accepts every elicitation and remembers what it
// was asked.
type accepter struct {
	mu    sync.Mutex
	asked []string
}

func (a *accepter) Elicit(_ context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Params.Message)
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{},
	}}, nil
}

func (a *accepter) messages() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// A modern upstream's input_required result of a call (an elicitation, a
// sampling request) reaches the client session that made the call, as a
// legacy upstream's request does, and its answer continues the call.
// Covers IM-2.
func TestModernUpstreamInputRelayedToTheCallerStdio(t *testing.T) {
	url := relayGatewayOf(t, upstreamtest.ModernStdioServerArg)
	user := &accepter{}
	alice := &sampler{name: "alice"}
	c, _ := relayClientStream(t, url, "alice", false, client.WithElicitationHandler(user), client.WithSamplingHandler(alice))
	bob := &sampler{name: "bob"}
	relayClient(t, url, "bob", client.WithSamplingHandler(bob))

	if got := callTool(t, c, "ask", nil, nil); got != "action=accept state=st-1" {
		t.Errorf("ask = %q", got)
	}
	if m := user.messages(); len(m) != 1 || m[0] != "go ahead?" {
		t.Errorf("the user was asked %q", m)
	}
	if got := callTool(t, c, "sample", nil, nil); got != "sampled: from alice" {
		t.Errorf("sample = %q", got)
	}
	if p := bob.prompts(); len(p) != 0 {
		t.Errorf("bob was asked %q for alice's call", p)
	}
	if p := alice.prompts(); len(p) != 1 || !strings.Contains(p[0], "2+2") {
		t.Errorf("alice was asked %q", p)
	}
}

// A modern upstream logs a call at the calling session's level (debug when
// it set none), and its progress and log messages reach that session only,
// under the session's own progress token. Covers IM-2.
func TestModernUpstreamProgressAndLogsReachTheCallerStdio(t *testing.T) {
	url := relayGatewayOf(t, upstreamtest.ModernStdioServerArg)
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
	progress := aNotes.of("notifications/progress")
	if len(progress) != 3 {
		t.Fatalf("alice got %d progress notifications, want 3: %v", len(progress), progress)
	}
	for i, p := range progress {
		if p["progressToken"] != "alice-token" || fmt.Sprint(p["progress"]) != fmt.Sprint(i+1) {
			t.Errorf("progress %d = %v", i, p)
		}
	}
	if got := logData(aNotes.of("notifications/message")); got != "message debug,message info,message error" {
		t.Errorf("alice's log messages = %q", got)
	}
	if got := callTool(t, b, "chatty", nil, nil); got != "chatted" {
		t.Fatalf("bob's result = %q", got)
	}
	if got := logData(bNotes.of("notifications/message")); got != "message error" {
		t.Errorf("bob's log messages at level error = %q", got)
	}
	if n := len(aNotes.of("notifications/message")); n != 3 {
		t.Errorf("alice got %d messages after bob's call, want still 3", n)
	}
}

func logData(msgs []map[string]any) string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprint(m["data"]))
	}
	return strings.Join(out, ",")
}

// modernOptions reach a modern test server at addr with the credentials
// it checks.
func modernOptions(addr string) upstream.Options {
	return upstream.Options{
		Name: "modern", URL: "http://" + addr + "/mcp", Transport: "http",
		Headers:       map[string]string{"X-Static": "static-value", upstreamtest.SigHeader: "static-loses"},
		Authorization: upstreamtest.Token,
		Signing:       &upstream.HMACSigning{Secret: []byte(upstreamtest.Secret), Header: upstreamtest.SigHeader},
	}
}

// modernHTTPGateway serves a gateway over a modern-only Streamable HTTP
// upstream on loopback; it returns the gateway's URL and the upstream.
func modernHTTPGateway(t *testing.T) (string, *upstreamtest.ModernHTTP) {
	t.Helper()
	m := upstreamtest.NewModernHTTP(upstreamtest.CheckAuth(upstream.VerifySignature))
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	hub := serve.NewHub()
	opts := modernOptions(strings.TrimPrefix(srv.URL, "http://"))
	opts.Hub = hub
	up, err := upstream.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return serveImported(t, up, hub, 30*time.Second), m
}

// A client's resources/subscribe to a modern upstream's resource becomes
// part of the upstream's subscriptions/listen filter: the request is
// opened again with the URI, the old one closed only after the new one is
// acknowledged, so that list changes are heard throughout. The upstream's
// notifications/resources/updated reaches the subscribed sessions and no
// other; when the last one unsubscribes the filter drops the URI. The
// removed resources/subscribe is never sent. Covers IM-2, IM-25, IM-34.
func TestModernUpstreamResourceUpdatesGoToSubscribersHTTP(t *testing.T) {
	url, m := modernHTTPGateway(t)
	a, aNotes := relayClient(t, url, "alice")
	b, bNotes := relayClient(t, url, "bob")
	c, cNotes := relayClient(t, url, "carol") // stays subscribed longest
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listeningTo := func(want string) {
		t.Helper()
		waittest.Succeeds(t, 10*time.Second, "the upstream's listen filter", func() error {
			if _, open := m.Listening(); len(open) != 1 || open[0] != want {
				return fmt.Errorf("open listen requests name %q, want one naming %q", open, want)
			}
			return nil
		})
	}
	listeningTo("")
	sub := mcpgo.SubscribeRequest{Params: mcpgo.SubscribeParams{URI: "test://doc"}}
	for _, cl := range []*client.Client{a, c} {
		if err := cl.Subscribe(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	listeningTo("test://doc")
	touch := map[string]any{"uri": "test://doc"}
	if got := callTool(t, b, "touch", touch, nil); got != "touched 1" {
		t.Fatalf("touch = %q", got)
	}
	waitNotes(t, aNotes, "notifications/resources/updated", 1)
	if u := aNotes.of("notifications/resources/updated"); u[0]["uri"] != "test://doc" {
		t.Fatalf("alice got %v", u)
	}
	if err := a.Unsubscribe(ctx, mcpgo.UnsubscribeRequest{Params: mcpgo.UnsubscribeParams{URI: "test://doc"}}); err != nil {
		t.Fatal(err)
	}
	callTool(t, b, "touch", touch, nil)
	waitNotes(t, cNotes, "notifications/resources/updated", 2)
	// A barrier instead of a pause, which also shows list changes are
	// still heard on the re-opened request: the upstream announces grow's
	// change after the update, and the list_changed reaches alice and bob
	// on the stream an update would have taken.
	if got := callTool(t, b, "grow", nil, nil); got != "ok" {
		t.Fatalf("grow = %q", got)
	}
	for _, n := range []*notes{aNotes, bNotes} {
		waitNotes(t, n, "notifications/tools/list_changed", 1)
	}
	if n := len(aNotes.of("notifications/resources/updated")); n != 1 {
		t.Fatalf("alice got %d updates, want only the one from before she unsubscribed", n)
	}
	if u := bNotes.of("notifications/resources/updated"); len(u) != 0 {
		t.Fatalf("bob never subscribed and got %v", u)
	}
	if err := c.Unsubscribe(ctx, mcpgo.UnsubscribeRequest{Params: mcpgo.UnsubscribeParams{URI: "test://doc"}}); err != nil {
		t.Fatal(err)
	}
	listeningTo("")

	log, _ := m.Listening()
	open := 0
	for i, e := range log {
		if strings.HasPrefix(e, "open") {
			open++
		} else {
			open--
		}
		if open == 0 && i > 0 {
			t.Errorf("no listen request open after %q: %q", e, log)
		}
	}
	if want := []string{"open ", "open test://doc", "close ", "open ", "close test://doc"}; !slices.Equal(log, want) {
		t.Errorf("listen requests %q, want %q", log, want)
	}
	methods, bad := m.Seen()
	for _, p := range bad {
		t.Error(p)
	}
	for _, x := range methods {
		if strings.HasPrefix(x, "resources/subscribe") || strings.HasPrefix(x, "resources/unsubscribe") || strings.HasPrefix(x, "legacy POST resources") {
			t.Errorf("sent %s to a modern upstream", x)
		}
	}
}

// Over Streamable HTTP too, a modern upstream's input_required result of a
// call reaches the client session that made the call and no other, and
// its answer continues the call. Covers IM-2.
func TestModernUpstreamInputRelayedToTheCallerHTTP(t *testing.T) {
	url, m := modernHTTPGateway(t)
	aliceUser, bobUser := &accepter{}, &accepter{}
	alice, bob := &sampler{name: "alice"}, &sampler{name: "bob"}
	c, _ := relayClientStream(t, url, "alice", false, client.WithElicitationHandler(aliceUser), client.WithSamplingHandler(alice))
	relayClient(t, url, "bob", client.WithElicitationHandler(bobUser), client.WithSamplingHandler(bob))

	if got := callTool(t, c, "ask", nil, nil); got != "action=accept state=st-1" {
		t.Errorf("ask = %q", got)
	}
	if got := aliceUser.messages(); len(got) != 1 || got[0] != "go ahead?" {
		t.Errorf("alice was asked %q", got)
	}
	if got := callTool(t, c, "sample", nil, nil); got != "sampled: from alice" {
		t.Errorf("sample = %q", got)
	}
	if p := alice.prompts(); len(p) != 1 || !strings.Contains(p[0], "2+2") {
		t.Errorf("alice's model was asked %q", p)
	}
	if got, p := bobUser.messages(), bob.prompts(); len(got) != 0 || len(p) != 0 {
		t.Errorf("bob was asked %q and %q for alice's calls", got, p)
	}
	methods, bad := m.Seen()
	for _, p := range bad {
		t.Error(p)
	}
	// Each call went twice: the round that asked, and its continuation.
	if n := len(slices.DeleteFunc(methods, func(x string) bool { return x != "tools/call" })); n != 4 {
		t.Errorf("%d tools/call requests, want 4: %q", n, methods)
	}
}
