package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// ErrCallCut is the cause of a call's context when the gateway cut it at
// the shutdown deadline (SV-9).
var ErrCallCut = errors.New("the gateway shut down before this call finished")

// codeShutdown is the JSON-RPC error code of a call cut at shutdown.
const codeShutdown = -32000

// running are the POST requests being served, so that shutdown can answer
// the ones still running at its deadline instead of leaving them an empty
// body.
type running struct {
	mu sync.Mutex
	m  map[*runningPost]struct{}
}

type runningPost struct {
	cs     *callStream
	body   []byte
	cancel context.CancelCauseFunc
}

// add records a request until the returned function is called.
func (f *running) add(fl *runningPost) func() {
	f.mu.Lock()
	if f.m == nil {
		f.m = map[*runningPost]struct{}{}
	}
	f.m[fl] = struct{}{}
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.m, fl)
		f.mu.Unlock()
	}
}

// CutCalls answers every request still being served with a JSON-RPC error
// saying the gateway shut down, and cancels it; what its handler writes
// afterwards is dropped. The gateway calls it at the shutdown deadline
// (SV-9). It returns how many requests it cut.
func (e *Endpoint) CutCalls() int {
	e.running.mu.Lock()
	defer e.running.mu.Unlock()
	n := 0
	for fl := range e.running.m {
		if id := idOf(fl.body); id != nil {
			fl.cs.cut(id)
		}
		fl.cancel(ErrCallCut)
		delete(e.running.m, fl)
		n++
	}
	return n
}

// cut answers the request with a JSON-RPC error unless its answer already
// went out, and drops everything written after it. It is called while the
// request's handler still runs, and every write goes through c.mu, so the
// response writer is never used by two goroutines at once.
func (c *callStream) cut(id json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || c.ended {
		return
	}
	c.dl.extend()
	data := jsonrpc.ErrorBody(id, codeShutdown, ErrCallCut.Error())
	switch {
	case c.upgraded:
		// An event stream is open: the answer is its last event.
		_ = writeEvent(c.w, data)
	case !c.libHeader:
		h := c.w.Header()
		h.Set("Content-Type", "application/json")
		h.Del("Content-Length")
		c.w.WriteHeader(http.StatusOK)
		_, _ = c.w.Write(data)
	default:
		// A JSON answer is being written: it is the call's answer.
		return
	}
	c.flushLocked()
	c.done = true
	c.held.Reset()
}

// refuseClosed answers a request that would open a session once the
// endpoint is closing as a call cut at shutdown is answered: a POST gets
// the JSON-RPC error, anything else 503 (SV-9).
func refuseClosed(w http.ResponseWriter, r *http.Request, body []byte) {
	id := idOf(body)
	if r.Method != http.MethodPost || id == nil {
		// Not a POST, or a notification or a batch: no id to answer.
		http.Error(w, ErrCallCut.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, jsonrpc.ErrorBody(id, codeShutdown, ErrCallCut.Error()))
}

// idOf is the id of the request body, nil when it has none: a
// notification, a batch, or an id null.
func idOf(body []byte) json.RawMessage {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &msg)
	if id := strings.TrimSpace(string(msg.ID)); id == "" || id == "null" {
		return nil
	}
	return msg.ID
}
