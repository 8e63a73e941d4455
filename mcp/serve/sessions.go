package serve

import (
	"sync"
	"sync/atomic"
	"time"

	ds "github.com/toolgate/toolgate/mcp/downstream"
)

// sessionIDs keeps one record per legacy session: whose it is, what holds
// it open, when it was last used. An id with no live record is unknown,
// ended or not: the endpoint answers 404 for it.
//
// Lock order: Endpoint.adopting, then Endpoint.notifying, then mu. mu is
// held only inside these methods, which call nothing that locks.
type sessionIDs struct {
	// mu guards byID and every field of every record in it.
	mu   sync.Mutex
	byID map[string]*sessionRecord
	// inflight cancels the calls a session has running, by session and
	// request id.
	inflight ds.Cancels
	// gone are the ids ended for good, which adoption refuses; onEnded is
	// told of each, unless closing (a shutdown) ended it.
	gone    tombstones
	onEnded func(id string)
	closing atomic.Bool
	// expiring are ids the idle sweep is ending: refused here from now on,
	// but not reported to onEnded, so other replicas where the session is
	// still in use carry on with it (its idle clock is this replica's).
	expiring sync.Map
}

// sessionRecord is one session as the endpoint knows it; sessionIDs.mu
// guards every field.
type sessionRecord struct {
	// live: the id was minted (or adopted) here and has not ended, nor
	// been taken by the idle sweep. A record that is not live is kept
	// until the session's end lets go of what it holds.
	live bool
	// owner is the actor's id, "" until initialize bound the session.
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

// add makes id known, its owner to be bound next. An id made again
// (adopted while the sweep was ending it) is no longer parked.
func (m *sessionIDs) add(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.byID[id]
	if rec == nil {
		rec = &sessionRecord{}
		m.byID[id] = rec
	}
	rec.live, rec.owner, rec.seen, rec.parked = true, "", time.Now(), nil
}

// tombstone records id as ended for good; false if it was already.
func (m *sessionIDs) tombstone(id string) bool { return m.gone.add(id, time.Now()) }

func (m *sessionIDs) ended(id string) bool { return m.gone.has(id, time.Now()) }

// terminate forgets id, ended: for good (a tombstone, and onEnded told)
// unless a shutdown or the idle sweep ended it.
func (m *sessionIDs) terminate(id string) {
	_, expired := m.expiring.LoadAndDelete(id)
	if !m.closing.Load() && m.tombstone(id) && m.onEnded != nil && !expired {
		m.onEnded(id)
	}
	m.forget(id)
}

// liveRecord is id's record if it is live; m.mu is held.
func (m *sessionIDs) liveRecord(id string) *sessionRecord {
	if rec := m.byID[id]; rec != nil && rec.live {
		return rec
	}
	return nil
}

func (m *sessionIDs) live(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.liveRecord(id) != nil
}

func (m *sessionIDs) bind(id, actor string, s *legacySession) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.liveRecord(id); rec != nil {
		rec.owner, rec.session = actor, s
	}
}

// hold records the slot session id holds; forget releases it.
func (m *sessionIDs) hold(id string, slot *sessionSlot) {
	m.mu.Lock()
	rec := m.liveRecord(id)
	if rec != nil {
		rec.slot = slot
	}
	m.mu.Unlock()
	if rec == nil {
		slot.release()
	}
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
		if rec.live {
			rec.seen = time.Now()
		}
	}
}

// takeIdle returns the sessions idle for timeout or longer at now and makes
// them unknown at once, so a request racing the sweeper gets 404 rather
// than a session that is being ended under it.
func (m *sessionIDs) takeIdle(now time.Time, timeout time.Duration) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var idle []string
	for id, rec := range m.byID {
		if !rec.live || rec.busy > 0 || now.Sub(rec.seen) < timeout {
			continue
		}
		rec.live, rec.owner = false, ""
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
		if rec.streams == 0 && !rec.live && rec.session == nil && rec.slot == nil && rec.busy == 0 && m.byID[id] == rec {
			delete(m.byID, id)
		}
	}, true
}

func (m *sessionIDs) listening(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.byID[id]
	return rec != nil && rec.streams > 0
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

func (m *sessionIDs) forget(id string) {
	m.mu.Lock()
	rec := m.byID[id]
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
	return rec.live && rec.busy == 0 && rec.streams == 0 && !rec.pinned && now.Sub(rec.seen) >= after
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
	rec.session, rec.parked = nil, &seen
	return true
}

// woke binds parked id to its session made again.
func (m *sessionIDs) woke(id string, s *legacySession) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.byID[id]; rec != nil && rec.parked != nil {
		rec.session, rec.parked = s, nil
	}
}

func (m *sessionIDs) isParked(id string) bool {
	_, ok := m.parkedSeen(id)
	return ok
}

func (m *sessionIDs) parkedSeen(id string) (listChanges, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.byID[id]; rec != nil && rec.parked != nil {
		return *rec.parked, true
	}
	return listChanges{}, false
}

// bound are the ids with a session, live or being ended.
func (m *sessionIDs) bound() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, rec := range m.byID {
		if rec.session != nil {
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
