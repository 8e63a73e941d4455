package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/mcptest"
)

// sessionless is a 2026-07-28 client of one actor: every call it makes is
// a request of its own, with no session to tie two together.
type sessionless struct {
	c *mcptest.Client
}

func newSessionless(url, actor string) *sessionless {
	return &sessionless{c: mcptest.New(url, &mcptest.Options{Header: http.Header{"X-Test-Actor": {actor}, "X-Test-Roles": {"MEMBER"}}})}
}

// start sends a tools/call that asks for every log message and declares
// sampling; extra are more params members (a progress token in _meta, a
// retry's answers), as JSON text after a comma.
func (s *sessionless) start(ctx context.Context, t *testing.T, tool string, args map[string]any, progress string, extra string) *mcptest.Stream {
	t.Helper()
	st, err := s.open(ctx, tool, args, progress, extra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// open is start for any goroutine: the caller closes the stream.
func (s *sessionless) open(ctx context.Context, tool string, args map[string]any, progress string, extra string) (*mcptest.Stream, error) {
	a, _ := json.Marshal(args)
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/logLevel":"debug"`
	if progress != "" {
		meta += fmt.Sprintf(`,"progressToken":%q`, progress)
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{%s}%s}}`, s.c.NextID(), tool, a, meta, extra)
	st, err := s.c.Send(ctx, []byte(body), http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {tool}})
	if err != nil {
		return nil, err
	}
	if st.Status != http.StatusOK {
		_ = st.Close()
		return nil, fmt.Errorf("%s: HTTP %d", tool, st.Status)
	}
	return st, nil
}

// answered reads a call's stream to its answer: the notifications before
// it, and the result.
func answered(t *testing.T, st *mcptest.Stream) ([]mcptest.Message, toolAnswer) {
	t.Helper()
	notes, result, err := answer(st.Next)
	if err != nil {
		t.Fatal(err)
	}
	return notes, result
}

// answer reads messages from next up to the answer: the notifications
// before it, and the result.
func answer(next func() (mcptest.Message, error)) (notes []mcptest.Message, result toolAnswer, err error) {
	for {
		m, err := next()
		if err != nil {
			return notes, result, fmt.Errorf("the stream ended before the answer: %w (notifications so far %s)", err, raws(notes))
		}
		if !m.IsResponse() {
			notes = append(notes, m)
			continue
		}
		if m.Error != nil {
			return notes, result, fmt.Errorf("answered with an error: %s", m.Raw)
		}
		if err := json.Unmarshal(m.Result, &result); err != nil {
			return notes, result, fmt.Errorf("result %s: %w", m.Result, err)
		}
		return notes, result, nil
	}
}

// call makes a call and reads it to its answer.
func (s *sessionless) call(ctx context.Context, t *testing.T, tool string, args map[string]any) ([]mcptest.Message, toolAnswer) {
	t.Helper()
	return answered(t, s.start(ctx, t, tool, args, "", ""))
}

// toolAnswer is what the tests read of a 2026-07-28 tools/call's result.
type toolAnswer struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
}

func (a toolAnswer) text() string {
	var out []string
	for _, c := range a.Content {
		out = append(out, c.Text)
	}
	return strings.Join(out, "")
}

func raws(ms []mcptest.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.Raw))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// logMessages are the data of the notifications/message among ms.
func logMessages(ms []mcptest.Message) []string {
	var out []string
	for _, m := range ms {
		if m.Method == "notifications/message" {
			var p struct {
				Data any `json:"data"`
			}
			_ = json.Unmarshal(m.Params, &p)
			out = append(out, fmt.Sprint(p.Data))
		}
	}
	return out
}

// SV-1: two 2026-07-28 clients of different actors call one stdio
// upstream, where log messages and sampling requests name no call. While
// both have a call in flight, the upstream's log messages during alice's
// call reach neither client and its sampling request is refused: neither
// is sent to bob, who has nothing to tell them from his own. Once alice's
// call is the only one in flight, they reach her, and her answer reaches
// the upstream.
func TestSessionlessClientsGetNoUnattributedTrafficOfAnotherStdio(t *testing.T) {
	url := relayGateway(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	alice, bob := newSessionless(url, "alice"), newSessionless(url, "bob")

	// Bob's call stays in flight until released; its progress says it
	// reached the upstream.
	held := bob.start(ctx, t, "hold", map[string]any{"key": "bob"}, "bob-hold", "")
	var bobNotes []mcptest.Message
	for {
		m, err := held.Next()
		if err != nil {
			t.Fatalf("bob's call: %v", err)
		}
		if m.IsResponse() {
			t.Fatalf("bob's call answered before it was released: %s", m.Raw)
		}
		bobNotes = append(bobNotes, m)
		if m.Method == "notifications/progress" {
			break
		}
	}

	// From here bob's stream is read as it comes, so that anything sent
	// to him shows at once.
	toBob := held.Messages(16)
	fromBob := func() (mcptest.Message, error) {
		m, ok := <-toBob
		if !ok {
			return m, io.EOF
		}
		return m, nil
	}

	notes, res := alice.call(ctx, t, "chatty", nil)
	if res.text() != "chatted" {
		t.Fatalf("alice's chatty = %+v", res)
	}
	if got := logMessages(notes); len(got) != 0 {
		t.Errorf("alice got log messages %q while bob's call was in flight too", got)
	}
	asked := make(chan toolAnswer, 1)
	askFailed := make(chan error, 1)
	go func() {
		st, err := alice.open(ctx, "ask", map[string]any{"prompt": "alice's secret"}, "", "")
		if err != nil {
			askFailed <- err
			return
		}
		defer st.Close()
		_, res, err := answer(st.Next)
		if err != nil {
			askFailed <- err
			return
		}
		asked <- res
	}()
	select {
	case res = <-asked:
	case err := <-askFailed:
		t.Fatalf("alice's ask beside bob's call: %v", err)
	case m := <-toBob:
		t.Fatalf("during alice's calls, bob was sent %s", m.Raw)
	}
	if res.ResultType == "input_required" || !strings.Contains(res.text(), "cannot be attributed") {
		t.Errorf("alice's ask beside bob's call = %+v, want the gateway's refusal", res)
	}

	if _, res := alice.call(ctx, t, "release", map[string]any{"key": "bob"}); res.text() != "released" {
		t.Fatalf("release = %+v", res)
	}
	rest, res, err := answer(fromBob)
	if err != nil {
		t.Fatalf("bob's call: %v", err)
	}
	bobNotes = append(bobNotes, rest...)
	if res.text() != "released" {
		t.Errorf("bob's call = %+v, want released", res)
	}
	if got := logMessages(bobNotes); len(got) != 0 {
		t.Errorf("bob got alice's log messages %q", got)
	}
	if m, err := fromBob(); err != io.EOF {
		t.Errorf("after bob's answer: %s %v, want the stream's end", m.Raw, err)
	}

	// Alone in flight, alice's call is told its log messages and asked
	// its sampling request, and her answer reaches the upstream.
	notes, res = alice.call(ctx, t, "chatty", nil)
	if got := strings.Join(logMessages(notes), ","); res.text() != "chatted" || got != "message debug,message info,message error" {
		t.Errorf("alice alone: chatty = %+v, log messages %q", res, got)
	}
	_, res = alice.call(ctx, t, "ask", map[string]any{"prompt": "alice's secret"})
	if res.ResultType != "input_required" || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("alice alone: ask = %+v, want her input request", res)
	}
	var key string
	for k, r := range res.InputRequests {
		if r.Method != "sampling/createMessage" || !strings.Contains(string(r.Params), "alice's secret") {
			t.Fatalf("alice was asked %s %s", r.Method, r.Params)
		}
		key = k
	}
	k, _ := json.Marshal(key)
	state, _ := json.Marshal(res.RequestState)
	answer := `{"role":"assistant","content":{"type":"text","text":"from alice"},"model":"m"}`
	_, res = answered(t, alice.start(ctx, t, "ask", map[string]any{"prompt": "alice's secret"}, "",
		`,"requestState":`+string(state)+`,"inputResponses":{`+string(k)+`:`+answer+`}`))
	if !strings.Contains(res.text(), "from alice") {
		t.Errorf("alice's answered ask = %+v", res)
	}
}
