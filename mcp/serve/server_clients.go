package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
)

// modernClients are the clients of revision 2026-07-28 an endpoint serves,
// for the console (CO-5): the revision has no session, so one is known by
// its actor and the client name and version its _meta gives. A client is
// listed from its first request until it has been idle (no request, no
// open listen stream) for the session idle timeout. What an operator can
// end of it is its open subscriptions/listen streams.
type modernClients struct {
	endpoint string
	replica  string
	sessions *core.Sessions // nil: nothing is listed
	idle     time.Duration

	mu     sync.Mutex
	byID   map[string]*modernClient
	swept  time.Time
	closed bool
}

type modernClient struct {
	last time.Time
	// listens cancels each open listen stream, by a number of its own.
	listens map[int]context.CancelCauseFunc
	next    int
}

// errListenEnded ends a listen stream an operator ended.
var errListenEnded = errors.New("an operator ended this client's listen streams")

func newModernClients(opts EndpointOptions) *modernClients {
	return &modernClients{endpoint: opts.Path, replica: opts.Replica, sessions: opts.Sessions,
		idle: opts.SessionIdleTimeout, byID: map[string]*modernClient{}}
}

// modernClientID names a client of an endpoint by what its requests say of
// it; the same client from another replica has the same id.
func modernClientID(endpoint string, actor core.Actor, info *mcpgo.Implementation) string {
	h := sha256.New()
	for _, s := range []string{endpoint, actor.Tenant, actor.ID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if info != nil {
		h.Write([]byte(info.Name))
		h.Write([]byte{0})
		h.Write([]byte(info.Version))
	}
	return "stateless-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// request records one request of a client; call counts a tool call, and a
// listen stream's cancel is kept until the returned function is called.
func (m *modernClients) request(actor core.Actor, req *modernInbound, listen context.CancelCauseFunc) func() {
	if m.sessions == nil {
		return func() {}
	}
	id := modernClientID(m.endpoint, actor, req.info.ClientInfo)
	now := time.Now()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return func() {}
	}
	idle := m.sweepLocked(now)
	c, known := m.byID[id]
	if !known {
		c = &modernClient{listens: map[int]context.CancelCauseFunc{}}
		m.byID[id] = c
	}
	c.last = now
	n := -1
	if listen != nil {
		n = c.next
		c.next++
		c.listens[n] = listen
	}
	listening := len(c.listens)
	m.mu.Unlock()
	for _, gone := range idle {
		m.sessions.Remove(gone)
	}
	if !known {
		s := core.Session{ID: id, Endpoint: m.endpoint, Actor: actor, Protocol: req.info.ProtocolVersion,
			Replica: m.replica, Stateless: true}
		if ci := req.info.ClientInfo; ci != nil {
			s.ClientName, s.ClientVersion = ci.Name, ci.Version
		}
		m.sessions.Add(s)
	}
	m.sessions.Touch(id, req.method == string(mcpgo.MethodToolsCall))
	m.sessions.SetListening(id, listening)
	if n < 0 {
		return func() {}
	}
	return func() {
		m.mu.Lock()
		left := -1
		if c, ok := m.byID[id]; ok {
			delete(c.listens, n)
			c.last = time.Now()
			left = len(c.listens)
		}
		m.mu.Unlock()
		if left >= 0 {
			m.sessions.SetListening(id, left)
		}
	}
}

// sweepLocked forgets the clients idle for the idle timeout, at most once
// a second, and returns them for the caller to unlist once it has let go
// of the lock (a bus commit is never made under it).
func (m *modernClients) sweepLocked(now time.Time) (idle []string) {
	if m.idle <= 0 || now.Sub(m.swept) < time.Second {
		return nil
	}
	m.swept = now
	for id, c := range m.byID {
		if len(c.listens) == 0 && now.Sub(c.last) >= m.idle {
			delete(m.byID, id)
			idle = append(idle, id)
		}
	}
	return idle
}

// sweep unlists the clients idle for the idle timeout; requests sweep
// too, so a stateless endpoint, which has no sweeper, still lets go of
// them.
func (m *modernClients) sweep(now time.Time) {
	if m.sessions == nil {
		return
	}
	m.mu.Lock()
	idle := m.sweepLocked(now)
	m.mu.Unlock()
	for _, id := range idle {
		m.sessions.Remove(id)
	}
}

// end ends a client's open listen streams (an operator's end of it). A
// client with none has nothing the gateway can end: its requests stand
// alone, and revoking its key is what stops them.
func (m *modernClients) end(id string) (bool, error) {
	m.mu.Lock()
	c, ok := m.byID[id]
	if !ok {
		m.mu.Unlock()
		return false, nil
	}
	listens := make([]context.CancelCauseFunc, 0, len(c.listens))
	for _, cancel := range c.listens {
		listens = append(listens, cancel)
	}
	if len(listens) > 0 {
		delete(m.byID, id)
	}
	m.mu.Unlock()
	if len(listens) == 0 {
		return true, fmt.Errorf("client %s uses protocol %s, which has no session: nothing is open to end; revoke its key to stop it",
			id, mcpgo.ProtocolVersion20260728)
	}
	for _, cancel := range listens {
		cancel(errListenEnded)
	}
	return true, nil
}

// close forgets every client (the endpoint closes).
func (m *modernClients) close() {
	m.mu.Lock()
	m.closed = true
	ids := make([]string, 0, len(m.byID))
	for id, c := range m.byID {
		ids = append(ids, id)
		for _, cancel := range c.listens {
			cancel(context.Canceled)
		}
	}
	m.byID = map[string]*modernClient{}
	m.mu.Unlock()
	if m.sessions != nil {
		for _, id := range ids {
			m.sessions.Remove(id)
		}
	}
}
