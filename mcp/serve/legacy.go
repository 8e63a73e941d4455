package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/session"
)

// Legacy sessions (SV-2): the endpoint's own transport (doc.go). Owning it
// is what lets the endpoint mint an id only once initialize succeeded,
// make a session from its sealed id without a made-up initialize
// (adoption, waking), let go of one without asking mcp-go, and keep what
// is queued for a session until its GET stream takes it.

// legacyQueue is how many notifications wait for a session's GET stream:
// what mcp-go's transport queued. A full queue drops a notification.
const legacyQueue = 100

// legacySession is a legacy session as mcp-go's server sees it.
type legacySession struct {
	// id is set before the session is registered anywhere, and not after.
	id string
	// notes are what mcp-go and the endpoint send the session, for its GET
	// stream.
	notes chan mcpgo.JSONRPCNotification
	// done closes when the session ends or is parked: its GET streams end.
	done      chan struct{}
	closeOnce sync.Once

	initialized atomic.Bool
	info        atomic.Pointer[mcpgo.Implementation]
	caps        atomic.Pointer[mcpgo.ClientCapabilities]
	protocol    atomic.Pointer[string]
	level       atomic.Pointer[mcpgo.LoggingLevel]
	// listening: the session is a subscriptions/listen stream's, which
	// gets only the kinds filter names.
	listening atomic.Bool
	filter    atomic.Pointer[mcpgo.SubscriptionFilter]
}

func newLegacySession(id string) *legacySession {
	return &legacySession{id: id, notes: make(chan mcpgo.JSONRPCNotification, legacyQueue), done: make(chan struct{})}
}

var (
	_ server.ClientSession                 = (*legacySession)(nil)
	_ server.SessionWithLogging            = (*legacySession)(nil)
	_ server.SessionWithClientInfo         = (*legacySession)(nil)
	_ server.SessionWithProtocolVersion    = (*legacySession)(nil)
	_ server.SessionWithSubscriptionFilter = (*legacySession)(nil)
)

func (s *legacySession) SetSubscriptionFilter(f mcpgo.SubscriptionFilter) { s.filter.Store(&f) }

// SubscriptionFilter is active while the session serves a listen stream:
// it gets nothing before its filter is recorded, or after it is cleared.
func (s *legacySession) SubscriptionFilter() (mcpgo.SubscriptionFilter, bool) {
	return loaded(&s.filter), s.listening.Load()
}

func (s *legacySession) SessionID() string { return s.id }
func (s *legacySession) Initialize()       { s.initialized.Store(true) }
func (s *legacySession) Initialized() bool { return s.initialized.Load() }

func (s *legacySession) NotificationChannel() chan<- mcpgo.JSONRPCNotification { return s.notes }

func (s *legacySession) SetLogLevel(level mcpgo.LoggingLevel) { s.level.Store(&level) }

// GetLogLevel is error until logging/setLevel, as mcp-go's own sessions.
func (s *legacySession) GetLogLevel() mcpgo.LoggingLevel {
	if l := s.level.Load(); l != nil {
		return *l
	}
	return mcpgo.LoggingLevelError
}

func (s *legacySession) GetClientInfo() mcpgo.Implementation { return loaded(&s.info) }

func (s *legacySession) SetClientInfo(info mcpgo.Implementation) { s.info.Store(&info) }

func (s *legacySession) GetClientCapabilities() mcpgo.ClientCapabilities { return loaded(&s.caps) }

func (s *legacySession) SetClientCapabilities(caps mcpgo.ClientCapabilities) { s.caps.Store(&caps) }

func (s *legacySession) ProtocolVersion() string { return loaded(&s.protocol) }

// loaded is what p holds, or the zero T while it holds nothing.
func loaded[T any](p *atomic.Pointer[T]) (v T) {
	if x := p.Load(); x != nil {
		v = *x
	}
	return v
}

// SetProtocolVersion is how mcp-go's initialize records the revision it
// negotiated.
func (s *legacySession) SetProtocolVersion(v string) { s.protocol.Store(&v) }

// close ends the session's GET streams; false if it was closed already.
func (s *legacySession) close() bool {
	closed := false
	s.closeOnce.Do(func() {
		close(s.done)
		closed = true
	})
	return closed
}

// serveInitialize answers an initialize, which opens a session: mcp-go
// answers it with a session of the endpoint's in the context, and only
// once it succeeded is an id minted and handed out, and the session
// opened in the table: registered, bound to the actor, counted under the
// caps (slot) and listed (SV-2). A failed one leaves nothing.
func (e *Endpoint) serveInitialize(ctx context.Context, cs *callStream, body []byte, actor core.Actor, slot *session.Slot) {
	s := newLegacySession("")
	answer := e.mcp.HandleMessage(e.mcp.WithContext(ctx, s), body)
	if res, ok := answer.(mcpgo.JSONRPCResponse); ok && s.Initialized() {
		s.id = e.ids.Mint(actor.ID, actor.Tenant, body)
		err := e.ids.Open(ctx, s.id, actor.ID, s, slot)
		switch {
		case errors.Is(err, session.ErrClosed):
			answer = mcpgo.NewJSONRPCError(res.ID, codeShutdown, ErrCallCut.Error(), nil)
		case err != nil:
			e.opts.Logger.Warn("opening a session failed", "endpoint", e.opts.Path, "actor", actor.ID, "err", err)
			answer = mcpgo.NewJSONRPCError(res.ID, mcpgo.INTERNAL_ERROR, "the session could not be opened", nil)
		default:
			cs.Header().Set(server.HeaderKeySessionID, s.id)
		}
	}
	writeJSONRPC(cs, http.StatusOK, answer)
}

// serveLegacy answers what mcp-go serves on a legacy session (ping,
// logging, resources, prompts, completions, and the errors of what no
// method serves): its handler runs with the session in the context, and
// only its answer is written. What it sends the session meanwhile stays
// queued for the session's GET stream.
func (e *Endpoint) serveLegacy(ctx context.Context, cs *callStream, s *legacySession, body []byte) {
	if s != nil {
		ctx = e.mcp.WithContext(ctx, s)
	}
	writeJSONRPC(cs, http.StatusOK, e.mcp.HandleMessage(ctx, body))
}

// serveStream is a legacy session's GET stream: the notifications queued
// for the session go out as SSE events, in order, until the client goes away,
// the session ends or is parked, or the endpoint closes. Every write moves
// the write deadline on, and a heartbeat keeps a quiet stream alive (SV-9).
// A session's streams share its queue: each notification goes out on one.
func (e *Endpoint) serveStream(w http.ResponseWriter, r *http.Request, s *legacySession) {
	sw := &streamWriter{w: w, dl: newDeadline(w, e.opts.WriteTimeout)}
	setEventStream(w.Header())
	sw.dl.extend()
	w.WriteHeader(http.StatusOK)
	sw.Flush()
	defer sw.keepAlive(e.opts.HeartbeatInterval)()
	ctx := r.Context()
	for {
		select {
		case n := <-s.notes:
			data, err := json.Marshal(n)
			if err != nil {
				continue
			}
			if err := writeEvent(sw, data); err != nil {
				// Put back for the session's next stream; dropped if
				// the queue is full.
				select {
				case s.notes <- n:
				default:
				}
				return
			}
			sw.Flush()
		case <-ctx.Done():
			return
		case <-s.done:
			return
		}
	}
}

// refuseVersion answers 400 to a legacy request whose Mcp-Protocol-Version
// names no revision there is, and reports whether it did. A missing header
// is accepted: clients of 2025-03-26 send none.
func refuseVersion(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Get(mcpgo.HeaderProtocolVersion)
	if v == "" || mcpgo.IsValidProtocolVersion(v) {
		return false
	}
	http.Error(w, "Unsupported protocol version: "+v, http.StatusBadRequest)
	return true
}

// noSessionText answers a request a stateful endpoint serves only on a
// session, sent without one.
const noSessionText = "Bad Request: Mcp-Session-Id header is required (initialize opens a session)"
