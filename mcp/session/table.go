package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// Table keeps the legacy sessions of one endpoint: one record per session
// — whose it is, what holds it open, when it was last used, its place under
// the caps, its phase — and the ids ended here (tombstones). Every change of
// a session's life is one of its methods, made under its one lock through
// Step: open, adopt, park, wake, the idle sweep, end, shutdown. An id with
// no record that serves is unknown, ended or not: the endpoint answers 404
// for it.
//
// What a change asks of the endpoint is its Host's. The calls marked
// locked run under the table's lock, so that a change and its effect on
// the protocol server are one step to every other request; they are quick
// and never call the table. The rest (telling the other replicas, letting
// go of what a session held) run after the lock, so that one session's end
// holds up no other session's request.
//
// A session ends in two steps. Under the lock an end claims it (whichever
// end claims first is the one) and it stops serving; then, outside the
// lock, what it holds is let go of and its record forgotten. Until then its
// id is refused: a request racing the end cannot wake, adopt or make it
// again.
type Table[C Conn] struct {
	host  Host[C]
	seal  *Seal
	path  string
	parks time.Duration
	now   func() time.Time

	mu   sync.Mutex
	byID map[string]*record[C]
	gone tombstones
	// changes counts the list changes told to every session; a woken
	// session is told of those since it was parked.
	changes Changes
	// closed: Close began; no session opens (or is adopted) from then on.
	closed bool
}

// Conn is a live session's object as the endpoint serves it; the zero C
// is none.
type Conn interface {
	comparable
	// ProtocolVersion is the revision the session negotiated.
	ProtocolVersion() string
}

// Host is the endpoint a table keeps sessions for.
type Host[C Conn] interface {
	// Register makes c, session id, known to the protocol server; an
	// error opens nothing. opened: a new session (an initialize's or an
	// adopted one), told to the gateway and the console with ctx, the
	// request's that opened or continued it; else a parked one woken.
	// Locked.
	Register(ctx context.Context, id string, c C, opened bool) error
	// Remake makes the session a sealed id carries, as its initialize made
	// it where it opened (adoption, waking). Locked.
	Remake(id string, s Sealed) C
	// Parkable reports whether c may be parked, its id carrying s: ok
	// when the seal holds all a woken session needs; queued when something
	// waits for its GET stream. Locked.
	Parkable(c C, s Sealed) (ok, queued bool)
	// Release lets go of c: its GET streams end and the protocol server
	// forgets it; parked: the session stays, parked. Locked.
	Release(id string, c C, parked bool)
	// Terminated tells the other replicas that session id ended for good.
	Terminated(id string)
	// Gone lets go of everything else the endpoint keeps for a session
	// that ended, however it ended.
	Gone(id string)
}

// Options configure a table.
type Options struct {
	// Seal makes ids resumable (seal.go); nil mints plain random ids,
	// known only here.
	Seal *Seal
	// Path is the endpoint's, which a sealed id names.
	Path string
	// IdleTimeout sets the adoption window (tombstones.go).
	IdleTimeout time.Duration
	// ParkAfter is how long a session is idle before it is parked; ≤ 0
	// never, as without a Seal.
	ParkAfter time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Changes counts the list changes told to all sessions, by kind.
type Changes struct{ Tools, Resources, Prompts uint32 }

// Errors of opening and adopting.
var (
	// ErrClosed: Close began, and no session opens.
	ErrClosed = errors.New("the endpoint is shutting down")
	// ErrTaken: a session of that id is still live, or being ended.
	ErrTaken = errors.New("a session of that id is live or being ended")
	// ErrNotAdopted: the id is not one this endpoint may continue.
	ErrNotAdopted = errors.New("session cannot be continued here")
)

// record is one session as the table knows it; the table's lock guards
// every field. A record that does not serve is kept until the session's
// end lets go of what it holds; a record of GET streams alone (Listen) is
// Absent. Its owner is kept through the end, so that its client's DELETE
// racing an end that is not for good is known to be its own.
type record[C Conn] struct {
	View[C]
	// streams counts the open GET streams; busy the open requests and
	// streams; seen is when the last one ended (or the session opened). A
	// session is idle when it has none open and was last seen longer ago
	// than the timeout.
	streams, busy int
	seen          time.Time
	// slot is the place the session holds under the caps (SV-2).
	slot *Slot
	// parked are the list changes told to all sessions before the session
	// was parked; nil when it is not parked. pinned sessions are never
	// parked: subscribed to resources, or with more than the id carries.
	parked *Changes
	pinned bool
}

// New is an empty table for host.
func New[C Conn](host Host[C], opts Options) *Table[C] {
	t := &Table[C]{host: host, seal: opts.Seal, path: opts.Path, now: opts.Now, byID: map[string]*record[C]{}}
	if t.now == nil {
		t.now = time.Now
	}
	if t.seal != nil {
		t.parks = opts.ParkAfter
	}
	t.gone.init(opts.IdleTimeout, opts.Seal)
	return t
}

// Parks reports whether the table parks idle sessions: it needs the seal
// to make them again.
func (t *Table[C]) Parks() bool { return t.parks > 0 }

// Resumable reports whether ids are sealed, so another replica, or this
// one restarted, may continue them.
func (t *Table[C]) Resumable() bool { return t.seal != nil }

// NewID is a random id, 32 hex digits.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Mint is the id of a session that initialize (its request body) opens for
// actor of tenant: sealed with what it declared, or random without a seal.
func (t *Table[C]) Mint(actor, tenant string, initialize []byte) string {
	if t.seal == nil {
		return NewID()
	}
	c := Sealed{Path: t.path, Actor: actor, Tenant: tenant, Issued: t.now().Unix()}
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
	if len(initialize) > 0 && json.Unmarshal(initialize, &init) == nil {
		c.Protocol = init.Params.ProtocolVersion
		c.Capabilities = init.Params.Capabilities
		c.ClientName, c.ClientVersion = init.Params.ClientInfo.Name, init.Params.ClientInfo.Version
	}
	return t.seal.Seal(c)
}

// Open makes c, session id, a live session of owner holding slot (SV-2):
// registered by the host, and holding its place under the caps until it
// is forgotten, however it ends. ErrClosed once Close began; ErrTaken when
// the id has a record still; the host's error when it could not register
// it. An error opens nothing, and leaves slot to its request.
func (t *Table[C]) Open(ctx context.Context, id, owner string, c C, slot *Slot) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.openLocked(ctx, id, owner, c, slot)
}

func (t *Table[C]) openLocked(ctx context.Context, id, owner string, c C, slot *Slot) error {
	if t.closed {
		return ErrClosed
	}
	if t.byID[id] != nil {
		return ErrTaken
	}
	if err := t.host.Register(ctx, id, c, true); err != nil {
		return err
	}
	if slot != nil && !slot.claim() {
		// A request opens at most one session.
		slot = nil
	}
	phase, _ := Step(Phase{}, Event{Kind: Open})
	t.byID[id] = &record[C]{View: View[C]{Phase: phase, Owner: owner, Conn: c, Protocol: c.ProtocolVersion()}, seen: t.now(), slot: slot}
	return nil
}

// Adopt continues, on this replica, a session opened elsewhere (or before
// a restart) for a request of actor of tenant (OP-5): id must open under
// the seal, name this endpoint and the actor, not have been ended, and be
// within the adoption window. The session is made from what the id
// carries, and takes a place under limits. adopted: it opened; false with
// no error when the id has a record already (adopted by a request racing
// this one, or being ended: not made again until its end let go of what
// it holds). ErrNotAdopted, ErrClosed, a *LimitError, or the host's error
// when it did not open.
func (t *Table[C]) Adopt(ctx context.Context, id, actor, tenant string, limits *Limits) (adopted bool, err error) {
	if t.seal == nil {
		return false, ErrNotAdopted
	}
	c, ok := t.seal.Open(id)
	if !ok || c.Path != t.path || c.Actor != actor || c.Tenant != tenant {
		return false, ErrNotAdopted
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.gone.tooOld(time.Unix(c.Issued, 0), t.now()) || t.gone.has(id, t.now()):
		return false, ErrNotAdopted
	case t.byID[id] != nil:
		return false, nil
	case t.closed:
		// A session adopted now would outlive Close.
		return false, ErrClosed
	}
	slot, err := limits.Acquire(actor)
	if err != nil {
		return false, err
	}
	defer slot.RequestDone()
	s := t.host.Remake(id, c)
	if err := t.openLocked(ctx, id, actor, s, slot); err != nil {
		return false, err
	}
	return true, nil
}

// End ends session id, live, parked or taken by the idle sweep, for cause:
// it stops serving at once, the host lets go of it, and an end for good is
// recorded (and told to the other replicas when its client or an operator
// ended it). Two ends racing end it once: end reports whether this one
// did. upgraded: another end, not for good (a shutdown, the idle sweep),
// was under way, and this one, for good, made it so (SV-2, OP-5).
func (t *Table[C]) End(id string, cause Cause) (end, upgraded bool) {
	t.mu.Lock()
	end, upgraded, tell := t.endLocked(id, cause)
	t.mu.Unlock()
	switch {
	case end:
		t.finish(id, tell)
	case tell:
		t.host.Terminated(id)
	}
	return end, upgraded
}

// endLocked is End under the lock, and makes what must be at once. end:
// it claimed the end, the host let go of the session object, an end for
// good is recorded, and the caller finishes it after the lock. upgraded:
// it made an end under way one for good, and recorded it. tell: the other
// replicas are to be told.
func (t *Table[C]) endLocked(id string, cause Cause) (end, upgraded, tell bool) {
	rec := t.byID[id]
	if rec == nil {
		return false, false, false
	}
	was := rec.Phase.Cause
	phase, out := Step(rec.Phase, Event{Kind: End, Cause: cause})
	if out == Upgraded {
		rec.Phase = phase
		// The idle sweep recorded the end already, but told no one.
		return false, true, (t.gone.add(id, t.now()) || was == Idle) && cause == ByClient
	}
	if out != Claimed {
		return false, false, false
	}
	var zero C
	c := rec.Conn
	rec.Phase, rec.Conn, rec.parked = phase, zero, nil
	if c != zero {
		t.host.Release(id, c, false)
	}
	switch cause {
	case ByClient:
		tell = t.gone.add(id, t.now())
	case Elsewhere, Idle:
		t.gone.add(id, t.now())
	}
	return true, false, tell
}

// finish completes the end endLocked claimed, outside the lock: the other
// replicas told when tell, then everything the session held let go of. Its
// record goes last: until then the id is refused, so a session adopted
// again under it is not let go of with it.
func (t *Table[C]) finish(id string, tell bool) {
	if tell {
		t.host.Terminated(id)
	}
	t.host.Gone(id)
	t.mu.Lock()
	rec := t.byID[id]
	if rec != nil {
		if phase, out := Step(rec.Phase, Event{Kind: Forget}); out != Refused {
			rec.Phase = phase
		}
	}
	delete(t.byID, id)
	t.mu.Unlock()
	if rec != nil && rec.slot != nil {
		rec.slot.release()
	}
}

// EndedElsewhere is told that another replica ended session id: it is not
// adopted here, and ended if it was (OP-5). The end is recorded before the
// session is looked for, so an adoption racing it either ends first, and
// is ended here, or sees the end and refuses.
func (t *Table[C]) EndedElsewhere(id string) {
	t.Tombstone(id)
	t.End(id, Elsewhere)
}

// Tombstone records id as ended here, not to be adopted; false if it was
// already.
func (t *Table[C]) Tombstone(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gone.add(id, t.now())
}

// Ended reports whether id was ended here (or told so), and not forgotten.
func (t *Table[C]) Ended(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gone.has(id, t.now())
}

// Close ends every session no end claimed yet, and opens none from then on
// (SV-9). The sessions a shutdown ends are not ended for good: another
// replica, or this gateway restarted, may continue them. One its client or
// an operator ends meanwhile is, as at any other time.
func (t *Table[C]) Close() {
	t.mu.Lock()
	t.closed = true
	var ids []string
	for id, rec := range t.byID {
		if rec.Phase.Endable() {
			ids = append(ids, id)
		}
	}
	t.mu.Unlock()
	for _, id := range ids {
		t.End(id, Dropped)
	}
}

// TakeIdle takes the sessions idle for timeout or longer at now and makes
// them refused at once, so a request racing the sweeper gets 404 rather
// than a session that is being ended under it; their records stay until
// their end (End, Idle) let go of what they hold.
func (t *Table[C]) TakeIdle(now time.Time, timeout time.Duration) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var idle []string
	for id, rec := range t.byID {
		if rec.busy > 0 || now.Sub(rec.seen) < timeout {
			continue
		}
		phase, out := Step(rec.Phase, Event{Kind: TakeIdle})
		if out == Refused {
			continue
		}
		rec.Phase = phase
		idle = append(idle, id)
	}
	return idle
}

// Parked sessions (SV-2). A session idle for ParkAfter (no request, no
// stream, no resource subscription) is parked: its session object — the
// queue of its GET stream, its client info, its registration with the
// protocol server — is let go, and its record stays: owner, place under
// the caps, idle clock. The session's next request makes it again from the
// sealed id (Wake), as adoption does for a session opened elsewhere. A
// parked session still expires, ends by DELETE, by an operator, by another
// replica's word and at shutdown exactly as any other.
//
// What would have been queued for it meanwhile are the list changes told
// to every session (Tell): those are counted, and a woken session is told
// once of each kind that changed since it was parked. When anything was
// still queued as it was parked (a change no stream took yet), which kinds
// it was is not known, and it is told of every kind that ever changed.

// ParkIdle parks the sessions idle for ParkAfter at now, and returns how
// many it parked.
func (t *Table[C]) ParkIdle(now time.Time) int {
	t.mu.Lock()
	var ids []string
	for id, rec := range t.byID {
		if rec.idleFor(now, t.parks) {
			ids = append(ids, id)
		}
	}
	t.mu.Unlock()
	n := 0
	for _, id := range ids {
		if t.Park(id, now) {
			n++
		}
	}
	return n
}

// idleFor reports whether the session may be parked at now, idle for
// after; the lock is held.
func (rec *record[C]) idleFor(now time.Time, after time.Duration) bool {
	return rec.Phase.State == Live && rec.busy == 0 && rec.streams == 0 && !rec.pinned && now.Sub(rec.seen) >= after
}

// Park lets go of session id's session object, if it is still idle at now.
func (t *Table[C]) Park(id string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.byID[id]
	var zero C
	if rec == nil || rec.Conn == zero || t.parks <= 0 {
		return false
	}
	sealed, ok := t.seal.Open(id)
	holds, queued := false, false
	if ok {
		holds, queued = t.host.Parkable(rec.Conn, sealed)
	}
	if !holds {
		rec.pinned = true
		return false
	}
	if !rec.idleFor(now, t.parks) {
		return false
	}
	phase, out := Step(rec.Phase, Event{Kind: Park})
	if out == Refused {
		return false
	}
	seen := t.changes
	if queued {
		seen = Changes{}
	}
	c := rec.Conn
	rec.Phase, rec.Conn, rec.parked = phase, zero, &seen
	t.host.Release(id, c, true)
	return true
}

// Wake makes parked session id again from its seal, and returns the list
// changes it missed, counted by kind, for the caller to tell it of. ok: it
// serves, woken here or by a request racing this one. false: it has ended,
// or could not be made again and ends; err says why it could not.
func (t *Table[C]) Wake(ctx context.Context, id string) (missed Changes, ok bool, err error) {
	t.mu.Lock()
	missed, ok, end, tell, err := t.wakeLocked(ctx, id)
	t.mu.Unlock()
	if end {
		t.finish(id, tell)
	}
	return missed, ok, err
}

// wakeLocked is Wake under the lock; end: it claimed the session's end,
// for the caller to finish outside the lock.
func (t *Table[C]) wakeLocked(ctx context.Context, id string) (missed Changes, ok, end, tell bool, err error) {
	if t.gone.has(id, t.now()) {
		// Ended elsewhere, the end not made here yet: it is now.
		end, _, tell = t.endLocked(id, Elsewhere)
		return Changes{}, false, end, tell, nil
	}
	rec := t.byID[id]
	if rec == nil || rec.Phase.State != Parked {
		// Woken by a request racing this one, or ended meanwhile.
		var zero C
		return Changes{}, rec != nil && rec.Conn != zero, false, false, nil
	}
	sealed, ok := t.seal.Open(id)
	if !ok {
		end, _, tell = t.endLocked(id, Dropped)
		return Changes{}, false, end, tell, errors.New("its id no longer opens under the seal")
	}
	c := t.host.Remake(id, sealed)
	if err := t.host.Register(ctx, id, c, false); err != nil {
		end, _, tell = t.endLocked(id, Dropped)
		return Changes{}, false, end, tell, err
	}
	seen := *rec.parked
	phase, _ := Step(rec.Phase, Event{Kind: Wake})
	rec.Phase, rec.Conn, rec.parked = phase, c, nil
	now := t.changes
	missed = Changes{Tools: now.Tools - seen.Tools, Resources: now.Resources - seen.Resources, Prompts: now.Prompts - seen.Prompts}
	return missed, true, false, false, nil
}

// Tell runs tell, which tells every session of list changes and counts
// them in c, under the lock: a change reaches either a session's queue or
// its parked record, never neither.
func (t *Table[C]) Tell(tell func(c *Changes)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tell(&t.changes)
}

// Pin keeps live session id from ever being parked.
func (t *Table[C]) Pin(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rec := t.byID[id]; rec != nil && rec.Phase.Serves() {
		rec.pinned = true
	}
}

// View is a session's record as a request reads it, at one moment: the
// zero View for an id with no record.
type View[C Conn] struct {
	// Phase is where the session is in its life: live or parked (it
	// serves), taken by the idle sweep, or ending with its cause.
	Phase Phase
	// Owner is the actor's id.
	Owner string
	// Conn is the session as the endpoint serves it; zero while parked.
	Conn     C
	Protocol string
}

// OwnedBy reports whether the session is actor's (or bound to none).
func (v View[C]) OwnedBy(actor string) bool { return v.Owner == "" || v.Owner == actor }

// Lookup is session id's record as it is now.
func (t *Table[C]) Lookup(id string) View[C] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rec := t.byID[id]; rec != nil {
		return rec.View
	}
	return View[C]{}
}

// Enter marks id busy until the returned function is called: a session is
// not idle while a request or stream of it is open.
func (t *Table[C]) Enter(id string) func() {
	t.mu.Lock()
	rec := t.byID[id]
	if rec != nil {
		rec.busy++
	}
	t.mu.Unlock()
	if rec == nil {
		return func() {}
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		rec.busy--
		if rec.Phase.Serves() {
			rec.seen = t.now()
		}
	}
}

// Listen counts an open GET stream until the returned function is called;
// false when the session has max open already. An id with no record (on a
// stateless endpoint, where any id may be listened on) is counted on a
// record kept only while its streams are open.
func (t *Table[C]) Listen(id string, max int) (func(), bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.byID[id]
	if rec == nil {
		rec = &record[C]{}
		t.byID[id] = rec
	}
	if rec.streams >= max {
		return nil, false
	}
	rec.streams++
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		rec.streams--
		var zero C
		if rec.streams == 0 && rec.Phase.State == Absent && rec.Conn == zero && rec.slot == nil && rec.busy == 0 && t.byID[id] == rec {
			delete(t.byID, id)
		}
	}, true
}

// Forget drops the record of id's GET streams alone (a stateless
// endpoint's), whose streams' session is gone; a session's record is its
// end's to drop.
func (t *Table[C]) Forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rec := t.byID[id]; rec != nil && rec.Phase.State == Absent {
		delete(t.byID, id)
	}
}

// Count is how many ids have a record, and how many of them are parked.
func (t *Table[C]) Count() (records, parked int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rec := range t.byID {
		if rec.Phase.State == Parked {
			parked++
		}
	}
	return len(t.byID), parked
}
