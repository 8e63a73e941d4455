package session

import (
	"errors"
	"fmt"
	"sync"
)

// Session bounds (SV-2), the defaults of the gateway.* keys that set them.
const (
	DefaultMaxSessions         = 10000
	DefaultMaxSessionsPerActor = 100
)

// ErrTooManySessions: an initialize was refused because a session cap is
// reached. The error is a *LimitError naming the cap.
var ErrTooManySessions = errors.New("too many sessions")

// LimitError says which cap refused a new session.
type LimitError struct {
	// Key is the configuration key of the cap (gateway.maxSessions,
	// gateway.maxSessionsPerActor).
	Key   string
	Limit int
	// Actor is the actor refused, for the per-actor cap.
	Actor string
}

func (e *LimitError) Error() string {
	if e.Actor != "" {
		return fmt.Sprintf("too many sessions: actor %q already has %d open sessions (%s); end one with DELETE or let it expire", e.Actor, e.Limit, e.Key)
	}
	return fmt.Sprintf("too many sessions: the gateway already has %d open sessions (%s); retry later", e.Limit, e.Key)
}

func (e *LimitError) Unwrap() error { return ErrTooManySessions }

// Limits caps open sessions in all and per actor (SV-2). One value is
// shared by every endpoint of a gateway, so the caps hold across them: its
// lock is its own, the one thing of a session's life that no table's lock
// covers. Safe for concurrent use.
type Limits struct {
	max, perActor int

	// mu guards the counts and every Slot taken from these limits.
	mu      sync.Mutex
	total   int
	byActor map[string]int
}

// NewLimits returns caps of max sessions in all and perActor per actor; a
// value ≤ 0 is its default.
func NewLimits(max, perActor int) *Limits {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	if perActor <= 0 {
		perActor = DefaultMaxSessionsPerActor
	}
	return &Limits{max: max, perActor: perActor, byActor: map[string]int{}}
}

// Open reports how many sessions hold a place.
func (l *Limits) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Acquire takes a place for a new session of actor. It is taken before the
// session exists, so concurrent initializes cannot overshoot a cap.
func (l *Limits) Acquire(actor string) (*Slot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.byActor[actor] >= l.perActor:
		return nil, &LimitError{Key: "gateway.maxSessionsPerActor", Limit: l.perActor, Actor: actor}
	case l.total >= l.max:
		return nil, &LimitError{Key: "gateway.maxSessions", Limit: l.max}
	}
	l.total++
	l.byActor[actor]++
	return &Slot{limits: l, actor: actor}, nil
}

// Slot is one place under the caps. The request that took it releases it
// (RequestDone) unless a session was opened with it; then the session
// holds it until its end forgets it. Its limits' lock guards it.
type Slot struct {
	limits   *Limits
	actor    string
	claimed  bool
	released bool
}

// claim hands the slot to an opened session; false if it was claimed
// already (a request opens at most one session).
func (s *Slot) claim() bool {
	s.limits.mu.Lock()
	defer s.limits.mu.Unlock()
	if s.claimed || s.released {
		return false
	}
	s.claimed = true
	return true
}

// RequestDone runs when the request that took the slot ends.
func (s *Slot) RequestDone() {
	s.limits.mu.Lock()
	defer s.limits.mu.Unlock()
	if !s.claimed {
		s.releaseLocked()
	}
}

func (s *Slot) release() {
	s.limits.mu.Lock()
	defer s.limits.mu.Unlock()
	s.releaseLocked()
}

// releaseLocked gives the place back once; the limits' lock is held.
func (s *Slot) releaseLocked() {
	if s.released {
		return
	}
	s.released = true
	l := s.limits
	l.total--
	if l.byActor[s.actor]--; l.byActor[s.actor] <= 0 {
		delete(l.byActor, s.actor)
	}
}
