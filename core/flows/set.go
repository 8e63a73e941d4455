package flows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
)

// Flows outlive the replica that gathered them (IN-3). A session's labels
// live in memory where it is served, and in the store (core.FlowLabels):
// a replica that serves a flow it does not hold — a session adopted after
// its holder died or was restarted, a sessionless client's call that a
// load balancer sent elsewhere — reads the store on the flow's first call
// there, and a flow this replica holds whose labels grew on another
// replica (told by ChangedElsewhere), or that it let go of as idle,
// is read again. Were the labels only in memory, landing the next
// request on another replica, or on this one after a restart, would
// start the flow clean and escape a rule on session.labels.
//
// Labels only grow, so the store is written when a call adds labels the
// flow did not have (rare), never per call, and before the call's result
// is handed back: a crash between the two cannot lose what the client
// read. A write that fails withholds that result (fail closed): the
// labels would otherwise live on this replica only. A session is served by
// one replica at a time but for a moment (one adopted while the store did
// not list its holder yet): the others are told when its labels grow, and
// read them again. A sessionless client's next call may land anywhere:
// over a shared store each of its calls reads its flow (one read by key).
// A sessionless flow is also written when its stored until would come
// within a flow window of the call (at most every quarter window while it
// calls), so the store keeps it at least a window after its last call on
// any replica. A session's flow is kept for the adoption window and a
// margin after its last write: no replica may continue an id older than
// that (mcp/session's ContinuableFor).

// Backing is where a Set keeps its flows beyond memory; a zero value
// keeps them in memory only.
type Backing struct {
	Store core.FlowLabels
	// Grew is told of a session's flow whose labels grew in the store (its
	// digest), for the other replicas to read it again; nil tells no one,
	// and means no other replica shares the store.
	Grew func(digest string)
	// Keep is how long a session's flow is kept after its last write.
	Keep time.Duration
	// Sessions: sessions' flows go to the store too. Not when session ids
	// are not sealed: no other replica, and no later process, can
	// continue such a session.
	Sessions bool
}

// forFlow is b as it applies to a flow: without the store for a session
// that cannot be continued elsewhere.
func (b Backing) forFlow(sessioned bool) Backing {
	if sessioned && !b.Sessions {
		b.Store = nil
	}
	return b
}

// sessionlessKeep is how long past a call a sessionless flow is kept in
// the store: the window and a quarter, so a touch every quarter window
// keeps it at least the window after the last call.
func sessionlessKeep(window time.Duration) time.Duration { return window + window/4 }

// digest names flow key in the store and in events between replicas:
// a digest, so a session id never leaves the gateway.
func digest(key string) string {
	sum := sha256.Sum256([]byte("toolgate flow labels\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// Key names the flow a call belongs to: its session, or (2026-07-28, no
// session) its actor and client; sessioned says which.
func Key(session string, actor core.Actor, client string) (key string, sessioned bool) {
	if session != "" {
		return "session\x00" + session, true
	}
	return "actor\x00" + actor.Tenant + "\x00" + actor.ID + "\x00client\x00" + client, false
}

// Set keeps the labels each flow gathered: a session's until it ends, a
// sessionless client's (per actor and client name) until it has made no
// call for the flow window. The zero value is empty and ready. Safe for
// concurrent use.
type Set struct {
	mu    sync.Mutex
	flows map[string]*flow
	calls int // since the last sweep
	// news counts what ChangedElsewhere was told: a read of the store that
	// news overtook may predate it, and leaves its flow stale.
	news uint64
}

type flow struct {
	labels    []string
	last      time.Time
	sessioned bool
	digest    string // digest of its key
	// until is how long the store keeps the flow, as this replica last
	// wrote or read it; zero when it never did.
	until time.Time
	// unsaved: labels here may be missing from the store (a write failed);
	// the next call writes them all.
	unsaved bool
	// stale: the store may hold labels this copy lacks (they grew on
	// another replica); the next call reads it again.
	stale bool
}

// sweepEvery: a sweep of expired sessionless flows every so many calls
// keeps the map bounded by the clients active within the window.
const sweepEvery = 1024

// lapsed reports whether f is gone at now: a sessionless flow idle here
// for longer than the window.
func (f *flow) lapsed(window time.Duration, now time.Time) bool {
	return !f.sessioned && now.Sub(f.last) > window
}

// Labels are flow key's labels at now. A flow not held here (or lapsed
// here, or grown elsewhere) is read from b's store, if there is one; an
// error is the store's, never an empty set.
func (s *Set) Labels(ctx context.Context, b Backing, key string, sessioned bool, window time.Duration, now time.Time) ([]string, error) {
	b = b.forFlow(sessioned)
	s.mu.Lock()
	f := s.flows[key]
	// A sessionless client's calls are spread over the replicas by design:
	// with replicas sharing the store, every call reads it, since the last
	// one may have been served elsewhere a moment ago.
	held := f != nil && !f.lapsed(window, now) && (sessioned || b.Grew == nil)
	if b.Store == nil || held && !f.stale {
		var out []string
		if f != nil && !f.lapsed(window, now) {
			out = slices.Clone(f.labels)
		}
		s.mu.Unlock()
		return out, nil
	}
	news := s.news
	s.mu.Unlock()
	stored, until, err := b.Store.FlowLabels(ctx, digest(key), now)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flows == nil {
		s.flows = map[string]*flow{}
	}
	f = s.flows[key]
	if f == nil || f.lapsed(window, now) {
		// Held from now on, read or not: the next call does not ask again.
		f = &flow{sessioned: sessioned, last: now, digest: digest(key)}
		s.flows[key] = f
	}
	f.stale = s.news != news
	f.labels = union(f.labels, stored)
	if until.After(f.until) {
		f.until = until
	}
	return slices.Clone(f.labels), nil
}

// Add adds labels to flow key at now, and writes the flow to b's store
// when it grew (or a touch is due, or an earlier write failed) before it
// returns.
func (s *Set) Add(ctx context.Context, b Backing, key string, sessioned bool, window time.Duration, now time.Time, labels []string) error {
	b = b.forFlow(sessioned)
	s.mu.Lock()
	if s.flows == nil {
		s.flows = map[string]*flow{}
	}
	if s.calls++; s.calls >= sweepEvery {
		s.calls = 0
		for k, f := range s.flows {
			if f.lapsed(window, now) {
				delete(s.flows, k)
			}
		}
	}
	f := s.flows[key]
	if f == nil || f.lapsed(window, now) {
		f = &flow{sessioned: sessioned, digest: digest(key)}
		s.flows[key] = f
	}
	f.last = now
	merged := union(f.labels, labels)
	grown := len(merged) > len(f.labels)
	f.labels = merged
	var until time.Time
	write := false
	if b.Store != nil && len(f.labels) > 0 {
		if sessioned {
			until, write = now.Add(b.Keep), grown || f.unsaved
		} else {
			until, write = now.Add(sessionlessKeep(window)), grown || f.unsaved || f.until.Before(now.Add(window))
		}
	}
	var snapshot []string
	if write {
		snapshot, f.unsaved = slices.Clone(f.labels), false
	}
	s.mu.Unlock()
	if !write {
		return nil
	}
	err := b.Store.AddFlowLabels(ctx, f.digest, snapshot, now, until)
	s.mu.Lock()
	if err != nil {
		f.unsaved = true
	} else if until.After(f.until) {
		f.until = until
	}
	s.mu.Unlock()
	if err == nil && grown && sessioned && b.Grew != nil {
		b.Grew(f.digest)
	}
	return err
}

// union is a and b, sorted, without repeats; a is not changed.
func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Forget drops flow key from memory (its session ended); the store keeps
// it until it lapses there.
func (s *Set) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.flows, key)
}

// ChangedElsewhere marks the flow of digest (every flow for "") as grown
// on another replica: its next call here reads the store again.
func (s *Set) ChangedElsewhere(digest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.news++
	for _, f := range s.flows {
		if digest == "" || f.digest == digest {
			f.stale = true
		}
	}
}
