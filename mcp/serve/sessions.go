package serve

import (
	"context"
	"encoding/json"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/flows"
	"github.com/toolgate/toolgate/mcp/session"
)

// sessionHost is the endpoint as the host of its table of legacy sessions
// (package session, SV-2): what a change of a session's life asks of
// mcp-go, the console and the gateway. The table calls the methods it
// marks locked under its lock: they call nothing that locks it.
type sessionHost Endpoint

var _ session.Host[*legacySession] = (*sessionHost)(nil)

// Register makes s known to mcp-go; an opened one is told to
// SessionStarted (with ctx, the request that opened or continued it) and
// listed.
func (h *sessionHost) Register(ctx context.Context, id string, s *legacySession, opened bool) error {
	e := (*Endpoint)(h)
	ctx = e.mcp.WithContext(ctx, s)
	// An id mcp-go still holds a session of is not made a second one,
	// whose notifications would go to the first.
	if err := e.mcp.RegisterSession(ctx, s); err != nil {
		return err
	}
	if !opened {
		if e.opts.Sessions != nil {
			e.opts.Sessions.SetParked(id, false)
		}
		return nil
	}
	if e.opts.SessionStarted != nil {
		e.opts.SessionStarted(ctx, id)
	}
	if e.opts.Sessions != nil {
		actor, _ := e.opts.Actor(ctx)
		info := s.GetClientInfo()
		e.opts.Sessions.Add(core.Session{ID: id, Endpoint: e.opts.Path, Actor: actor, Protocol: s.ProtocolVersion(),
			Replica: e.opts.Replica, ClientName: info.Name, ClientVersion: info.Version})
	}
	return nil
}

// Remake makes the session a sealed id carries, as its initialize made it
// where it opened (OP-5): no initialize is made up for it. Its log level is
// the one it set while it lived here.
func (h *sessionHost) Remake(id string, c session.Sealed) *legacySession {
	s := newLegacySession(id)
	if level, ok := h.levels.getter(id)(); ok {
		s.SetLogLevel(level)
	}
	s.SetClientInfo(mcpgo.Implementation{Name: c.ClientName, Version: c.ClientVersion})
	var caps mcpgo.ClientCapabilities
	if len(c.Capabilities) > 0 {
		_ = json.Unmarshal(c.Capabilities, &caps)
	}
	s.SetClientCapabilities(caps)
	s.SetProtocolVersion(mcpgo.NegotiateLegacyVersion(c.Protocol))
	s.Initialize()
	return s
}

// Parkable: the client's capabilities are left out of a seal when they
// are large, and a session that declared any the seal does not hold is
// not parked.
func (h *sessionHost) Parkable(s *legacySession, c session.Sealed) (ok, queued bool) {
	if len(c.Capabilities) == 0 {
		caps, err := json.Marshal(s.GetClientCapabilities())
		if err != nil || string(caps) != "{}" {
			return false, false
		}
	}
	return true, len(s.notes) > 0
}

// Release ends the session's GET streams and lets mcp-go forget it.
func (h *sessionHost) Release(id string, s *legacySession, parked bool) {
	s.close()
	h.mcp.UnregisterSession(context.Background(), id)
	if parked && h.opts.Sessions != nil {
		h.opts.Sessions.SetParked(id, true)
	}
}

// Terminated is SessionTerminated's.
func (h *sessionHost) Terminated(id string) {
	if h.opts.SessionTerminated != nil {
		h.opts.SessionTerminated(id)
	}
}

// Gone lets go of everything the endpoint keeps for a session that ended.
func (h *sessionHost) Gone(id string) {
	e := (*Endpoint)(h)
	e.levels.forget(id)
	e.unsolicited.forget(id)
	if key, _ := flows.Key(id, core.Actor{}, ""); key != "" {
		e.flows.Forget(key) // IN-3
	}
	e.releaseSubscriptions(id)
	if e.opts.Sessions != nil {
		e.opts.Sessions.Remove(id)
	}
	if e.opts.SessionEnded != nil {
		e.opts.SessionEnded(id)
	}
}
