package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// A 2026-07-28 client over HTTP cancels a request by closing its stream;
// the revision expects no notifications/cancelled there, only over stdio.
// One that sends it anyway is heeded when it names, by its JSON-RPC id, a
// tools/call of the same caller still in flight and no other: with no
// session, the caller and the id are all that say which call it means, so
// an id two of the caller's calls share cancels neither (SV-1).
type modernInflight struct {
	mu sync.Mutex
	m  map[string][]*inflightCall
}

type inflightCall struct{ cancel context.CancelCauseFunc }

func inflightKey(actor core.Actor, id string) string {
	return actor.Tenant + "\x00" + actor.ID + "\x00" + id
}

// track registers a call in flight and returns its context, cancelled by
// a notifications/cancelled naming it, and the function that ends the
// registration.
func (f *modernInflight) track(ctx context.Context, actor core.Actor, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &inflightCall{cancel: cancel}
	key := inflightKey(actor, id)
	f.mu.Lock()
	if f.m == nil {
		f.m = map[string][]*inflightCall{}
	}
	f.m[key] = append(f.m[key], c)
	f.mu.Unlock()
	return ctx, func() {
		f.mu.Lock()
		list := f.m[key]
		for i, x := range list {
			if x == c {
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(f.m, key)
		} else {
			f.m[key] = list
		}
		f.mu.Unlock()
		cancel(nil)
	}
}

// cancel ends the call of actor named id, if exactly one is in flight.
func (f *modernInflight) cancel(actor core.Actor, id string, cause error) bool {
	f.mu.Lock()
	list := f.m[inflightKey(actor, id)]
	var c *inflightCall
	if len(list) == 1 {
		c = list[0]
	}
	f.mu.Unlock()
	if c == nil {
		return false
	}
	c.cancel(cause)
	return true
}

// errCancelledByClient is the cause of a call its client cancelled.
type errCancelledByClient struct{ reason string }

func (e errCancelledByClient) Error() string {
	if e.reason == "" {
		return "cancelled by the client"
	}
	return "cancelled by the client: " + e.reason
}

// cancelModern heeds a 2026-07-28 client's notifications/cancelled (see
// modernInflight); a session's notification is cancelFast's.
func (e *Endpoint) cancelModern(r *http.Request, env *jsonrpc.Envelope) {
	if env.Method != string(mcpgo.MethodNotificationCancelled) {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if json.Unmarshal(env.ParamsOrEmpty(), &p) != nil || len(p.RequestID) == 0 {
		return
	}
	id, ok := jsonrpc.ReadID(p.RequestID)
	if !ok {
		return
	}
	actor, ok := e.opts.Actor(r.Context())
	if !ok {
		return
	}
	e.states.inflight.cancel(actor, jsonrpc.IDTextOf(id, p.RequestID), errCancelledByClient{reason: p.Reason})
}
