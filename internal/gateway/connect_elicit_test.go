package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/internal/oidctest"
)

// urlClient is an mcp-go session on revision 2025-11-25 that declared
// URL-mode elicitation: each elicitation/create it gets goes to asked and
// is answered with answer; notifications/elicitation/complete go to
// completed.
type urlClient struct {
	*session
	asked     chan mcpgo.ElicitationParams
	completed chan string
	mu        sync.Mutex
	answer    mcpgo.ElicitationResponseAction
}

// callOutcome is a tools/call's answer or error.
type callOutcome struct {
	res *mcpgo.CallToolResult
	err error
}

// callInBackground calls tool on c and delivers the outcome on the
// channel, so a test can answer what the call asks meanwhile.
func callInBackground(ctx context.Context, c interface {
	CallTool(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error)
}, tool string) <-chan callOutcome {
	done := make(chan callOutcome, 1)
	go func() {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = tool
		res, err := c.CallTool(ctx, req)
		done <- callOutcome{res, err}
	}()
	return done
}

func connectURLClient(t *testing.T, ctx context.Context, url, key string) *urlClient {
	t.Helper()
	u := &urlClient{asked: make(chan mcpgo.ElicitationParams, 4), completed: make(chan string, 4), answer: mcpgo.ElicitationResponseActionAccept}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	streaming := make(chan struct{})
	st, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: streamSignal{next: tr, opened: sync.OnceFunc(func() { close(streaming) })}}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}),
		transport.WithContinuousListening(),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(st, client.WithProtocolVersion(mcpgo.ProtocolVersion20251125),
		client.WithElicitationHandler(elicitFunc(func(_ context.Context, r mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
			u.asked <- r.Params
			u.mu.Lock()
			defer u.mu.Unlock()
			return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: u.answer}}, nil
		})))
	u.session = &session{Client: c, listChanged: make(chan struct{}, 1), end: sync.OnceFunc(func() {
		_ = c.Close()
		tr.CloseIdleConnections()
	})}
	t.Cleanup(u.end)
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		switch n.Method {
		case string(mcpgo.MethodNotificationElicitationComplete):
			id, _ := n.Params.AdditionalFields["elicitationId"].(string)
			u.completed <- id
		case mcpgo.MethodNotificationToolsListChanged:
			select {
			case u.listChanged <- struct{}{}:
			default:
			}
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.ProtocolVersion20251125
	init.Params.ClientInfo = mcpgo.Implementation{Name: "toolgate-url-elicitation-test", Version: "1.0.0"}
	init.Params.Capabilities.Elicitation = &mcpgo.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}
	if u.init, err = c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if u.init.ProtocolVersion != mcpgo.ProtocolVersion20251125 {
		t.Fatalf("negotiated %s, want 2025-11-25", u.init.ProtocolVersion)
	}
	select {
	case <-streaming:
	case <-ctx.Done():
		t.Fatalf("%s: the GET stream did not open: %v", url, ctx.Err())
	}
	return u
}

// UI-2: an actor not yet connected to a perActor upstream whose client
// declared URL-mode elicitation is asked to open the connect link through
// the client (elicitation/create, mode url, a fresh elicitationId) instead
// of reading it in an isError result. Once the person has signed in at the
// provider through that link, the same call goes on and reaches the
// upstream — a second toolgate checking the provider's JWTs — as alice, and
// the session is sent notifications/elicitation/complete with the
// elicitation's id. bob, whose client declines, gets the isError answer
// with his own link, and nothing reaches the upstream.
func TestConnectByURLElicitation(t *testing.T) {
	ctx := testCtx(t)
	issuer := oidctest.Start(t)
	up := upstreamGateway(t, issuer)
	log := &transcript{}
	_, base := frontGateway(t, "http://"+up.Addr()+"/mcp", log)
	const tool, upTool = "crm_notes_list_notes", "notes_list_notes"

	// No account is connected yet: the upstream lists crm_connect, and
	// calling it is the call that asks.
	alice := connectURLClient(t, ctx, base+"/mcp", aliceOAuthKey)
	waitServed(t, ctx, alice.session, []string{"crm_connect"}, nil)

	done := callInBackground(ctx, alice, "crm_connect")
	var asked mcpgo.ElicitationParams
	select {
	case asked = <-alice.asked:
	case o := <-done:
		t.Fatalf("the call answered without asking: %+v %v", o.res, o.err)
	case <-ctx.Done():
		t.Fatal("alice's client was never asked")
	}
	if asked.Mode != mcpgo.ElicitationModeURL || asked.ElicitationID == "" || !connectURLRE.MatchString(asked.URL) || asked.URL != connectURLRE.FindString(asked.URL) {
		t.Fatalf("asked %+v, want a URL elicitation with an id and the connect link", asked)
	}
	if !strings.Contains(asked.Message, "crm") {
		t.Errorf("the message %q does not name the upstream", asked.Message)
	}
	// The person opens the link and signs in; the call has been waiting.
	b := oidctest.Browser(t)
	cb := oidctest.SignIn(t, b, asked.URL, "alice")
	if code, page := oidctest.Open(t, b, cb); code != http.StatusOK || !strings.Contains(page, "Connected") {
		t.Fatalf("callback answered %d: %s", code, page)
	}
	var o callOutcome
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatal("the call did not go on once alice connected")
	}
	if o.err != nil || o.res.IsError || !strings.Contains(resultText(o.res), "connected") {
		t.Fatalf("crm_connect after connecting through the elicitation: %+v %v", o.res, o.err)
	}
	select {
	case id := <-alice.completed:
		if id != asked.ElicitationID {
			t.Fatalf("notifications/elicitation/complete named %q, want %q", id, asked.ElicitationID)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/elicitation/complete reached the session")
	}
	waitServed(t, ctx, alice.session, []string{tool}, []string{"crm_connect"})
	if res := call(t, ctx, alice.session, tool, nil); res.IsError {
		t.Fatalf("alice's call: %q", resultText(res))
	}
	if got := auditActors(t, up, upTool); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("the upstream audited %q, want alice", got)
	}

	// bob's client declines: the isError answer with his own link.
	bob := connectURLClient(t, ctx, base+"/mcp", bobOAuthKey)
	bob.mu.Lock()
	bob.answer = mcpgo.ElicitationResponseActionDecline
	bob.mu.Unlock()
	waitServed(t, ctx, bob.session, []string{tool}, nil)
	res := call(t, ctx, bob.session, tool, nil)
	var bobAsked mcpgo.ElicitationParams
	select {
	case bobAsked = <-bob.asked:
	default:
		t.Fatal("bob's client was not asked")
	}
	text := resultText(res)
	if !res.IsError || !strings.Contains(text, "the connect page was not opened (decline)") || connectURLRE.FindString(text) != bobAsked.URL {
		t.Fatalf("bob's declined call answered %v %q, want the link he was asked to open (%s)", res.IsError, text, bobAsked.URL)
	}
	if got := auditActors(t, up, upTool); len(got) != 1 {
		t.Fatalf("bob's declined call reached the upstream: %q", got)
	}
	connectAs(t, text, "bob")
	if res := call(t, ctx, bob.session, tool, nil); res.IsError {
		t.Fatalf("bob's call after connecting by the link: %q", resultText(res))
	}
	if got := auditActors(t, up, upTool); strings.Join(got, ",") != "alice,bob" {
		t.Fatalf("the upstream audited %q, want alice, bob", got)
	}
}

// UI-2 on revision 2026-07-28: a sessionless client that declared
// URL-mode elicitation in its request's capabilities is asked to open the
// connect link as an input request of its call (elicitation/create, mode
// url); its retry accepts, the call waits for the connection, and once
// alice has signed in through the link the same call reaches the upstream
// as alice and answers its result. The catalog was listed through bob's
// connection, made the isError way on a 2025-06-18 session.
func TestConnectByURLElicitationModern(t *testing.T) {
	ctx := testCtx(t)
	issuer := oidctest.Start(t)
	up := upstreamGateway(t, issuer)
	log := &transcript{}
	_, base := frontGateway(t, "http://"+up.Addr()+"/mcp", log)
	const tool, upTool = "crm_notes_list_notes", "notes_list_notes"

	bob := connect(t, ctx, base+"/mcp", bobOAuthKey)
	waitServed(t, ctx, bob, []string{"crm_connect"}, nil)
	connectAs(t, resultText(call(t, ctx, bob, "crm_connect", nil)), "bob")
	call(t, ctx, bob, "crm_connect", nil)
	waitServed(t, ctx, bob, []string{tool}, []string{"crm_connect"})

	asked := make(chan mcpgo.ElicitationParams, 2)
	alice := connectModernAs(t, ctx, base+"/mcp", aliceOAuthKey,
		client.WithClientCapabilities(mcpgo.ClientCapabilities{Elicitation: &mcpgo.ElicitationCapability{URL: &struct{}{}}}),
		client.WithElicitationHandler(elicitFunc(func(_ context.Context, r mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
			asked <- r.Params
			return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept}}, nil
		})))
	done := callInBackground(ctx, alice, tool)
	var p mcpgo.ElicitationParams
	select {
	case p = <-asked:
	case o := <-done:
		t.Fatalf("the call answered without asking: %+v %v", o.res, o.err)
	case <-ctx.Done():
		t.Fatal("alice's client was never asked")
	}
	if p.Mode != mcpgo.ElicitationModeURL || p.ElicitationID == "" || connectURLRE.FindString(p.URL) != p.URL {
		t.Fatalf("asked %+v, want a URL elicitation with an id and the connect link", p)
	}
	b := oidctest.Browser(t)
	cb := oidctest.SignIn(t, b, p.URL, "alice")
	if code, page := oidctest.Open(t, b, cb); code != http.StatusOK || !strings.Contains(page, "Connected") {
		t.Fatalf("callback answered %d: %s", code, page)
	}
	var o callOutcome
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatal("the call did not go on once alice connected")
	}
	if o.err != nil || o.res.IsError {
		t.Fatalf("alice's call after connecting through the elicitation: %+v %v", o.res, o.err)
	}
	if got := auditActors(t, up, upTool); strings.Join(got, ",") != "alice" {
		t.Fatalf("the upstream audited %q, want alice", got)
	}
}

// connectModernAs is connectModern with key as the bearer.
func connectModernAs(t *testing.T, ctx context.Context, url, key string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	st, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: tr}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(st, append([]client.ClientOption{client.WithProtocolVersion(mcpgo.ProtocolVersion20260728)}, opts...)...)
	t.Cleanup(func() {
		_ = c.Close()
		tr.CloseIdleConnections()
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.ProtocolVersion20260728
	init.Params.ClientInfo = mcpgo.Implementation{Name: "modern-url-elicitation-test", Version: "7.28"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != mcpgo.ProtocolVersion20260728 {
		t.Fatalf("negotiated %q, want %s", res.ProtocolVersion, mcpgo.ProtocolVersion20260728)
	}
	return c
}

// UI-2: a call that agreed to open the connect link but ends before the
// person has signed in (here the client gives up on it) does not lose the
// elicitation: when the connection completes, the session that was asked,
// still there, is sent notifications/elicitation/complete with its id on
// its own stream, and its next call runs as alice.
func TestConnectElicitationCompletesAfterTheCall(t *testing.T) {
	ctx := testCtx(t)
	issuer := oidctest.Start(t)
	up := upstreamGateway(t, issuer)
	log := &transcript{}
	_, base := frontGateway(t, "http://"+up.Addr()+"/mcp", log)
	alice := connectURLClient(t, ctx, base+"/mcp", aliceOAuthKey)
	waitServed(t, ctx, alice.session, []string{"crm_connect"}, nil)

	cctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	done := make(chan error, 1)
	go func() {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "crm_connect"
		_, err := alice.CallTool(cctx, req)
		done <- err
	}()
	var asked mcpgo.ElicitationParams
	select {
	case asked = <-alice.asked:
	case err := <-done:
		t.Fatalf("the call answered without asking: %v", err)
	case <-ctx.Done():
		t.Fatal("alice's client was never asked")
	}
	// Once the gateway has the client's "accept" and waits, the client
	// gives up on the call.
	select {
	case <-log.when("URL elicitation accepted"):
	case <-ctx.Done():
		t.Fatal("the gateway never took the client's accept")
	}
	giveUp()
	if err := <-done; err == nil {
		t.Fatal("the call the client gave up on answered")
	}
	select {
	case <-log.when("the call stopped waiting for the actor to connect"):
	case <-ctx.Done():
		t.Fatal("the call the client gave up on went on waiting")
	}
	b := oidctest.Browser(t)
	cb := oidctest.SignIn(t, b, asked.URL, "alice")
	if code, page := oidctest.Open(t, b, cb); code != http.StatusOK || !strings.Contains(page, "Connected") {
		t.Fatalf("callback answered %d: %s", code, page)
	}
	select {
	case id := <-alice.completed:
		if id != asked.ElicitationID {
			t.Fatalf("notifications/elicitation/complete named %q, want %q", id, asked.ElicitationID)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/elicitation/complete reached the session after its call ended")
	}
	if res := call(t, ctx, alice.session, "crm_connect", nil); res.IsError {
		t.Fatalf("crm_connect once connected: %q", resultText(res))
	}
}
