package core

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// Session is one live client session on an endpoint (CO-5).
type Session struct {
	ID            string    `json:"id"`
	Endpoint      string    `json:"endpoint"`
	Actor         Actor     `json:"actor"`
	ClientName    string    `json:"clientName,omitempty"`
	ClientVersion string    `json:"clientVersion,omitempty"`
	Protocol      string    `json:"protocol,omitempty"`
	Started       time.Time `json:"started"`
	LastActivity  time.Time `json:"lastActivity"`
	Calls         int       `json:"calls"`
	// Replica is the gateway process serving the session (OP-5), as
	// host:pid or its configured name.
	Replica string `json:"replica,omitempty"`
	// Elsewhere: served by another replica and listed from the shared
	// store (OP-5); ID is then the session's SessionKey, not its id.
	Elsewhere bool `json:"elsewhere,omitempty"`
	// Parked: idle, its protocol state let go until its next request
	// (SV-2, gateway.sessionParkAfter).
	Parked bool `json:"parked,omitempty"`
	// Stateless: a client of a revision without sessions (2026-07-28),
	// listed by actor and client; ending it ends only its open listen
	// streams (Listening), and only revoking its key stops it (CO-5).
	Stateless bool `json:"stateless,omitempty"`
	Listening int  `json:"listening,omitempty"`
}

// Key names the session to operators (consoles, commands, the audit): its
// SessionKey, which an Elsewhere session's ID already is. Never the id,
// which continues the session (SV-2).
func (s Session) Key() string {
	if s.Elsewhere {
		return s.ID
	}
	return SessionKey(s.ID)
}

// Session events.
type (
	SessionStarted struct {
		Session Session `json:"session"`
	}
	SessionEnded struct {
		Session Session `json:"session"`
		// ByOperator: ended from the gateway side, not by the client.
		ByOperator bool `json:"byOperator,omitempty"`
	}
	// SessionsElsewhere: the sessions the other replicas on a shared store
	// serve now (each Elsewhere); they replace those listed before (CO-5).
	SessionsElsewhere struct {
		Sessions []Session `json:"sessions"`
	}
)

// ErrUnknownSession: no live session has that id.
var ErrUnknownSession = errors.New("unknown session")

// SessionEnder ends a session on the transport that owns it.
type SessionEnder func(id string) error

// Sessions is the registry of live client sessions across endpoints. The
// transport adds and removes them; the console lists them and ends one.
type Sessions struct {
	bus *Bus
	now func() time.Time

	mu     sync.Mutex
	byID   map[string]*Session
	enders map[string]SessionEnder // per endpoint
	// endingByOperator: End is ending these; the transport's Remove that
	// its ender triggers still reports the end as the operator's.
	endingByOperator map[string]bool
}

// NewSessions returns an empty session registry publishing on bus.
func NewSessions(bus *Bus) *Sessions {
	s := &Sessions{bus: bus, now: time.Now, byID: map[string]*Session{}, enders: map[string]SessionEnder{}, endingByOperator: map[string]bool{}}
	bus.AddSnapshotPart(s.fillSnapshot)
	return s
}

func (SessionStarted) EventName() string { return "session.started" }

func (SessionEnded) EventName() string { return "session.ended" }

func (SessionsElsewhere) EventName() string { return "session.elsewhere" }

// SetEnder registers how sessions of an endpoint are ended.
func (s *Sessions) SetEnder(endpoint string, end SessionEnder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enders[endpoint] = end
}

// Add records a new session.
func (s *Sessions) Add(sess Session) {
	now := s.now()
	if sess.Started.IsZero() {
		sess.Started = now
	}
	sess.LastActivity = sess.Started
	s.bus.Commit(func() []EventData {
		s.mu.Lock()
		defer s.mu.Unlock()
		cp := sess
		s.byID[sess.ID] = &cp
		return []EventData{SessionStarted{Session: cp}}
	})
}

// Remove forgets a session the client or transport ended.
func (s *Sessions) Remove(id string) { s.remove(id, false) }

func (s *Sessions) remove(id string, byOperator bool) bool {
	found := false
	s.bus.Commit(func() []EventData {
		s.mu.Lock()
		defer s.mu.Unlock()
		sess, ok := s.byID[id]
		if !ok {
			return nil
		}
		found = true
		delete(s.byID, id)
		byOperator = byOperator || s.endingByOperator[id]
		delete(s.endingByOperator, id)
		return []EventData{SessionEnded{Session: *sess, ByOperator: byOperator}}
	})
	return found
}

// SetParked records that a session's protocol state was let go while it is
// idle, or made again. Not published: it is state for gauges and listings,
// and changes as often as sessions go idle.
func (s *Sessions) SetParked(id string, parked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.byID[id]; ok {
		sess.Parked = parked
	}
}

// Touch records activity; call counts a tool call. Activity is not
// published as an event: it changes too often to be worth one.
func (s *Sessions) Touch(id string, call bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.byID[id]; ok {
		sess.LastActivity = s.now()
		if call {
			sess.Calls++
		}
	}
}

// SetListening records how many listen streams a stateless client has
// open; not published, like Touch.
func (s *Sessions) SetListening(id string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.byID[id]; ok {
		sess.Listening = n
	}
}

// Get returns one session.
func (s *Sessions) Get(id string) (Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byID[id]
	if !ok {
		return Session{}, false
	}
	return *sess, true
}

// List returns the live sessions, oldest first.
func (s *Sessions) List() []Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listLocked()
}

func (s *Sessions) listLocked() []Session {
	out := make([]Session, 0, len(s.byID))
	for _, sess := range s.byID {
		out = append(out, *sess)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// End ends a live session from the gateway side: the transport forgets it,
// so the client's next request gets 404.
func (s *Sessions) End(id string) error {
	s.mu.Lock()
	sess, ok := s.byID[id]
	var end SessionEnder
	if ok {
		end = s.enders[sess.Endpoint]
		s.endingByOperator[id] = true
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownSession, id)
	}
	if end != nil {
		if err := end(id); err != nil {
			s.mu.Lock()
			delete(s.endingByOperator, id)
			s.mu.Unlock()
			return fmt.Errorf("end session %q: %w", id, err)
		}
	}
	s.remove(id, true)
	return nil
}

func (s *Sessions) fillSnapshot(snap *Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap.Sessions = slices.Clone(s.listLocked())
}
