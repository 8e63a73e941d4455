package serve

import (
	"sync"
	"time"

	ds "github.com/toolgate/toolgate/mcp/downstream"
	"github.com/toolgate/toolgate/mcp/session"
)

// sessionIDs keeps one record per legacy session: whose it is, what holds
// it open, when it was last used. An id with no live record is unknown,
// ended or not: the endpoint answers 404 for it.
//
// Lock order: Endpoint.adopting, then Endpoint.notifying, then mu. mu is
// held only inside these methods, which call nothing that locks.
//
// Each record's phase (package session) changes only through session.Step,
// under mu: the methods below are the events of the session's life.
//
// A session ends in two steps. Under Endpoint.adopting, claim decides it
// (whichever end claims first is the one) and the session stops being
// live, parked or adoptable; then, outside any lock, what it holds is let
// go of and forget drops its record. Until then its id is refused: a
// request racing the end cannot wake, adopt or make it again.
type sessionIDs struct {
	// mu guards byID and every field of every record in it.
	mu   sync.Mutex
	byID map[string]*sessionRecord
	// inflight cancels the calls a session has running, by session and
	// request id.
	inflight ds.Cancels
	// gone are the ids ended here, which adoption refuses; onEnded is told
	// of those ended for good (endCause).
	gone    tombstones
	onEnded func(id string)
}

// endCause is what ended a session, which decides whether it ended for
// good (session.Cause). A client's DELETE or an operator's end arriving
// while an end not for good is under way makes it one for good (forGood).
type endCause = session.Cause

const (
	// endedByClient: its DELETE, or an operator. Told to the other
	// replicas (onEnded), even during a shutdown.
	endedByClient = session.ByClient
	// endedElsewhere: another replica's word; the others know already.
	endedElsewhere = session.Elsewhere
	// endedIdle: the idle sweep. Refused here from now on, but not told.
	endedIdle = session.Idle
	// endedDropped: a shutdown, or a session that could not be made again.
	endedDropped = session.Dropped
)

// sessionRecord is one session as the endpoint knows it; sessionIDs.mu
// guards every field.
type sessionRecord struct {
	// phase is where the session is in its life: live or parked (it
	// serves), taken by the idle sweep, or ending with its cause. A record
	// that does not serve is kept until the session's end lets go of what
	// it holds; a record of GET streams alone (listen) is Absent.
	phase session.Phase
	// owner is the actor's id, "" until initialize bound the session. It
	// is kept through the end, so that its client's DELETE racing an end
	// that is not for good is known to be its own.
	owner string
	// session is the session as mcp-go serves it; nil while parked.
	session *legacySession
	// protocol is the negotiated revision.
	protocol string
	// streams counts the open GET streams; busy the open requests and
	// streams; seen is when the last one ended (or the id was minted). A
	// session is idle when it has none open and was last seen longer ago
	// than the timeout.
	streams, busy int
	seen          time.Time
	// slot is the place the session holds under the caps (SV-2).
	slot *sessionSlot
	// parked holds the list changes told to the session before its
	// session was let go while idle (resume.go); nil when it is not
	// parked. pinned sessions are never parked: subscribed to resources,
	// or with more than the id carries.
	parked *listChanges
	pinned bool
}

func newSessionIDs() *sessionIDs {
	return &sessionIDs{byID: map[string]*sessionRecord{}}
}

// start makes s, with its id, a live session of owner holding slot (SV-2);
// false, and slot released, when the id has a record still: a session of
// that id is live or is being ended.
func (m *sessionIDs) start(owner string, s *legacySession, slot *sessionSlot) bool {
	if !slot.claim() {
		// A request opens at most one session.
		slot = nil
	}
	m.mu.Lock()
	_, taken := m.byID[s.id]
	if !taken {
		phase, _ := session.Step(session.Phase{}, session.Event{Kind: session.Open})
		m.byID[s.id] = &sessionRecord{phase: phase, owner: owner, session: s, protocol: s.ProtocolVersion(),
			seen: time.Now(), slot: slot}
	}
	m.mu.Unlock()
	if taken && slot != nil {
		slot.release()
	}
	return !taken
}

// tombstone records id as ended here; false if it was already.
func (m *sessionIDs) tombstone(id string) bool { return m.gone.add(id, time.Now()) }

func (m *sessionIDs) ended(id string) bool { return m.gone.has(id, time.Now()) }

// claim starts the end of session id, live, parked or taken by the idle
// sweep, for cause: from now on it is neither live nor parked, its session object
// (returned; nil while parked) is the caller's to let go of, and its
// record stays, refusing the id, until forget. false: there is no such
// session, or another end claimed it first. Endpoint.adopting is held, so
// that parking, waking and adopting see the session either before its end
// or after it was decided.
func (m *sessionIDs) claim(id string, cause endCause) (*legacySession, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.byID[id]
	if rec == nil {
		return nil, false
	}
	phase, out := session.Step(rec.phase, session.Event{Kind: session.End, Cause: cause})
	if out != session.Claimed {
		return nil, false
	}
	s := rec.session
	rec.phase, rec.session, rec.parked = phase, nil, nil
	return s, true
}

// forGood makes the end under way of session id one for good, for cause
// (endedByClient or endedElsewhere), when the end that claimed it was not
// (endedIdle, endedDropped); false when there is no such end. was is the
// cause it had. Endpoint.adopting is held.
func (m *sessionIDs) forGood(id string, cause endCause) (was endCause, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.byID[id]
	if rec == nil {
		return 0, false
	}
	phase, out := session.Step(rec.phase, session.Event{Kind: session.End, Cause: cause})
	if out != session.Upgraded {
		return 0, false
	}
	was, rec.phase = rec.phase.Cause, phase
	return was, true
}

// endingOwnedBy reports whether session id of actor is being ended, or
// was taken by the idle sweep to be.
func (m *sessionIDs) endingOwnedBy(id, actor string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.byID[id]
	return rec != nil && (rec.phase.State == session.TakenIdle || rec.phase.State == session.Ending) &&
		(rec.owner == "" || rec.owner == actor)
}

// known reports whether id has a record: a session live, parked, or being
// ended.
func (m *sessionIDs) known(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byID[id] != nil
}

// liveRecord is id's record if it is live; m.mu is held.
func (m *sessionIDs) liveRecord(id string) *sessionRecord {
	if rec := m.byID[id]; rec != nil && rec.phase.Serves() {
		return rec
	}
	return nil
}

func (m *sessionIDs) live(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.liveRecord(id) != nil
}

// session is the session of that id; nil while parked, or unknown.
func (m *sessionIDs) session(id string) *legacySession {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.byID[id]; rec != nil {
		return rec.session
	}
	return nil
}

func (m *sessionIDs) protocolOf(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.byID[id]; rec != nil {
		return rec.protocol
	}
	return ""
}

func (m *sessionIDs) setProtocol(id, protocol string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.byID[id]; rec != nil {
		rec.protocol = protocol
	}
}

// enter marks id busy until the returned function is called.
func (m *sessionIDs) enter(id string) func() {
	m.mu.Lock()
	rec := m.byID[id]
	if rec != nil {
		rec.busy++
	}
	m.mu.Unlock()
	if rec == nil {
		return func() {}
	}
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		rec.busy--
		if rec.phase.Serves() {
			rec.seen = time.Now()
		}
	}
}

// takeIdle returns the sessions idle for timeout or longer at now and makes
// them unknown at once, so a request racing the sweeper gets 404 rather
// than a session that is being ended under it; their records stay, refusing
// the id, until their end let go of what they hold.
func (m *sessionIDs) takeIdle(now time.Time, timeout time.Duration) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var idle []string
	for id, rec := range m.byID {
		if rec.busy > 0 || now.Sub(rec.seen) < timeout {
			continue
		}
		phase, out := session.Step(rec.phase, session.Event{Kind: session.TakeIdle})
		if out == session.Refused {
			continue
		}
		rec.phase = phase
		idle = append(idle, id)
	}
	return idle
}

// listen counts an open GET stream until the returned function is called;
// false when the session has max open already. An id with no record (on a
// stateless endpoint, where mcp-go serves a GET for any id) is counted on
// a record kept only while its streams are open.
func (m *sessionIDs) listen(id string, max int) (func(), bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.byID[id]
	if rec == nil {
		rec = &sessionRecord{}
		m.byID[id] = rec
	}
	if rec.streams >= max {
		return nil, false
	}
	rec.streams++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		rec.streams--
		if rec.streams == 0 && rec.phase.State == session.Absent && rec.session == nil && rec.slot == nil && rec.busy == 0 && m.byID[id] == rec {
			delete(m.byID, id)
		}
	}, true
}

func (m *sessionIDs) ownedBy(id, actor string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.liveRecord(id)
	return rec != nil && (rec.owner == "" || rec.owner == actor)
}

// count is how many sessions have a record, for tests.
func (m *sessionIDs) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byID)
}

// forget drops the record of session id, whose end finished; a record of
// GET streams alone (a stateless endpoint's) goes with no phase to leave.
func (m *sessionIDs) forget(id string) {
	m.mu.Lock()
	rec := m.byID[id]
	if rec != nil {
		if phase, out := session.Step(rec.phase, session.Event{Kind: session.Forget}); out != session.Refused {
			rec.phase = phase
		}
	}
	delete(m.byID, id)
	m.mu.Unlock()
	if rec != nil && rec.slot != nil {
		rec.slot.release()
	}
}

// parkable are the bound sessions, not parked, idle for after at now.
func (m *sessionIDs) parkable(now time.Time, after time.Duration) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, rec := range m.byID {
		if rec.session != nil && rec.idleFor(now, after) {
			ids = append(ids, id)
		}
	}
	return ids
}

// idleFor reports whether the session may be parked at now; m.mu is held.
func (rec *sessionRecord) idleFor(now time.Time, after time.Duration) bool {
	return rec.phase.State == session.Live && rec.busy == 0 && rec.streams == 0 && !rec.pinned && now.Sub(rec.seen) >= after
}

// markParked parks id, bound to s, if it is still idle at now; seen are
// the list changes it has been told of.
func (m *sessionIDs) markParked(id string, s *legacySession, now time.Time, after time.Duration, seen listChanges) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.byID[id]
	if rec == nil || rec.session != s || !rec.idleFor(now, after) {
		return false
	}
	phase, out := session.Step(rec.phase, session.Event{Kind: session.Park})
	if out == session.Refused {
		return false
	}
	rec.phase, rec.session, rec.parked = phase, nil, &seen
	return true
}

// woke binds parked id to its session made again.
func (m *sessionIDs) woke(id string, s *legacySession) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.byID[id]; rec != nil {
		if phase, out := session.Step(rec.phase, session.Event{Kind: session.Wake}); out != session.Refused {
			rec.phase, rec.session, rec.parked = phase, s, nil
		}
	}
}

func (m *sessionIDs) isParked(id string) bool {
	_, ok := m.parkedSeen(id)
	return ok
}

// parkedSeen is what parked session id was told of; false when it is not
// parked, or is being ended.
func (m *sessionIDs) parkedSeen(id string) (listChanges, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.byID[id]; rec != nil && rec.phase.State == session.Parked {
		return *rec.parked, true
	}
	return listChanges{}, false
}

// endable are the ids of the sessions no end claimed yet: live, parked, or
// taken by the idle sweep.
func (m *sessionIDs) endable() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, rec := range m.byID {
		if rec.phase.Endable() {
			ids = append(ids, id)
		}
	}
	return ids
}

func (m *sessionIDs) parkedIDs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, rec := range m.byID {
		if rec.parked != nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// pin keeps live session id from ever being parked.
func (m *sessionIDs) pin(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.liveRecord(id); rec != nil {
		rec.pinned = true
	}
}
