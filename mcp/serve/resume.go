package serve

import (
	"container/heap"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
)

// Resumable sessions (SV-2, OP-5). A session id is sealed (AES-GCM) under a
// key every replica shares, and carries what a replica needs to continue the
// session it did not open: the endpoint, the actor, the protocol revision and
// the client's info and capabilities. A replica that does not know an id,
// but can open its seal and serves the actor it names, adopts the session as
// if the client had initialized there. This was chosen over session records
// in the database: it costs no round trip per request, and it works on a
// single replica over SQLite too (a restarted gateway continues its
// sessions). What a seal cannot carry is the end of a session: ended ids are
// remembered (bounded) and, over a shared store, broadcast to the other
// replicas; an id older than the adoption window (a day, or the idle
// timeout if longer) is not continued elsewhere, so an ended one stays
// ended once its tombstone is forgotten.
//
// The seal holds the actor, not a hash of the credential: OAuth access
// tokens are replaced within a session's life, and the actor is re-derived
// from the credential on every request anyway (AU-3).

// sealedSession is what a resumable id carries.
type sealedSession struct {
	Path          string          `json:"p"`
	Actor         string          `json:"a"`
	Tenant        string          `json:"t,omitempty"`
	Protocol      string          `json:"v,omitempty"`
	ClientName    string          `json:"cn,omitempty"`
	ClientVersion string          `json:"cv,omitempty"`
	Capabilities  json.RawMessage `json:"c,omitempty"`
	Issued        int64           `json:"iat"`
}

// maxSealedCapabilities bounds the client capabilities an id carries, so
// the id stays a reasonable header; larger ones are left out (the adopted
// session then has none, as for a client that declared none).
const maxSealedCapabilities = 1024

// maxSealedText bounds each of the client's name, version and protocol
// revision an id carries: they are the client's to choose, and the id
// goes back and forth in a header on every request. Longer ones are cut.
const maxSealedText = 128

// sealAD binds seals to their use: the same key sealing anything else
// cannot produce a session id.
var sealAD = []byte("toolgate session id v1")

type sessionSeal struct{ aead cipher.AEAD }

func newSessionSeal(key []byte) (*sessionSeal, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sessionSeal{aead: aead}, nil
}

func (s *sessionSeal) seal(c sealedSession) string {
	if len(c.Capabilities) > maxSealedCapabilities {
		c.Capabilities = nil
	}
	c.Protocol, c.ClientName, c.ClientVersion = cutText(c.Protocol), cutText(c.ClientName), cutText(c.ClientVersion)
	plain, _ := json.Marshal(c)
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, sealAD))
}

// cutText is s cut to maxSealedText bytes, at a rune boundary.
func cutText(s string) string {
	if len(s) <= maxSealedText {
		return s
	}
	n := maxSealedText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (s *sessionSeal) open(id string) (sealedSession, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return sealedSession{}, false
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], sealAD)
	if err != nil {
		return sealedSession{}, false
	}
	var c sealedSession
	if json.Unmarshal(plain, &c) != nil {
		return sealedSession{}, false
	}
	return c, true
}

// sealedFor is the id a session opened by initialize body gets.
func (e *Endpoint) sealedFor(actor core.Actor, body []byte) string {
	c := sealedSession{Path: e.opts.Path, Actor: actor.ID, Tenant: actor.Tenant, Issued: time.Now().Unix()}
	var init struct {
		Params struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    json.RawMessage `json:"capabilities"`
			ClientInfo      struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"clientInfo"`
		} `json:"params"`
	}
	if len(body) > 0 && json.Unmarshal(body, &init) == nil {
		c.Protocol = init.Params.ProtocolVersion
		c.Capabilities = init.Params.Capabilities
		c.ClientName, c.ClientVersion = init.Params.ClientInfo.Name, init.Params.ClientInfo.Version
	}
	return e.seal.seal(c)
}

// errNotAdopted: the id is not one this endpoint may continue.
var errNotAdopted = errors.New("session cannot be continued here")

// adopt continues, on this replica, a session opened elsewhere (or before a
// restart): id must open under the seal, name this endpoint and the
// request's actor, not have been ended, and be within the adoption window
// (tombstones). The session is made from what the id carries — protocol,
// client info and capabilities, as the client sent them where it opened
// the session. It reports whether the request was answered (a cap refused
// it).
func (e *Endpoint) adopt(w http.ResponseWriter, r *http.Request, body []byte, id string, actor core.Actor) (answered bool, err error) {
	c, ok := e.seal.open(id)
	if !ok || c.Path != e.opts.Path || c.Actor != actor.ID || c.Tenant != actor.Tenant ||
		e.ids.gone.tooOld(time.Unix(c.Issued, 0), time.Now()) {
		return false, errNotAdopted
	}
	e.adopting.Lock()
	defer e.adopting.Unlock()
	if e.ids.ended(id) {
		// Checked under the lock only: EndedElsewhere records the end
		// before it takes the lock, so an adoption either sees it or
		// opens first and is ended by it.
		return false, errNotAdopted
	}
	if e.ids.known(id) {
		// Adopted by a request racing this one, or being ended: not made
		// again until its end let go of what it holds.
		return false, nil
	}
	if e.closed {
		// Close began: a session adopted now would outlive it.
		refuseClosed(w, r, body)
		return true, errClosed
	}
	slot, err := e.opts.Limits.acquire(actor.ID)
	if err != nil {
		refuseSession(w, r, body, err)
		return true, err
	}
	defer slot.requestDone()
	s := sessionFromSeal(id, c)
	if err := e.openSession(e.mcp.WithContext(r.Context(), s), s, actor, slot); err != nil {
		e.opts.Logger.Warn("continuing a session failed", "endpoint", e.opts.Path, "actor", actor.ID, "err", err)
		return false, err
	}
	e.opts.Logger.Info("session continued", "endpoint", e.opts.Path, "actor", actor.ID)
	return false, nil
}

// EndedElsewhere is told that another replica ended session id: it is not
// adopted here, and ended if it was (OP-5). The end is recorded before the
// session is looked for under e.adopting, so an adoption racing it either
// ends first, and is ended here, or sees the end and refuses.
func (e *Endpoint) EndedElsewhere(id string) {
	e.ids.tombstone(id)
	e.endSession(id, endedElsewhere)
}

// Tombstones: ended ids, so a seal cannot bring them back. Bounded in
// number and in time. What closes the gap a forgotten tombstone would open
// is the issue time sealed into every id: an id older than adoptWindow is
// never continued by a replica that does not hold it, and a tombstone is
// kept longer than that after the end, so by the time it is forgotten its
// id is too old anyway. A tombstone dropped early to make room raises a
// floor instead: no id issued at or before the dropped one's issue time is
// adopted again (the replicas holding such sessions keep serving them).
const maxTombstones = 1 << 16

// minAdoptWindow is the least age at which a sealed id stops being
// continued elsewhere; a longer idle timeout lengthens it. A client past it
// whose replica went away initializes again.
const minAdoptWindow = 24 * time.Hour

// clockSlack covers replicas whose clocks disagree about an issue time.
const clockSlack = 5 * time.Minute

// adoptWindow is how old a sealed id may be and still be continued by a
// replica that does not hold it: idle an idle timeout, a session would have
// expired anyway.
func adoptWindow(idle time.Duration) time.Duration {
	return max(idle, minAdoptWindow)
}

type tombstones struct {
	window time.Duration // ids older than this are not adopted
	ttl    time.Duration // how long a tombstone is kept: longer than window
	// issued reads an id's sealed issue time (false: not a sealed id).
	issued func(id string) (time.Time, bool)

	mu sync.Mutex
	at map[string]*tombstone
	// byIssue holds every kept tombstone, the earliest issued at its root:
	// the one dropped when room is needed.
	byIssue issueHeap
	// byEnd is the tombstones in the order they were added, which is the
	// order they lapse in (the ttl is fixed): lapsed ones are taken from
	// its front. Those dropped otherwise stay in it, marked, until they
	// reach the front or outnumber the kept ones.
	byEnd   []*tombstone
	dropped int // marked entries in byEnd
	// floor: ids issued at or before it are refused, since a tombstone of
	// one that old was dropped to make room.
	floor time.Time
}

// tombstone keeps its times as Unix nanoseconds (stampOf): 65,536 of them
// are kept for a day, and a time.Time is three times the size.
type tombstone struct {
	id            string
	until, issued int64
	heapAt        int // index in byIssue; -1 once dropped
}

// stampOf is t in Unix nanoseconds, clamped to what an int64 holds.
func stampOf(t time.Time) int64 {
	switch {
	case t.Before(minStamp):
		return math.MinInt64
	case t.After(maxStamp):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var minStamp, maxStamp = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

// issueHeap is a container/heap of tombstones by issue time.
type issueHeap []*tombstone

func (h issueHeap) Len() int           { return len(h) }
func (h issueHeap) Less(i, j int) bool { return h[i].issued < h[j].issued }
func (h issueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapAt, h[j].heapAt = i, j
}
func (h *issueHeap) Push(x any) {
	ts := x.(*tombstone)
	ts.heapAt = len(*h)
	*h = append(*h, ts)
}
func (h *issueHeap) Pop() any {
	old := *h
	ts := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return ts
}

func (t *tombstones) init(idle time.Duration, seal *sessionSeal) {
	t.window = adoptWindow(idle)
	t.ttl = t.window + clockSlack
	t.issued = func(id string) (time.Time, bool) {
		if seal == nil {
			return time.Time{}, false
		}
		c, ok := seal.open(id)
		return time.Unix(c.Issued, 0), ok
	}
}

// add records id as ended; false if it was already. At the bound it costs
// O(log n), not a pass over every tombstone: each session end pays it.
func (t *tombstones) add(id string, now time.Time) bool {
	issued, _ := t.issued(id)
	stamp := stampOf(now)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at == nil {
		t.at = map[string]*tombstone{}
	}
	if ts, ok := t.at[id]; ok {
		if stamp < ts.until {
			return false
		}
		t.drop(ts)
	}
	t.lapse(stamp)
	if len(t.at) >= maxTombstones {
		oldest := t.byIssue[0]
		t.drop(oldest)
		if oldest.issued > stampOf(t.floor) {
			t.floor = time.Unix(0, oldest.issued)
		}
	}
	ts := &tombstone{id: id, until: stampOf(now.Add(t.ttl)), issued: stampOf(issued)}
	heap.Push(&t.byIssue, ts)
	t.byEnd = append(t.byEnd, ts)
	t.at[id] = ts
	return true
}

// drop forgets ts; its entry in byEnd stays, marked.
func (t *tombstones) drop(ts *tombstone) {
	delete(t.at, ts.id)
	heap.Remove(&t.byIssue, ts.heapAt)
	ts.heapAt = -1
	t.dropped++
}

// lapse forgets the tombstones at byEnd's front that lapsed by now (a
// stamp), and compacts byEnd once the marked entries are the greater part.
func (t *tombstones) lapse(now int64) {
	for len(t.byEnd) > 0 {
		ts := t.byEnd[0]
		if ts.heapAt >= 0 {
			if now < ts.until {
				break
			}
			t.drop(ts)
		}
		t.dropped--
		t.byEnd[0] = nil
		t.byEnd = t.byEnd[1:]
	}
	if t.dropped > len(t.byEnd)/2 && t.dropped > 64 {
		kept := make([]*tombstone, 0, len(t.byEnd)-t.dropped)
		for _, ts := range t.byEnd {
			if ts.heapAt >= 0 {
				kept = append(kept, ts)
			}
		}
		t.byEnd, t.dropped = kept, 0
	}
}

func (t *tombstones) has(id string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts, ok := t.at[id]
	if ok && stampOf(now) >= ts.until {
		t.drop(ts)
		return false
	}
	return ok
}

// tooOld reports whether an id issued then may no longer be adopted: past
// the window, or at or before the floor.
func (t *tombstones) tooOld(issued, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return now.Sub(issued) > t.window || !issued.After(t.floor)
}

// Parked sessions (SV-2). A session idle for SessionParkAfter (no request,
// no stream, no resource subscription) is parked: its session object — the
// queue of its GET stream, its client info, its registration with mcp-go
// — is let go, and the endpoint's record stays: owner, place under the
// caps, idle clock, log level, the console's row and the gateway's
// credentials. The session's next request makes it again from the sealed
// id, as adoption does for a session opened elsewhere. A parked session
// still expires, ends by DELETE, by an operator, by another replica's word
// and at shutdown exactly as any other.
//
// What would have been queued for it meanwhile are the list changes told
// to every session (tools, resources, prompts): those are counted, and a
// woken session is told once of each kind that changed since it was
// parked. When anything was still queued as it was parked (a change no
// stream took yet), which kinds it was is not known, and it is told of
// every kind that ever changed.

// DefaultSessionParkAfter is how long a session is idle before it is
// parked, when EndpointOptions.SessionParkAfter is 0. A session calling
// more often than that is never parked; one calling less often pays one
// wake per call, small beside the call.
const DefaultSessionParkAfter = time.Second

// listChanges counts the list changes told to all sessions, by kind.
type listChanges struct{ tools, resources, prompts uint32 }

// parks reports whether this endpoint parks idle sessions: it needs the
// seal to make them again.
func (e *Endpoint) parks() bool {
	return e.seal != nil && !e.opts.Stateless && e.opts.SessionParkAfter > 0
}

// parkIdle parks the sessions idle for SessionParkAfter at now, and
// returns how many it parked.
func (e *Endpoint) parkIdle(now time.Time) int {
	n := 0
	for _, id := range e.ids.parkable(now, e.opts.SessionParkAfter) {
		if e.park(id, now) {
			n++
		}
	}
	return n
}

// park lets go of session id's session object, if it is still idle.
func (e *Endpoint) park(id string, now time.Time) bool {
	e.adopting.Lock()
	defer e.adopting.Unlock()
	s := e.ids.session(id)
	if s == nil {
		return false
	}
	if !e.sealHolds(id, s) {
		e.ids.pin(id)
		return false
	}
	e.notifying.Lock()
	defer e.notifying.Unlock()
	seen := e.changes
	if len(s.notes) > 0 {
		seen = listChanges{}
	}
	if !e.ids.markParked(id, s, now, e.opts.SessionParkAfter, seen) {
		return false
	}
	e.mcp.UnregisterSession(context.Background(), id)
	s.close()
	if e.opts.Sessions != nil {
		e.opts.Sessions.SetParked(id, true)
	}
	return true
}

// sealHolds reports whether id's seal carries all a woken session needs:
// the client's capabilities are left out of a seal when they are large.
func (e *Endpoint) sealHolds(id string, s *legacySession) bool {
	c, ok := e.seal.open(id)
	if !ok {
		return false
	}
	if len(c.Capabilities) > 0 {
		return true
	}
	caps, err := json.Marshal(s.GetClientCapabilities())
	return err == nil && string(caps) == "{}"
}

// wake makes parked session id again from its seal, with the log level it
// set, and returns the list changes it missed (notification methods), for
// the caller to tell it of: on a POST's answer ahead of it, or queued for
// its GET stream. false: the session has ended, or could not be made again
// and ends.
func (e *Endpoint) wake(id string) (owed []string, ok bool) {
	e.adopting.Lock()
	owed, ok, end, tell := e.wakeLocked(id)
	e.adopting.Unlock()
	if end {
		e.ended(id, tell)
	}
	return owed, ok
}

// wakeLocked is wake under e.adopting; end: it claimed the session's end,
// for the caller to finish outside the lock (ended).
func (e *Endpoint) wakeLocked(id string) (owed []string, ok, end, tell bool) {
	if e.ids.ended(id) {
		// Ended elsewhere, the end not made here yet: it is now.
		end, tell = e.endLocked(id, endedElsewhere)
		return nil, false, end, tell
	}
	e.notifying.Lock()
	defer e.notifying.Unlock()
	seen, ok := e.ids.parkedSeen(id)
	if !ok {
		// Woken by a request racing this one, or ended meanwhile.
		return nil, e.ids.session(id) != nil, false, false
	}
	c, ok := e.seal.open(id)
	if !ok {
		e.opts.Logger.Warn("waking a parked session failed; it ends", "endpoint", e.opts.Path)
		end, tell = e.endLocked(id, endedDropped)
		return nil, false, end, tell
	}
	s := sessionFromSeal(id, c)
	if level, ok := e.levels.getter(id)(); ok {
		s.SetLogLevel(level)
	}
	if err := e.mcp.RegisterSession(context.Background(), s); err != nil {
		e.opts.Logger.Warn("waking a parked session failed; it ends", "endpoint", e.opts.Path, "err", err)
		end, tell = e.endLocked(id, endedDropped)
		return nil, false, end, tell
	}
	e.ids.woke(id, s)
	if e.opts.Sessions != nil {
		e.opts.Sessions.SetParked(id, false)
	}
	if e.changes.tools != seen.tools {
		owed = append(owed, mcpgo.MethodNotificationToolsListChanged)
	}
	if e.changes.resources != seen.resources {
		owed = append(owed, mcpgo.MethodNotificationResourcesListChanged)
	}
	if e.changes.prompts != seen.prompts {
		owed = append(owed, mcpgo.MethodNotificationPromptsListChanged)
	}
	return owed, true, false, false
}

// tellOwed queues the notifications a woken session missed, for its GET
// stream.
func (e *Endpoint) tellOwed(id string, owed []string) {
	for _, method := range owed {
		_ = e.mcp.SendNotificationToSpecificClient(id, method, nil)
	}
}
