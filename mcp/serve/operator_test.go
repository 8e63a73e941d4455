package serve_test

// Operator approval over MCP (CF-5): a confirming call of a tool that needs
// an operator waits, with progress notifications on its own response
// stream, until the approval queue decides; nothing runs unless approved.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/eventbustest"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/serve"
)

// operatorWait bounds every wait of these tests: a response, an entry in the
// queue. Events are awaited through eventbustest, bounded by its Timeout.
const operatorWait = 15 * time.Second

// operatorServed is an endpoint whose gate sends gh's action tools (here
// gh_delete) to an operator, with the queue and its bus.
type operatorServed struct {
	*served
	gate   *confirm.Gate
	queue  *confirm.ApprovalQueue
	events *core.BusSubscription
}

func serveOperator(t *testing.T, wait time.Duration) *operatorServed {
	t.Helper()
	return serveOperatorSaying(t, wait, confirm.ConfirmMessages{})
}

// serveOperatorSaying is serveOperator with the gate's texts msgs (CF-7).
func serveOperatorSaying(t *testing.T, wait time.Duration, msgs confirm.ConfirmMessages) *operatorServed {
	t.Helper()
	bus := core.NewBus()
	t.Cleanup(bus.Close)
	_, sub := bus.Subscribe(64)
	queue := confirm.NewApprovalQueue(bus)
	gate, err := confirm.NewGate(confirm.GateOptions{
		Secret: []byte("operator-test-secret-0123456789abcdef"), Ledger: memory.NewMemStore(),
		Approvals: queue, ApprovalWait: wait,
		NeedsOperator: func(tool core.Tool) bool { return tool.Source == "gh" }, Messages: msgs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &operatorServed{served: serveEndpoint(t, serve.EndpointOptions{Gate: gate}), gate: gate, queue: queue, events: sub}
}

// previewDelete previews gh_delete {"id":id} and returns the token; the
// preview itself neither waits nor runs anything.
func (s *operatorServed) previewDelete(t *testing.T, c *mcptest.Client, id int) string {
	t.Helper()
	res, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": id}})
	var r struct {
		StructuredContent struct {
			ConfirmToken string `json:"confirmToken"`
		} `json:"structuredContent"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.IsError || r.StructuredContent.ConfirmToken == "" {
		t.Fatalf("preview: %s %s", res, rpcErr)
	}
	if p := s.queue.Pending(); len(p) != 0 {
		t.Fatalf("a preview is waiting for an operator: %+v", p)
	}
	s.checkNothingRan(t, "after the preview")
	return r.StructuredContent.ConfirmToken
}

// checkNothingRan asserts that no call has reached the tool's handler.
func (s *operatorServed) checkNothingRan(t *testing.T, when string) {
	t.Helper()
	select {
	case c := <-s.calls:
		t.Fatalf("%s: the tool ran (%+v)", when, c)
	default:
	}
}

// waitPending polls the queue (bounded) until it holds exactly one entry.
func (s *operatorServed) waitPending(t *testing.T) core.PendingConfirmation {
	t.Helper()
	var p []core.PendingConfirmation
	waittest.Eventually(t, operatorWait, "a pending confirmation", func() bool {
		if p = s.queue.Pending(); len(p) > 1 {
			t.Fatalf("pending: %+v, want one", p)
		}
		return len(p) == 1
	})
	return p[0]
}

// waitQueueEmpty polls the queue (bounded) until it is empty.
func (s *operatorServed) waitQueueEmpty(t *testing.T, when string) {
	t.Helper()
	waittest.Succeeds(t, operatorWait, when+": the queue to empty", func() error {
		if p := s.queue.Pending(); len(p) != 0 {
			return fmt.Errorf("still pending: %+v", p)
		}
		return nil
	})
}

// nextDecision returns the next confirmation.decided event of the queue's
// bus, skipping others (bounded).
func (s *operatorServed) nextDecision(t *testing.T) core.ConfirmationDecided {
	t.Helper()
	var d core.ConfirmationDecided
	eventbustest.Expect(t, s.events, func(e core.ConfirmationDecided) { d = e })
	return d
}

// streamed is one JSON-RPC message of a response, as it arrived.
type streamed struct {
	contentType string
	msg         map[string]json.RawMessage
	err         error
}

// startConfirm sends a confirming tools/call of gh_delete {"id":id} on c's
// session in the background, with a progress token when progressToken is
// not empty. Every message of the answer is delivered on the returned
// channel as soon as it is read (the answer is an SSE stream once the
// server sends a notification); the channel closes when the answer ends.
// cancel drops the connection.
func startConfirm(t *testing.T, c *mcptest.Client, id int, token, progressToken string) (msgs <-chan streamed, cancel func()) {
	t.Helper()
	params := map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": id, "confirm": true, "confirmToken": token}}
	if progressToken != "" {
		params["_meta"] = map[string]any{"progressToken": progressToken}
	}
	p, _ := json.Marshal(params)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, c.NextID(), p)

	ctx, cancelCtx := context.WithTimeout(context.Background(), operatorWait)
	t.Cleanup(cancelCtx)
	out := make(chan streamed, 64)
	go func() {
		defer close(out)
		st, err := c.Send(ctx, []byte(body), nil)
		if err != nil {
			out <- streamed{err: err}
			return
		}
		defer st.Close()
		ct := st.Header.Get("Content-Type")
		if st.Status != http.StatusOK {
			out <- streamed{contentType: ct, err: fmt.Errorf("HTTP %d", st.Status)}
			return
		}
		for {
			m, err := st.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if ctx.Err() == nil {
					out <- streamed{contentType: ct, err: err}
				}
				return
			}
			var msg map[string]json.RawMessage
			err = json.Unmarshal(m.Raw, &msg)
			out <- streamed{contentType: ct, msg: msg, err: err}
		}
	}()
	return out, cancelCtx
}

// next returns the next message of a response (bounded); ok is false when
// the response ended.
func next(t *testing.T, msgs <-chan streamed) (streamed, bool) {
	t.Helper()
	select {
	case m, ok := <-msgs:
		if ok && m.err != nil {
			t.Fatalf("reading the response: %v", m.err)
		}
		return m, ok
	case <-time.After(operatorWait):
		t.Fatalf("no message of the response within %v", operatorWait)
	}
	return streamed{}, false
}

// callResult reads the rest of a response and returns its tools/call
// result, asserting the response then ends.
func callResult(t *testing.T, msgs <-chan streamed) (text string, isError bool) {
	t.Helper()
	for {
		m, ok := next(t, msgs)
		if !ok {
			t.Fatal("the response ended without a result")
		}
		if _, isResponse := m.msg["id"]; !isResponse {
			continue // a notification still in flight
		}
		var r struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
		}
		if err := json.Unmarshal(m.msg["result"], &r); err != nil || len(r.Content) != 1 {
			t.Fatalf("tools/call answer: result %s, error %s", m.msg["result"], m.msg["error"])
		}
		if extra, ok := next(t, msgs); ok {
			t.Fatalf("a message after the result: %v", extra.msg)
		}
		return r.Content[0].Text, r.IsError
	}
}

// CF-5, approved: the confirming call of an operator-approved tool waits in
// the queue (the entry names the tool, its upstream, the actor and the
// canonical arguments, with the default 2 min deadline) and runs nothing;
// the client, which sent a progressToken, receives notifications/progress
// for that token on the call's own SSE response while it waits; once the
// operator approves, the same response carries the tool's result, and the
// tool ran exactly once.
func TestOperatorApproveCF5(t *testing.T) {
	s := serveOperator(t, 0)
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	token := s.previewDelete(t, c, 7)

	msgs, _ := startConfirm(t, c, 7, token, "op-progress-7")
	p := s.waitPending(t)
	if p.ID != confirm.TokenID(token) || p.Tool != "gh_delete" || p.Source != "gh" || p.RemoteName != "delete" ||
		p.Actor.ID != "m" || p.Actor.Tenant != "t1" || string(p.Arguments) != `{"id":7}` || !strings.Contains(p.Preview, "gh_delete") ||
		p.Deadline.Sub(p.Created) != confirm.DefaultApprovalWait {
		t.Errorf("pending confirmation: %+v", p)
	}
	s.checkNothingRan(t, "while waiting for the operator")

	// Progress arrives on the call's own stream before any decision.
	m, ok := next(t, msgs)
	if !ok {
		t.Fatal("the response ended before the operator decided")
	}
	if !strings.HasPrefix(m.contentType, "text/event-stream") {
		t.Fatalf("response Content-Type %q, want an SSE stream", m.contentType)
	}
	var method string
	_ = json.Unmarshal(m.msg["method"], &method)
	var progress struct {
		ProgressToken string  `json:"progressToken"`
		Progress      float64 `json:"progress"`
		Total         float64 `json:"total"`
		Message       string  `json:"message"`
	}
	if err := json.Unmarshal(m.msg["params"], &progress); method != "notifications/progress" || err != nil ||
		progress.ProgressToken != "op-progress-7" || progress.Progress <= 0 || progress.Progress >= progress.Total ||
		progress.Total != confirm.DefaultApprovalWait.Seconds() || !strings.Contains(progress.Message, "operator") {
		t.Fatalf("first message while waiting: %v (params %+v, %v)", m.msg, progress, err)
	}
	if len(s.queue.Pending()) != 1 {
		t.Fatalf("pending after a progress notification: %+v", s.queue.Pending())
	}
	s.checkNothingRan(t, "before the approval")

	if err := s.queue.Approve(p.ID, "operator-1"); err != nil {
		t.Fatal(err)
	}
	text, isErr := callResult(t, msgs)
	if isErr || text != `echo {"id":7}` {
		t.Fatalf("after the approval: %q (isError %v), want the tool's result", text, isErr)
	}
	select {
	case call := <-s.calls:
		if call.Actor.ID != "m" || call.Source != "gh" || call.Session != c.Session() {
			t.Errorf("the approved call: %+v", call)
		}
	case <-time.After(operatorWait):
		t.Fatal("the tool never ran")
	}
	s.checkNothingRan(t, "after one approved run")
	if d := s.nextDecision(t); d.ID != p.ID || d.Decision != core.DecisionApprove || d.By != "operator-1" {
		t.Errorf("decision event: %+v", d)
	}
	if len(s.queue.Pending()) != 0 {
		t.Errorf("still pending after the approval: %+v", s.queue.Pending())
	}
}

// CF-5, rejected: the operator's rejection ends the waiting call with an
// isError result carrying the rejection text, who rejected and the reason;
// the tool never ran and the queue is empty.
func TestOperatorRejectCF5(t *testing.T) {
	s := serveOperator(t, 0)
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	token := s.previewDelete(t, c, 8)

	msgs, _ := startConfirm(t, c, 8, token, "")
	p := s.waitPending(t)
	if err := s.queue.Reject(p.ID, "operator-2", "not on a Friday"); err != nil {
		t.Fatal(err)
	}
	text, isErr := callResult(t, msgs)
	if want := s.gate.Messages().Rejected + ": rejected by operator-2: not on a Friday"; !isErr || text != want {
		t.Fatalf("after the rejection: %q (isError %v), want %q", text, isErr, want)
	}
	s.checkNothingRan(t, "after the rejection")
	if d := s.nextDecision(t); d.ID != p.ID || d.Decision != core.DecisionReject || d.By != "operator-2" || d.Reason != "not on a Friday" {
		t.Errorf("decision event: %+v", d)
	}
	if len(s.queue.Pending()) != 0 {
		t.Errorf("still pending after the rejection: %+v", s.queue.Pending())
	}
	if err := s.queue.Approve(p.ID, "operator-3"); err == nil {
		t.Error("approving a rejected confirmation succeeded")
	}
	s.checkNothingRan(t, "after approving a decided confirmation")
}

// CF-5, timed out: with a short approval wait and no operator the call ends
// with an isError result saying no decision came in time, after about that
// wait; the entry leaves the queue as timed out and the tool never ran.
func TestOperatorTimeoutCF5(t *testing.T) {
	const wait = 300 * time.Millisecond
	s := serveOperator(t, wait)
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	token := s.previewDelete(t, c, 9)

	start := time.Now()
	msgs, _ := startConfirm(t, c, 9, token, "op-progress-9")
	text, isErr := callResult(t, msgs)
	took := time.Since(start)
	if want := "no operator approved this call in time"; !isErr || !strings.Contains(text, want) {
		t.Fatalf("after the wait: %q (isError %v), want an isError result containing %q", text, isErr, want)
	}
	if took < wait || took > wait+5*time.Second {
		t.Errorf("answered after %v, want about %v", took, wait)
	}
	if d := s.nextDecision(t); d.ID != confirm.TokenID(token) || d.Decision != core.DecisionTimeout {
		t.Errorf("decision event: %+v", d)
	}
	if len(s.queue.Pending()) != 0 {
		t.Errorf("still pending after the timeout: %+v", s.queue.Pending())
	}
	if err := s.queue.Approve(confirm.TokenID(token), "operator-late"); err == nil {
		t.Error("approving a timed-out confirmation succeeded")
	}
	s.checkNothingRan(t, "after the timeout")
}

// CF-5, the client goes away while waiting: the entry leaves the queue as
// abandoned and the tool never runs, not even once an operator tries to
// approve.
func TestOperatorClientGoneCF5(t *testing.T) {
	s := serveOperator(t, 0)
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	token := s.previewDelete(t, c, 10)

	_, drop := startConfirm(t, c, 10, token, "")
	p := s.waitPending(t)
	drop()
	s.waitQueueEmpty(t, "after the client disconnected")
	if d := s.nextDecision(t); d.ID != p.ID || d.Decision != core.DecisionGone {
		t.Errorf("decision event: %+v", d)
	}
	if err := s.queue.Approve(p.ID, "operator-late"); err == nil {
		t.Error("approving an abandoned confirmation succeeded")
	}
	s.checkNothingRan(t, "after the client went away")
}
