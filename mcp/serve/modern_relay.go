package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/session"
)

// Revision 2026-07-28 has no server-initiated requests: what an upstream
// asks during a call (elicitation, sampling) reaches a modern client as an
// input request instead (SV-1, SV-2). The call runs on beyond the client's
// HTTP request: when its upstream asks, the client's request is answered
// with an InputRequiredResult carrying the upstream's request untouched,
// and the call waits, parked, for the client's retry. The retry brings the
// answer and the sealed requestState; the answer goes to the upstream and
// the retry's request follows the call to its result or its next question.
//
// The wait is bounded as an operator's is (CF-5, confirm.approvalWait): a
// client that does not come back leaves its upstream a "cancel" (sampling:
// an error), and the call ends by itself. Gateway Close ends every one.

// modernRelay is one such call.
type modernRelay struct {
	id string
	// elicits, samples: what the client declared in _meta; the other
	// requests are refused to the upstream, as they are today.
	elicits, samples bool
	bound            time.Duration
	// asks carries the upstream's requests to the HTTP request following
	// the call; done its result.
	asks chan *relayAsk
	done chan json.RawMessage
	// cancel ends the call: its client went, or the gateway closes.
	cancel context.CancelCauseFunc
	// gone is closed once no client will answer again.
	gone     chan struct{}
	goneOnce sync.Once

	mu sync.Mutex
	// cs is the stream of the HTTP request following the call; nil
	// while parked.
	cs *callStream
	// waiting is the request handed to the client, and its timer.
	waiting *relayAsk
	timer   *time.Timer
	seq     int
}

// relayAsk is one upstream request put to the client.
type relayAsk struct {
	key    string
	method string
	params json.RawMessage
	answer chan relayAnswer // buffered: the answer never blocks
}

type relayAnswer struct {
	raw json.RawMessage
	err error
}

type modernRelayKey struct{}

func modernRelayFrom(ctx context.Context) *modernRelay {
	r, _ := ctx.Value(modernRelayKey{}).(*modernRelay)
	return r
}

// errRelayGone: the client did not come back within the bound, or the
// gateway is closing.
var errRelayGone = errors.New("the client did not answer in time")

// ask puts an upstream's request to the client and waits for its answer.
func (r *modernRelay) ask(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch {
	case method == string(mcpgo.MethodElicitationCreate) && !r.elicits,
		method == string(mcpgo.MethodSamplingCreateMessage) && !r.samples:
		return nil, fmt.Errorf("%s: the client did not declare the capability", method)
	case method != string(mcpgo.MethodElicitationCreate) && method != string(mcpgo.MethodSamplingCreateMessage):
		return nil, fmt.Errorf("%s: %w", method, errNoSuchRequest)
	}
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	r.mu.Lock()
	r.seq++
	a := &relayAsk{key: "upstream-" + strconv.Itoa(r.seq), method: method, params: params, answer: make(chan relayAnswer, 1)}
	r.mu.Unlock()
	select {
	case r.asks <- a:
	case <-r.gone:
		return nil, fmt.Errorf("%s: %w", method, errRelayGone)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
	select {
	case ans := <-a.answer:
		if ans.err != nil {
			return nil, fmt.Errorf("%s: %w", method, ans.err)
		}
		return ans.raw, nil
	case <-ctx.Done():
		// The upstream withdrew its request or the call ended.
		r.mu.Lock()
		if r.waiting == a {
			r.waiting = nil
			r.timer.Stop()
		}
		r.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
}

// stream is the stream of the HTTP request following the call, if any.
func (r *modernRelay) stream() *callStream {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cs
}

func (r *modernRelay) attach(cs *callStream) {
	r.mu.Lock()
	r.cs = cs
	r.mu.Unlock()
}

// orphaned reports whether no request follows the call and none can.
// A follower about to attach still reads done.
func (r *modernRelay) orphaned() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cs == nil && r.waiting == nil
}

// park hands a to the client and waits at most the bound for its answer;
// expire runs if none comes.
func (r *modernRelay) park(a *relayAsk, expire func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cs = nil
	r.waiting = a
	r.timer = time.AfterFunc(r.bound, expire)
}

// take claims the waiting request named key for an answer; false when it
// is not the one waiting (answered, withdrawn, expired).
func (r *modernRelay) take(key string) (*relayAsk, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.waiting
	if a == nil || a.key != key || !r.timer.Stop() {
		return nil, false
	}
	r.waiting = nil
	return a, true
}

// abandon gives up on the client: the waiting request gets cause, later
// ones are refused.
func (r *modernRelay) abandon(cause error) {
	r.goneOnce.Do(func() { close(r.gone) })
	r.mu.Lock()
	a := r.waiting
	r.waiting = nil
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	if a == nil {
		return
	}
	if a.method == string(mcpgo.MethodElicitationCreate) {
		// The person never answered: "cancel" is the revision's word for
		// a question dismissed without a choice.
		a.answer <- relayAnswer{raw: json.RawMessage(`{"action":"cancel"}`)}
		return
	}
	a.answer <- relayAnswer{err: cause}
}

// relayTable holds the calls parked for their client's answer.
type relayTable struct {
	mu     sync.Mutex
	m      map[string]*modernRelay
	closed bool
}

func (t *relayTable) add(r *modernRelay) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	if t.m == nil {
		t.m = map[string]*modernRelay{}
	}
	t.m[r.id] = r
	return true
}

func (t *relayTable) get(id string) *modernRelay {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

func (t *relayTable) remove(r *modernRelay) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[r.id] == r {
		delete(t.m, r.id)
	}
}

// len is how many calls are parked or followed.
func (t *relayTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// close ends every call: the gateway is closing.
func (t *relayTable) close() {
	t.mu.Lock()
	t.closed = true
	all := t.m
	t.m = nil
	t.mu.Unlock()
	for _, r := range all {
		r.abandon(errors.New("the gateway is closing"))
		r.cancel(errors.New("the gateway is closing"))
	}
}

// closeRelays ends the calls parked for a client's answer (Close).
func (s *requestStates) closeRelays() { s.relays.close() }

// relays reports whether a call of this request should be able to carry
// its upstream's requests to the client: it declared elicitation or
// sampling.
func relays(req *modernInbound) (elicits, samples bool) {
	if req.info == nil || req.info.ClientCapabilities == nil {
		return false, false
	}
	cc := req.info.ClientCapabilities
	return cc.Elicitation != nil, cc.Sampling != nil
}

// startRelay runs call c of actor beyond this HTTP request, so its
// upstream's requests can reach the client as input requests, and follows
// it on cs. false: the gateway is closing; the call did not start.
func (e *Endpoint) startRelay(ctx context.Context, cs *callStream, rules *Rules, actor core.Actor, c *core.ToolCall, req *modernInbound, elicits, samples bool) bool {
	callCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r := &modernRelay{id: session.NewID(), elicits: elicits, samples: samples, bound: e.opts.Gate.ApprovalWait(),
		asks: make(chan *relayAsk), done: make(chan json.RawMessage, 1), cancel: cancel, gone: make(chan struct{})}
	if !e.states.relays.add(r) {
		cancel(nil)
		return false
	}
	callCtx = context.WithValue(callCtx, modernRelayKey{}, r)
	go func() {
		// Stops when the call returns: the call's own deadlines bound it,
		// and cancel (client gone, Close) ends it early.
		defer cancel(nil)
		r.done <- e.invoke(callCtx, rules, actor, c, req.progressToken, nil)
		if r.orphaned() {
			// Nobody follows the call and no answer is awaited (its
			// upstream withdrew the request it parked on): no retry can
			// reach it any more.
			e.states.relays.remove(r)
		}
	}()
	e.followRelay(ctx, cs, req.rawID, actor, c, r)
	return true
}

// followRelay answers this HTTP request with the call's result, or with
// its upstream's next request as an input request, parking the call.
func (e *Endpoint) followRelay(ctx context.Context, cs *callStream, rawID json.RawMessage, actor core.Actor, c *core.ToolCall, r *modernRelay) {
	r.attach(cs)
	select {
	case res := <-r.done:
		r.attach(nil)
		e.states.relays.remove(r)
		writeResult(cs, rawID, e.decorateModern(res))
	case a := <-r.asks:
		state, err := e.states.sealBody(e.relayState(actor, c, r, a))
		if err != nil {
			r.attach(nil)
			a.answer <- relayAnswer{err: err}
			e.followRelay(ctx, cs, rawID, actor, c, r)
			return
		}
		r.park(a, func() {
			e.states.relays.remove(r)
			e.opts.Logger.Info("a client did not answer its upstream's request in time", "tool", c.Tool.Name, "method", a.method, "wait", r.bound)
			r.abandon(errRelayGone)
		})
		writeResult(cs, rawID, e.decorateModern(relayInputResult(a, state)))
	case <-ctx.Done():
		// The client ended its request while the call ran: on this
		// revision that is its cancellation, and the call is withdrawn.
		r.attach(nil)
		e.states.relays.remove(r)
		r.abandon(context.Cause(ctx))
		r.cancel(context.Cause(ctx))
	}
}

// relayState is what the requestState of a relayed request binds: the
// caller, the tool and the arguments, as a confirmation's does, and the
// call and request it answers.
func (e *Endpoint) relayState(actor core.Actor, c *core.ToolCall, r *modernRelay, a *relayAsk) stateBody {
	digest, _ := argsDigest(c) // resolve read these arguments already
	return stateBody{Actor: actor.ID, Tenant: actor.Tenant, Tool: c.Tool.Name, Args: digest, Relay: r.id, Input: a.key, Replica: e.opts.Replica,
		Expires: time.Now().Add(r.bound).Unix(), Nonce: session.NewID()}
}

// relayInputResult is the result carrying an upstream's request to the
// client: its method and params as the upstream sent them.
func relayInputResult(a *relayAsk, state string) json.RawMessage {
	key, _ := json.Marshal(a.key)
	method, _ := json.Marshal(a.method)
	st, _ := json.Marshal(state)
	out := []byte(`{"resultType":"` + string(mcpgo.ResultTypeInputRequired) + `","inputRequests":{`)
	out = append(out, key...)
	out = append(out, `:{"method":`...)
	out = append(out, method...)
	out = append(out, `,"params":`...)
	out = append(out, a.params...)
	out = append(out, `}},"requestState":`...)
	out = append(out, st...)
	return append(out, '}')
}

// resumeRelay serves the retry of a call parked for the client's answer
// to its upstream: b is its state, already checked against actor, tool
// and arguments. The answer goes to the upstream, and this request follows
// the call on.
func (e *Endpoint) resumeRelay(ctx context.Context, cs *callStream, rawID json.RawMessage, actor core.Actor, c *core.ToolCall, b stateBody, answers map[string]json.RawMessage) {
	refuse := func(format string, args ...any) {
		writeModernError(cs, rawID, &modernError{code: mcpgo.INVALID_PARAMS, message: fmt.Sprintf(format, args...)})
	}
	answer, ok := answers[b.Input]
	if !ok {
		refuse("inputResponses has no answer %q to the request asked; nothing was passed on", b.Input)
		return
	}
	if len(answers) != 1 {
		refuse("inputResponses answers requests that were not asked: only %q was; nothing was passed on", b.Input)
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(answer, &obj) != nil {
		refuse("inputResponses.%s is not a result object; nothing was passed on", b.Input)
		return
	}
	if b.Replica != e.opts.Replica {
		// Checked before the state is spent: the replica holding the call
		// can still take this answer.
		// Another replica passes such a retry on (forward.go): here it
		// came when that replica is gone, or was passed on already.
		refuse("the call this answer is for waited in gateway replica %q, which is gone or could not take it; "+
			"nothing was passed on — call the tool again", b.Replica)
		return
	}
	if !e.states.spend(b.Nonce, time.Unix(b.Expires, 0), time.Now()) {
		refuse("requestState refused: already used; nothing was passed on")
		return
	}
	r := e.states.relays.get(b.Relay)
	if r == nil {
		refuse("the call this answer was for has ended (it waited %s at most); nothing was passed on — call the tool again", e.opts.Gate.ApprovalWait())
		return
	}
	a, ok := r.take(b.Input)
	if !ok {
		refuse("the request this answer was for is no longer waiting; nothing was passed on — call the tool again")
		return
	}
	a.answer <- relayAnswer{raw: answer}
	e.followRelay(ctx, cs, rawID, actor, c, r)
}
