package upstream

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/mcp/downstream"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// What an upstream sends during a call goes back to the downstream session
// that made the call (see the package doc for why connections are shared
// and how a message is attributed).

// flight is one tools/call in progress on an upstream, with the session it
// came from.
type flight struct {
	down downstream.Downstream
	// token is the progress token sent upstream in place of the client's:
	// unique per call, so two sessions using the same token never mix.
	token string
}

// flights is an upstream's calls in progress and the requests it has made
// of the gateway that are still being answered.
type flights struct {
	seq     atomic.Int64
	mu      sync.Mutex
	live    map[*flight]struct{}
	byToken map[string]*flight
	// incoming are the upstream's requests of the gateway being answered,
	// by request id.
	incoming downstream.Cancels
}

func (fs *flights) start(d downstream.Downstream) *flight {
	f := &flight{down: d}
	if d.ProgressToken() != nil {
		f.token = "tg-progress-" + strconv.FormatInt(fs.seq.Add(1), 10)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.live == nil {
		fs.live = map[*flight]struct{}{}
		fs.byToken = map[string]*flight{}
	}
	fs.live[f] = struct{}{}
	if f.token != "" {
		fs.byToken[f.token] = f
	}
	return f
}

func (fs *flights) end(f *flight) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.live, f)
	delete(fs.byToken, f.token)
}

func (fs *flights) byProgressToken(token string) *flight {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.byToken[token]
}

// sole is the downstream session of every call in progress, when they all
// come from one session (Downstream.Session: a call without a session is
// one of its own). A message that carries no reference to a call can only
// be attributed that way; with no call or several sessions in flight there
// is no answer, and the message goes to nobody rather than to a guess.
func (fs *flights) sole() downstream.Downstream {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var found downstream.Downstream
	for f := range fs.live {
		switch {
		case found == nil:
			found = f.down
		case found.Session() != f.down.Session():
			return nil
		}
	}
	return found
}

// relayNotification handles what an upstream sends that concerns a call or
// a subscription. It runs on the transport's reader, so notifications of
// one call are passed on in the order they came.
func (b *base) relayNotification(n mcpgo.JSONRPCNotification) {
	raw, err := json.Marshal(n.Params)
	if err != nil {
		return
	}
	switch n.Method {
	case string(mcpgo.MethodNotificationProgress):
		params, err := jsonrpc.DecodeParams(raw)
		if err != nil {
			return
		}
		token, _ := params["progressToken"].(string)
		f := b.fl.byProgressToken(token)
		if f == nil {
			return // not a token this gateway handed out, or the call ended
		}
		params["progressToken"] = f.down.ProgressToken()
		f.down.Notify(n.Method, params)
	case string(mcpgo.MethodNotificationMessage):
		params, err := jsonrpc.DecodeParams(raw)
		if err != nil {
			return
		}
		d := b.fl.sole()
		if d == nil {
			b.log.Debug("log message from upstream not attributable to one session; not passed on")
			return
		}
		level, _ := params["level"].(string)
		if downstream.WantsLog(d, mcpgo.LoggingLevel(level)) {
			d.Notify(n.Method, params)
		}
	case string(mcpgo.MethodNotificationCancelled):
		params, err := jsonrpc.DecodeParams(raw)
		if err != nil {
			return
		}
		b.fl.incoming.Cancel(jsonrpc.IDKey(params["requestId"]))
	case mcpgo.MethodNotificationResourceUpdated:
		if b.hub != nil {
			b.hub.ResourceUpdated(raw)
		}
	}
}

// handleRequest answers what an upstream asks of the gateway as a client.
// roots/list is answered from configuration: the downstream client's roots
// are paths on its own machine and mean nothing to the upstream. Sampling
// and elicitation go to the session whose call caused them, or are refused.
func (b *base) handleRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	switch req.Method {
	case string(mcpgo.MethodPing):
		return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{}`)), nil
	case string(mcpgo.MethodListRoots):
		roots := make([]mcpgo.Root, 0, len(b.roots))
		for _, r := range b.roots {
			roots = append(roots, mcpgo.Root{URI: r})
		}
		raw, err := json.Marshal(mcpgo.ListRootsResult{Roots: roots})
		if err != nil {
			return nil, err
		}
		return transport.NewJSONRPCResultResponse(req.ID, raw), nil
	case string(mcpgo.MethodSamplingCreateMessage), string(mcpgo.MethodElicitationCreate):
	default:
		return transport.NewJSONRPCErrorResponse(req.ID, mcpgo.METHOD_NOT_FOUND, "method not found: "+req.Method, nil), nil
	}
	// Over Streamable HTTP the request came on the stream of the call that
	// caused it, whose context names the session. Otherwise (stdio, the
	// standing GET stream) only a sole session in flight identifies it.
	d := downstream.From(ctx)
	if d == nil {
		d = b.fl.sole()
	}
	if d == nil {
		b.log.Info("upstream request refused: not attributable to one client session", "method", req.Method)
		return transport.NewJSONRPCErrorResponse(req.ID, mcpgo.INVALID_REQUEST,
			req.Method+" refused by the gateway: it cannot be attributed to exactly one client session", nil), nil
	}
	params, err := json.Marshal(req.Params)
	if err != nil {
		return nil, err
	}
	// Over HTTP, mcp-go bounds the answer at 30 seconds, too short for a
	// person: the session answers by itself, and what bounds the wait is
	// the upstream withdrawing its request, the calling session's call
	// ending, or the connection going.
	s, _ := b.current()
	if s != nil && s.reply != nil {
		ctx = context.WithoutCancel(ctx)
		var stop func() bool
		ctx, stop = withCancelOn(ctx, s.lost)
		defer stop()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	id := jsonrpc.IDKey(req.ID)
	b.fl.incoming.Add(id, cancel)
	defer b.fl.incoming.Remove(id)
	var resp *transport.JSONRPCResponse
	if res, err := d.Request(ctx, req.Method, params); err != nil {
		resp = transport.NewJSONRPCErrorResponse(req.ID, mcpgo.INTERNAL_ERROR, b.scrub(err).Error(), nil)
	} else if raw, err := json.Marshal(res); err != nil {
		return nil, err
	} else {
		resp = transport.NewJSONRPCResultResponse(req.ID, raw)
	}
	if s == nil || s.reply == nil {
		return resp, nil
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	if err := s.reply(rctx, resp); err != nil {
		b.log.Info("answer to the upstream's request not delivered", "method", req.Method, "err", b.scrub(err))
	}
	return nil, nil
}

// withCancelOn is ctx, also cancelled when done is.
func withCancelOn(ctx, done context.Context) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(done, cancel)
	return ctx, func() bool { cancel(); return stop() }
}
