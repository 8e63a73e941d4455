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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// elicitingUpstream is a legacy mcp-go server over loopback HTTP whose
// ask_user tool asks its caller a question during the call and reports
// each answer it got on answers.
type elicitingUpstream struct {
	url     string
	answers chan mcpgo.ElicitationResult
}

func startElicitingUpstream(t *testing.T) *elicitingUpstream {
	t.Helper()
	u := &elicitingUpstream{answers: make(chan mcpgo.ElicitationResult, 8)}
	up := server.NewMCPServer("eliciting", "1", server.WithToolCapabilities(true), server.WithElicitation())
	up.AddTool(mcpgo.NewTool("ask_user", mcpgo.WithString("topic")), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		res, err := up.RequestElicitation(ctx, mcpgo.ElicitationRequest{Params: mcpgo.ElicitationParams{
			Message:         "Which colour for " + req.GetString("topic", "") + "?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"colour": map[string]any{"type": "string"}}},
		}})
		if err != nil {
			u.answers <- mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: "error: " + mcpgo.ElicitationResponseAction(err.Error())}}
			return mcpgo.NewToolResultError("elicitation failed: " + err.Error()), nil
		}
		u.answers <- *res
		return mcpgo.NewToolResultText(fmt.Sprintf("answer %s %v", res.Action, res.Content)), nil
	})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(up))
	t.Cleanup(srv.Close)
	u.url = srv.URL + "/mcp"
	return u
}

// serveRelayed serves up's tools (reads) on a loopback endpoint whose
// operator wait, the bound of a parked call, is wait.
func serveRelayed(t *testing.T, upURL string, wait time.Duration) (string, *serve.Endpoint) {
	t.Helper()
	return serveRelayedWith(t, upURL, wait, serve.EndpointOptions{})
}

// serveRelayedWith is serveRelayed with opts' SessionKey, Replica, Peers
// and ForwardKey.
func serveRelayedWith(t *testing.T, upURL string, wait time.Duration, opts serve.EndpointOptions) (string, *serve.Endpoint) {
	t.Helper()
	hub := serve.NewHub()
	up, err := upstream.New(upstream.Options{Name: "up", URL: upURL, Transport: "http", Hub: hub})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{Name: "up", DefaultKind: core.KindRead, Timeout: time.Minute, Upstream: up}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := im.Start(ctx); err != nil {
		t.Fatal(err)
	}
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("relay-test-secret-0123456789abcdefgh"), Ledger: memory.NewMemStore(), ApprovalWait: wait})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: "/mcp", Registry: reg, Catalog: im, Hub: hub, Actor: testActor, Gate: gate,
		SessionKey: opts.SessionKey, Replica: opts.Replica, Peers: opts.Peers, ForwardKey: opts.ForwardKey})
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
	return srv.URL + "/mcp", ep
}

// modernRelayClient is mcp-go's client pinned to revision 2026-07-28,
// failing the test if anything else was negotiated.
func modernRelayClient(t *testing.T, url, actor string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"X-Test-Actor": actor, "X-Test-Roles": "MEMBER"}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, append([]client.ClientOption{client.WithProtocolVersion(mcpgo.ProtocolVersion20260728)}, opts...)...)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.ProtocolVersion20260728
	req.Params.ClientInfo = mcpgo.Implementation{Name: actor, Version: "1"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != mcpgo.ProtocolVersion20260728 || c.GetSessionId() != "" {
		t.Fatalf("negotiated %q (session %q), want %s without a session", res.ProtocolVersion, c.GetSessionId(), mcpgo.ProtocolVersion20260728)
	}
	return c
}

type colourUser struct {
	mu    sync.Mutex
	asked []string
}

func (u *colourUser) Elicit(_ context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.asked = append(u.asked, req.Params.Message)
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"colour": "teal"}}}, nil
}

// SV-1: A legacy upstream's elicitation during a 2026-07-28 client's call
// reaches that client as an input request; its answer goes back to the
// upstream and the call's result to the client. Nothing is left parked.
func TestModernClientAnswersUpstreamElicitation(t *testing.T) {
	up := startElicitingUpstream(t)
	url, ep := serveRelayed(t, up.url, time.Minute)
	user := &colourUser{}
	c := modernRelayClient(t, url, "alice", client.WithElicitationHandler(user), client.WithMaxInputRoundTrips(3))
	if got := callTool(t, c, "ask_user", map[string]any{"topic": "the door"}, nil); got != "answer accept map[colour:teal]" {
		t.Errorf("result = %q, want the upstream's answer built from the client's", got)
	}
	if got := up.next(t); got.Action != mcpgo.ElicitationResponseActionAccept || fmt.Sprint(got.Content) != "map[colour:teal]" {
		t.Errorf("the upstream got %+v", got)
	}
	user.mu.Lock()
	if len(user.asked) != 1 || user.asked[0] != "Which colour for the door?" {
		t.Errorf("the user was asked %q", user.asked)
	}
	user.mu.Unlock()
	if n := ep.RelaysForTest(); n != 0 {
		t.Errorf("%d calls still kept after their result", n)
	}
}

// SV-1: A modern-only upstream's input requests (elicitation, sampling) reach a
// 2026-07-28 client the same way.
func TestModernClientAnswersModernUpstreamStdio(t *testing.T) {
	url := relayGatewayOf(t, upstreamtest.ModernStdioServerArg)
	user := &accepter{}
	alice := &sampler{name: "alice"}
	c := modernRelayClient(t, url, "alice", client.WithElicitationHandler(user), client.WithSamplingHandler(alice))
	if got := callTool(t, c, "ask", nil, nil); got != "action=accept state=st-1" {
		t.Errorf("ask = %q", got)
	}
	if m := user.messages(); len(m) != 1 || m[0] != "go ahead?" {
		t.Errorf("the user was asked %q", m)
	}
	if got := callTool(t, c, "sample", nil, nil); got != "sampled: from alice" {
		t.Errorf("sample = %q", got)
	}
}

// SV-1: A 2026-07-28 client that declared no elicitation is not asked: the
// upstream's request is refused to it, as before, and the call answers.
func TestModernClientWithoutElicitationIsNotAsked(t *testing.T) {
	up := startElicitingUpstream(t)
	url, _ := serveRelayed(t, up.url, time.Minute)
	c := modernRelayClient(t, url, "alice")
	if got := callTool(t, c, "ask_user", map[string]any{"topic": "x"}, nil); !strings.Contains(got, "elicitation failed") {
		t.Errorf("result = %q, want the upstream's failure", got)
	}
	if got := up.next(t); !strings.HasPrefix(string(got.Action), "error: ") {
		t.Errorf("the upstream got %+v, want a refusal", got)
	}
}

// relayHeaders are a 2026-07-28 tools/call's headers.
var relayHeaders = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ask_user"}

const elicitingMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// postModern posts one 2026-07-28 request as actor and returns the
// status and the decoded answer.
func postModern(t *testing.T, url, actor, body string) (int, map[string]json.RawMessage) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-Actor", actor)
	req.Header.Set("X-Test-Roles", "MEMBER")
	for k, v := range relayHeaders {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("HTTP %d, not JSON: %s", resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// askUser starts a call of ask_user by hand and returns the input request
// handed out: its key and the requestState.
func askUser(t *testing.T, url, topic string) (key, state string) {
	t.Helper()
	code, ans := postModern(t, url, "alice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask_user","arguments":{"topic":"`+topic+`"},`+elicitingMeta+`}}`)
	var res struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string `json:"method"`
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
	}
	_ = json.Unmarshal(ans["result"], &res)
	if code != http.StatusOK || res.ResultType != "input_required" || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("the first answer: HTTP %d %s", code, mustJSON(ans))
	}
	for k, r := range res.InputRequests {
		if r.Method != "elicitation/create" || r.Params.Message != "Which colour for "+topic+"?" {
			t.Fatalf("input request %s = %+v, want the upstream's own", k, r)
		}
		key = k
	}
	return key, res.RequestState
}

func retry(t *testing.T, url, actor, topic, key, state, answer string) (int, map[string]json.RawMessage) {
	t.Helper()
	st, _ := json.Marshal(state)
	k, _ := json.Marshal(key)
	return postModern(t, url, actor, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_user","arguments":{"topic":"`+topic+`"},`+
		`"requestState":`+string(st)+`,"inputResponses":{`+string(k)+`:`+answer+`},`+elicitingMeta+`}}`)
}

func errorMessage(ans map[string]json.RawMessage) string {
	var e struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(ans["error"], &e)
	return e.Message
}

// SV-1: The state of a relayed request is the gateway's own, bound to the
// caller, tool and arguments, and single use; an answer must name the
// request asked. Each misuse is refused with a clear error, passes
// nothing to the upstream, and leaves the call waiting for the real answer.
func TestModernRelayedInputBadRetries(t *testing.T) {
	up := startElicitingUpstream(t)
	url, ep := serveRelayed(t, up.url, time.Minute)
	key, state := askUser(t, url, "the roof")
	good := `{"action":"accept","content":{"colour":"red"}}`

	payload, sig, _ := strings.Cut(state, ".")
	forged := payload[:len(payload)-2] + "AA." + sig
	for _, bad := range []struct {
		name, actor, topic, key, state, answer, want string
	}{
		{"forged", "alice", "the roof", key, forged, good, "not one this gateway handed out"},
		{"another actor", "mallory", "the roof", key, state, good, "another caller, tool or arguments"},
		{"other arguments", "alice", "the wall", key, state, good, "another caller, tool or arguments"},
		{"answer to another request", "alice", "the roof", key + "x", state, good, "has no answer"},
		{"answer not an object", "alice", "the roof", key, state, `"red"`, "not a result object"},
	} {
		code, ans := retry(t, url, bad.actor, bad.topic, bad.key, bad.state, bad.answer)
		if code != http.StatusBadRequest || !strings.Contains(errorMessage(ans), bad.want) {
			t.Errorf("%s: HTTP %d %s, want 400 saying %q", bad.name, code, mustJSON(ans), bad.want)
		}
	}
	select {
	case got := <-up.answers:
		t.Fatalf("the upstream got %+v from a refused retry", got)
	default:
	}

	code, ans := retry(t, url, "alice", "the roof", key, state, good)
	if code != http.StatusOK || !strings.Contains(string(ans["result"]), "answer accept map[colour:red]") {
		t.Fatalf("the real answer: HTTP %d %s", code, mustJSON(ans))
	}
	if got := up.next(t); got.Action != mcpgo.ElicitationResponseActionAccept {
		t.Errorf("the upstream got %+v", got)
	}
	code, ans = retry(t, url, "alice", "the roof", key, state, good)
	if code != http.StatusBadRequest || !strings.Contains(errorMessage(ans), "already used") {
		t.Errorf("a replay: HTTP %d %s", code, mustJSON(ans))
	}
	if n := ep.RelaysForTest(); n != 0 {
		t.Errorf("%d calls still kept", n)
	}
}

// SV-1, SV-2: Where replicas do not pass requests on (no shared store, or
// the replica holding the call is gone), a retry reaching a replica other
// than the one its call waits in is refused there with a message naming
// that replica, and loses nothing: the state is not spent, and the same retry
// at the right replica still answers the upstream.
func TestModernRelayedInputOtherReplica(t *testing.T) {
	up := startElicitingUpstream(t)
	key := []byte("a session key both replicas share")[:32]
	urlA, _ := serveRelayedWith(t, up.url, time.Minute, serve.EndpointOptions{SessionKey: key, Replica: "host-a:1"})
	urlB, _ := serveRelayedWith(t, up.url, time.Minute, serve.EndpointOptions{SessionKey: key, Replica: "host-b:2"})
	input, state := askUser(t, urlA, "the door")
	good := `{"action":"accept","content":{"colour":"blue"}}`
	code, ans := retry(t, urlB, "alice", "the door", input, state, good)
	if code != http.StatusBadRequest || !strings.Contains(errorMessage(ans), `replica "host-a:1"`) || !strings.Contains(errorMessage(ans), "nothing was passed on") {
		t.Fatalf("the retry at the other replica: HTTP %d %s", code, mustJSON(ans))
	}
	select {
	case got := <-up.answers:
		t.Fatalf("the upstream got %+v from the other replica", got)
	default:
	}
	code, ans = retry(t, urlA, "alice", "the door", input, state, good)
	if code != http.StatusOK || !strings.Contains(string(ans["result"]), "answer accept map[colour:blue]") {
		t.Fatalf("the retry at its own replica: HTTP %d %s", code, mustJSON(ans))
	}
}

// SV-1, CF-5: A client that never comes back: once the operator wait passes, the
// upstream is told the question was dismissed ("cancel"), its call ends,
// and nothing is kept. A late answer is refused.
func TestModernRelayedInputClientGone(t *testing.T) {
	up := startElicitingUpstream(t)
	url, ep := serveRelayed(t, up.url, 300*time.Millisecond)
	key, state := askUser(t, url, "the gate")
	if got := up.next(t); got.Action != mcpgo.ElicitationResponseActionCancel {
		t.Errorf("the upstream got %+v, want cancel", got)
	}
	waittest.Succeeds(t, 10*time.Second, "the parked call to be dropped", func() error {
		if n := ep.RelaysForTest(); n != 0 {
			return fmt.Errorf("%d kept", n)
		}
		return nil
	})
	code, ans := retry(t, url, "alice", "the gate", key, state, `{"action":"accept","content":{"colour":"red"}}`)
	if code != http.StatusBadRequest || len(ans["error"]) == 0 {
		t.Errorf("a late answer: HTTP %d %s", code, mustJSON(ans))
	}
}

// SV-1, SV-9: Closing the endpoint ends a call parked for its client: the upstream
// hears at once, long before the wait (an hour here) would have passed.
func TestModernRelayedInputEndsOnClose(t *testing.T) {
	up := startElicitingUpstream(t)
	url, ep := serveRelayed(t, up.url, time.Hour)
	askUser(t, url, "the shed")
	if err := ep.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The question is dismissed and the call withdrawn at once: the
	// upstream hears of whichever comes first.
	if got := up.next(t); got.Action != mcpgo.ElicitationResponseActionCancel && !strings.Contains(string(got.Action), "canceled") {
		t.Errorf("the upstream got %+v, want its question dismissed or its call cancelled", got)
	}
	if n := ep.RelaysForTest(); n != 0 {
		t.Errorf("%d calls still kept after Close", n)
	}
}

// next is the upstream's next answer, waited for within a bound.
func (u *elicitingUpstream) next(t *testing.T) mcpgo.ElicitationResult {
	t.Helper()
	select {
	case got := <-u.answers:
		return got
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream's question was never answered")
		return mcpgo.ElicitationResult{}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// postModernCtx posts one 2026-07-28 message as actor under ctx, with the
// headers of method (and tool, for a call), and returns the status.
func postModernCtx(ctx context.Context, url, actor, method, tool, body string) (int, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-Actor", actor)
	req.Header.Set("X-Test-Roles", "MEMBER")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if tool != "" {
		req.Header.Set("Mcp-Name", tool)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// SV-1: A 2026-07-28 client cancels a call in flight by closing its request
// (the revision's way over HTTP) or, where it sends one anyway, with
// notifications/cancelled naming the call's id; either way the upstream's
// call is cancelled, whether or not the client declared elicitation. A
// notification from another caller naming the same id cancels nothing.
func TestModernClientCancelsCallInFlightStdio(t *testing.T) {
	url := relayGateway(t)
	for _, tc := range []struct {
		name, caps string
		notify     bool
	}{
		{"stream closed, elicitation declared", `{"elicitation":{}}`, false},
		{"notification, elicitation declared", `{"elicitation":{}}`, true},
		{"notification, nothing declared", `{}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "cancelled")
			meta := strings.Replace(elicitingMeta, `{"elicitation":{}}`, tc.caps, 1)
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"call-9","method":"tools/call","params":{"name":"wait","arguments":{"marker":%q},%s}}`, marker, meta)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan string, 1)
			go func() {
				code, b, err := postModernCtx(ctx, url, "alice", "tools/call", "wait", body)
				done <- fmt.Sprint(code, " ", string(b), " ", err)
			}()
			waitFile(t, marker+".started", "the call reaching the upstream")
			if !tc.notify {
				cancel()
			} else {
				note := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-9","reason":"stop",` + meta + `}}`
				// Another caller naming the same id is no one's to cancel.
				if _, _, err := postModernCtx(t.Context(), url, "mallory", "notifications/cancelled", "", note); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(marker); err == nil {
					t.Fatal("another caller's notification cancelled alice's call")
				}
				if _, _, err := postModernCtx(t.Context(), url, "alice", "notifications/cancelled", "", note); err != nil {
					t.Fatal(err)
				}
			}
			waitFile(t, marker, "the upstream's call being cancelled")
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the cancelled call's request did not end")
			}
		})
	}
}
