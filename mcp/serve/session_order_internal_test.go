package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/session"
)

// orderSeeds is how many generated orders TestGeneratedSessionOrdersSV2
// runs; orderSeed runs one alone, to replay a failure.
var (
	orderSeeds = flag.Int("session.seeds", 3000, "generated session orders to run")
	orderSeed  = flag.Uint64("session.seed", 0, "run only this generated order (0: all)")
)

// orderSteps is how many events one generated order has.
const orderSteps = 24

// orderWait bounds how long one event may take; none waits on anything
// but the endpoint itself, so reaching it is a hang, not a slow machine.
const orderWait = 30 * time.Second

// SV-2, SV-9, OP-5: the session's life explored in generated orders.
// Each seed is a random sequence of initialize (some carrying an existing
// id), request, park, wake (a request of a parked session), adoption on
// the other replica (a request there), DELETE, operator end, idle sweep
// and shutdown, over two replicas sharing a session key and a store (what
// one ends for good it tells the other, as the gateway does through the
// store). An end's notices (SessionTerminated, SessionEnded, which run
// outside the endpoint's locks) sometimes run another event of the seed
// in the middle of that end. After every event it checks:
//   - a session whose end for good was answered never serves again, on
//     either replica, and both replicas refuse to adopt it;
//   - a place under the caps is taken and freed exactly once: each
//     replica holds as many places as it has session records, none after
//     its shutdown;
//   - an end is never lost: a DELETE or operator end that was answered as
//     done is recorded on both replicas;
//   - nothing blocks: every event returns within orderWait;
//   - a session that was not ended serves (on a replica not shut down
//     and not the one whose idle sweep ended it).
//
// -session.seeds sets how many seeds run, -session.seed replays one.
func TestGeneratedSessionOrdersSV2(t *testing.T) {
	if *orderSeed != 0 {
		runOrder(t, *orderSeed, false)
		return
	}
	n := *orderSeeds
	if testing.Short() {
		n = 200
	}
	// Every seed runs; the first few failures are told whole, the rest
	// by seed under the invariant they broke first, so a run says which
	// seeds find which fault. A hang ends the run: the hung event holds
	// what the next seeds would need.
	failed := map[string][]uint64{}
	var kinds []string
	total := 0
	for seed := uint64(1); seed <= uint64(n); seed++ {
		kind, hung := runOrder(t, seed, total >= 3)
		if kind != "" {
			if failed[kind] == nil {
				kinds = append(kinds, kind)
			}
			failed[kind] = append(failed[kind], seed)
			total++
		}
		if hung {
			break
		}
	}
	for _, kind := range kinds {
		seeds := failed[kind]
		t.Errorf("%s: %d seeds, the first %v", kind, len(seeds), seeds[:min(len(seeds), 20)])
	}
}

// orderReplica is one replica of a generated order, and what the order
// knows of it.
type orderReplica struct {
	e      *Endpoint
	limits *session.Limits
	closed bool
	// closing: its shutdown is under way; held are the sessions live on
	// it as it began, which serve until the shutdown reaches them. No
	// other opens from then on.
	closing bool
	held    map[string]bool
	// idled are the ids its idle sweep ended: refused here, not told.
	idled map[string]bool
}

// order is one generated order under way.
type order struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	reps [2]*orderReplica
	// ids are every session id handed out; gone those whose end for good
	// was answered; dying those a DELETE or an operator's end is ending
	// right now, and on which replica: the end's notices run after it was
	// decided there.
	ids   []string
	gone  map[string]bool
	dying map[string]int
	// nesting: an event runs inside an end's notice; nested events are
	// not nested again. outer is the event (its kind, its replica) whose
	// ends the notices are of.
	mu    sync.Mutex
	outer struct {
		kind string
		r    int
	}
	nesting bool
	log     []string
	failed  bool
	// kind names the invariant broken first.
	kind string
	// quiet: the failure is counted, not told.
	quiet bool
}

func (o *order) fail(kind, format string, args ...any) {
	o.t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.kind == "" {
		o.kind = kind
	}
	if o.failed || o.quiet {
		o.failed = true
		return
	}
	o.failed = true
	o.t.Errorf("seed %d: %s\nevents: %s", o.seed, fmt.Sprintf(format, args...), strings.Join(o.log, "; "))
}

// outcome is the invariant broken first, "" for none.
func (o *order) outcome() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.kind
}

// runOrder runs one seed and returns the invariant it broke first ("" for
// none), and whether an event hung; a hung order's endpoints are left as
// they are, since closing them would wait on the hung event.
func runOrder(t *testing.T, seed uint64, quiet bool) (kind string, hung bool) {
	o := &order{t: t, seed: seed, quiet: quiet, rng: rand.New(rand.NewPCG(seed, 0x5e55)), gone: map[string]bool{}, dying: map[string]int{}}
	for i := range o.reps {
		other := 1 - i
		limits := session.NewLimits(0, 0)
		e, err := NewEndpoint(EndpointOptions{Registry: core.NewRegistry(nil), Path: "/mcp",
			Actor:      func(context.Context) (core.Actor, bool) { return core.Actor{ID: "a"}, true },
			SessionKey: endKey, Limits: limits, SessionParkAfter: time.Hour, SessionIdleTimeout: time.Hour,
			// The shared store: an end for good reaches the other replica.
			SessionTerminated: func(id string) {
				o.maybeNested(i, id, "terminated")
				o.reps[other].e.EndedElsewhere(id)
			},
			SessionEnded: func(id string) { o.maybeNested(i, id, "ended") },
		})
		if err != nil {
			t.Fatal(err)
		}
		o.reps[i] = &orderReplica{e: e, limits: limits, idled: map[string]bool{}}
	}
	defer func() {
		if hung {
			return
		}
		// The order is over: the ends of the closing run nothing more.
		o.mu.Lock()
		o.nesting = true
		o.mu.Unlock()
		for _, r := range o.reps {
			_ = r.e.Close(context.Background())
		}
	}()
	for step := 0; step < orderSteps && o.outcome() == ""; step++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			o.event(false)
		}()
		select {
		case <-done:
		case <-time.After(orderWait):
			o.fail("hang", "an event did not return within %s", orderWait)
			return o.outcome(), true
		}
		o.check()
	}
	return o.outcome(), false
}

// maybeNested runs, now and then, one more event inside the notice of
// session id's end on replica r. Within an end not for good (a shutdown's,
// the idle sweep's) it is sometimes the session's own DELETE or an
// operator's end, which must make that end one for good.
func (o *order) maybeNested(r int, id, where string) {
	o.mu.Lock()
	if o.nesting || o.rng.IntN(3) != 0 {
		o.mu.Unlock()
		return
	}
	o.nesting = true
	o.log = append(o.log, "within "+where+":")
	upgrade := where == "ended" && o.outer.r == r && (o.outer.kind == "close" || o.outer.kind == "sweep") &&
		!o.gone[id] && o.rng.IntN(2) == 0
	operator := o.rng.IntN(2) == 0
	o.mu.Unlock()
	if upgrade {
		o.upgrade(r, id, operator)
	} else {
		o.event(true)
	}
	o.mu.Lock()
	o.nesting = false
	o.mu.Unlock()
}

// upgrade ends session id on replica r for good, by its DELETE or an
// operator, while an end not for good of it is under way there.
func (o *order) upgrade(r int, id string, operator bool) {
	var err error
	if operator {
		err = o.reps[r].e.EndSession(id)
	} else if w := o.send(r, http.MethodDelete, id, nil); w.Code != http.StatusOK {
		err = fmt.Errorf("HTTP %d %s", w.Code, w.Body)
	}
	o.note("upgrade@%d(%s, operator %v)=%v", r, short(id), operator, err == nil)
	if err != nil {
		o.fail("end for good refused", "session %s: an end for good during an end not for good on replica %d: %v", short(id), r, err)
		return
	}
	o.mu.Lock()
	o.gone[id] = true
	o.mu.Unlock()
}

func (o *order) note(format string, args ...any) {
	o.mu.Lock()
	o.log = append(o.log, fmt.Sprintf(format, args...))
	o.mu.Unlock()
}

// pick chooses an id handed out (sometimes one that ended); "" if none.
func (o *order) pick() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.ids) == 0 {
		return ""
	}
	return o.ids[o.rng.IntN(len(o.ids))]
}

func (o *order) intN(n int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rng.IntN(n)
}

// send serves one request on replica r.
func (o *order) send(r int, method, id string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	w := httptest.NewRecorder()
	o.reps[r].e.ServeHTTP(w, req)
	return w
}

const orderInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"order","version":"1"}}}`

// served reports whether a ping's answer is a result.
func served(w *httptest.ResponseRecorder) bool {
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	body := w.Body.Bytes()
	if i := bytes.Index(body, []byte("data: ")); i >= 0 {
		body = body[i+len("data: "):]
	}
	return w.Code == http.StatusOK && json.Unmarshal(bytes.TrimSpace(body), &msg) == nil && msg.Result != nil
}

// mustNotServe are the reasons a request of id on replica r may not be
// served; "" when it must be.
func (o *order) mustNotServe(r int, id string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.gone[id]:
		return "its end for good was answered"
	case o.dyingOn(id, r):
		return "its end is under way there"
	case o.reps[r].closed:
		return "the replica shut down"
	case o.reps[r].closing && (id == "" || !o.reps[r].held[id]):
		return "the replica is shutting down"
	case o.reps[r].idled[id]:
		return "the replica's idle sweep ended it"
	}
	return ""
}

func (o *order) closing(r int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reps[r].closing
}

func (o *order) allIDs() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ids)
}

// dyingOn reports whether an end of id is under way on replica r; o.mu
// is held.
func (o *order) dyingOn(id string, r int) bool {
	on, ok := o.dying[id]
	return ok && on == r
}

// ending marks id's end under way on r until the returned function runs.
func (o *order) ending(id string, r int) func() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.dying[id]; ok {
		return func() {}
	}
	o.dying[id] = r
	return func() {
		o.mu.Lock()
		delete(o.dying, id)
		o.mu.Unlock()
	}
}

// event runs one random event; nested: inside another's end, where what
// must serve is not known (the outer end may be of it).
func (o *order) event(nested bool) {
	r, k := o.intN(2), o.intN(12)
	rep := o.reps[r]
	if !nested {
		o.mu.Lock()
		o.outer.r, o.outer.kind = r, ""
		switch {
		case k >= 11:
			o.outer.kind = "close"
		case k >= 9:
			o.outer.kind = "sweep"
		}
		o.mu.Unlock()
	}
	switch {
	case k < 2: // initialize, sometimes carrying an existing id
		carried := ""
		if k == 1 {
			carried = o.pick()
		}
		w := o.send(r, http.MethodPost, carried, []byte(orderInit))
		id := w.Header().Get("Mcp-Session-Id")
		o.note("init@%d(%s)=%d %s", r, short(carried), w.Code, short(id))
		why := o.mustNotServe(r, carried)
		if why == "" && o.closing(r) {
			why = "the replica is shutting down"
		}
		switch {
		case id != "" && why != "":
			o.fail("opened though refused", "initialize carrying %q on replica %d handed out an id though %s", short(carried), r, why)
		case id == "" && why == "" && !nested:
			o.fail("not opened", "initialize on replica %d handed out no id: HTTP %d %s", r, w.Code, w.Body)
		}
		if id != "" {
			o.mu.Lock()
			o.ids = append(o.ids, id)
			o.mu.Unlock()
		}
	case k < 5: // a request: serves, wakes, or adopts on the other replica
		id := o.pick()
		if id == "" {
			return
		}
		why := o.mustNotServe(r, id)
		w := o.send(r, http.MethodPost, id, pingBody)
		ok := served(w)
		o.note("ping@%d(%s)=%v", r, short(id), ok)
		switch {
		case ok && why != "":
			o.fail("served after its end", "session %s served on replica %d though %s", short(id), r, why)
		case !ok && why == "" && !nested:
			o.fail("lost", "session %s not served on replica %d: HTTP %d %s", short(id), r, w.Code, w.Body)
		}
	case k < 7: // DELETE
		id := o.pick()
		if id == "" {
			return
		}
		why := o.mustNotServe(r, id)
		if why == "" && o.closing(r) {
			why = "the replica is shutting down"
		}
		done := o.ending(id, r)
		w := o.send(r, http.MethodDelete, id, nil)
		done()
		o.note("delete@%d(%s)=%d", r, short(id), w.Code)
		if w.Code != http.StatusOK && why == "" && !nested {
			o.fail("end for good refused", "session %s: DELETE on replica %d: HTTP %d %s", short(id), r, w.Code, w.Body)
		}
		o.mu.Lock()
		if w.Code == http.StatusOK {
			o.gone[id] = true
		}
		o.mu.Unlock()
	case k < 8: // an operator's end
		id := o.pick()
		if id == "" {
			return
		}
		done := o.ending(id, r)
		err := rep.e.EndSession(id)
		done()
		o.note("end@%d(%s)=%v", r, short(id), err == nil)
		o.mu.Lock()
		if err == nil {
			o.gone[id] = true
		}
		o.mu.Unlock()
	case k < 9: // park what is idle
		n := rep.e.ids.ParkIdle(time.Now().Add(2 * time.Hour))
		o.note("park@%d=%d", r, n)
	case k < 11: // the idle sweep, as sweep runs it
		taken := rep.e.ids.TakeIdle(time.Now().Add(3*time.Hour), time.Hour)
		o.mu.Lock()
		for _, id := range taken {
			rep.idled[id] = true
		}
		o.mu.Unlock()
		o.note("sweep@%d=%d", r, len(taken))
		for _, id := range taken {
			rep.e.ids.End(id, session.Idle)
		}
	default: // shutdown
		if o.intN(2) == 0 {
			return // rarer than the rest: a shut replica serves nothing more
		}
		held := map[string]bool{}
		for _, id := range o.allIDs() {
			if rep.e.ids.Lookup(id).Phase.Serves() {
				held[id] = true
			}
		}
		o.mu.Lock()
		rep.closing, rep.held = true, held
		o.mu.Unlock()
		o.note("close@%d", r)
		_ = rep.e.Close(context.Background())
		o.mu.Lock()
		rep.closed = true
		o.mu.Unlock()
	}
}

// check holds the invariants after an event.
func (o *order) check() {
	o.t.Helper()
	for i, r := range o.reps {
		if held, open := r.e.KnownSessionsForTest(), r.limits.Open(); held != open {
			o.fail("places", "replica %d: %d session records, %d places held under the caps", i, held, open)
		}
		if r.closed && r.limits.Open() != 0 {
			o.fail("places", "replica %d shut down with %d places held", i, r.limits.Open())
		}
	}
	gone := make([]string, 0, len(o.gone))
	for id := range o.gone {
		gone = append(gone, id)
	}
	slices.Sort(gone)
	for _, id := range gone {
		for i, r := range o.reps {
			if r.e.ids.Lookup(id).Phase.Serves() {
				o.fail("live after its end", "session %s ended for good, still live on replica %d", short(id), i)
			}
			if !r.e.ids.Ended(id) {
				o.fail("end lost", "session %s ended for good, its end not recorded on replica %d", short(id), i)
			}
		}
	}
}

// short is an id cut for the event log.
func short(id string) string {
	if len(id) > 8 {
		return id[len(id)-8:]
	}
	return id
}
