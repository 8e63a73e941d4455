package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Session bounds (SV-2), the defaults of the gateway.* keys that set them.
const (
	DefaultSessionIdleTimeout   = 30 * time.Minute
	DefaultMaxSessions          = 10000
	DefaultMaxSessionsPerActor  = 100
	DefaultMaxStreamsPerSession = 4
)

// ErrTooManySessions: an initialize was refused because a session cap is
// reached. The error is a *SessionLimitError naming the cap.
var ErrTooManySessions = errors.New("too many sessions")

// SessionLimitError says which cap refused a new session.
type SessionLimitError struct {
	// Key is the configuration key of the cap (gateway.maxSessions,
	// gateway.maxSessionsPerActor).
	Key   string
	Limit int
	// Actor is the actor refused, for the per-actor cap.
	Actor string
}

func (e *SessionLimitError) Error() string {
	if e.Actor != "" {
		return fmt.Sprintf("too many sessions: actor %q already has %d open sessions (%s); end one with DELETE or let it expire", e.Actor, e.Limit, e.Key)
	}
	return fmt.Sprintf("too many sessions: the gateway already has %d open sessions (%s); retry later", e.Limit, e.Key)
}

func (e *SessionLimitError) Unwrap() error { return ErrTooManySessions }

// SessionLimits caps open sessions in all and per actor (SV-2). One value
// is shared by every endpoint of a gateway, so the caps hold across them.
// Safe for concurrent use.
type SessionLimits struct {
	max, perActor int

	mu      sync.Mutex
	total   int
	byActor map[string]int
}

// NewSessionLimits returns caps of max sessions in all and perActor per
// actor; a value ≤ 0 is its default.
func NewSessionLimits(max, perActor int) *SessionLimits {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	if perActor <= 0 {
		perActor = DefaultMaxSessionsPerActor
	}
	return &SessionLimits{max: max, perActor: perActor, byActor: map[string]int{}}
}

// Open reports how many sessions hold a place.
func (l *SessionLimits) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// acquire takes a place for a new session of actor. It is taken before the
// session exists, so concurrent initializes cannot overshoot a cap.
func (l *SessionLimits) acquire(actor string) (*sessionSlot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.byActor[actor] >= l.perActor:
		return nil, &SessionLimitError{Key: "gateway.maxSessionsPerActor", Limit: l.perActor, Actor: actor}
	case l.total >= l.max:
		return nil, &SessionLimitError{Key: "gateway.maxSessions", Limit: l.max}
	}
	l.total++
	l.byActor[actor]++
	return &sessionSlot{limits: l, actor: actor}, nil
}

func (l *SessionLimits) release(actor string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byActor[actor]--; l.byActor[actor] <= 0 {
		delete(l.byActor, actor)
	}
}

// sessionSlot is one place under the caps. The request that took it
// releases it unless a session was opened with it; then the session holds
// it until it is forgotten.
type sessionSlot struct {
	limits *SessionLimits
	actor  string

	mu       sync.Mutex
	claimed  bool
	released bool
}

// claim hands the slot to an opened session; false if it was claimed
// already (a request opens at most one session).
func (s *sessionSlot) claim() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claimed || s.released {
		return false
	}
	s.claimed = true
	return true
}

// requestDone runs when the request that took the slot ends.
func (s *sessionSlot) requestDone() {
	s.mu.Lock()
	claimed := s.claimed
	s.mu.Unlock()
	if !claimed {
		s.release()
	}
}

func (s *sessionSlot) release() {
	s.mu.Lock()
	done := s.released
	s.released = true
	s.mu.Unlock()
	if !done {
		s.limits.release(s.actor)
	}
}

// refuseSession answers a request that would open a session over a cap:
// 429 when the actor's own cap is reached, 503 when the gateway's is; an
// initialize gets a JSON-RPC error saying which.
func refuseSession(w http.ResponseWriter, r *http.Request, body []byte, err error) {
	status := http.StatusServiceUnavailable
	var le *SessionLimitError
	if errors.As(err, &le) && le.Actor != "" {
		status = http.StatusTooManyRequests
	}
	if r.Method != http.MethodPost {
		http.Error(w, err.Error(), status)
		return
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &req)
	if len(req.ID) == 0 {
		req.ID = json.RawMessage("null")
	}
	rpcErr := map[string]any{"code": codeTooManySessions, "message": err.Error()}
	if le != nil {
		rpcErr["data"] = map[string]any{"limit": le.Key, "max": le.Limit}
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": rpcErr})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// codeTooManySessions is the JSON-RPC error code of a refused initialize,
// in the range JSON-RPC leaves to servers.
const codeTooManySessions = -32001

// sweepInterval is how often idle sessions are looked for: a quarter of
// the timeout, so a session outlives it by at most a quarter, within
// bounds that keep the sweeper cheap and prompt.
func sweepInterval(timeout time.Duration) time.Duration {
	return min(max(timeout/4, time.Second), time.Minute)
}

// parkInterval is how often sessions to park are looked for: half the
// wait, so a session is parked at most half as late again.
func parkInterval(after time.Duration) time.Duration {
	return max(after/2, 10*time.Millisecond)
}

// sweep ends sessions idle for longer than the timeout, and parks those
// idle for SessionParkAfter (resume.go), until stop closes.
func (e *Endpoint) sweep(stop <-chan struct{}) {
	defer e.swept.Done()
	timeout := e.opts.SessionIdleTimeout
	var expire, park <-chan time.Time
	if timeout > 0 {
		t := time.NewTicker(sweepInterval(timeout))
		defer t.Stop()
		expire = t.C
	}
	if e.parks() {
		t := time.NewTicker(parkInterval(e.opts.SessionParkAfter))
		defer t.Stop()
		park = t.C
	}
	for {
		select {
		case <-stop:
			return
		case now := <-park:
			e.parkIdle(now)
		case <-expire:
			e.clients.sweep(time.Now())
			for _, id := range e.ids.takeIdle(time.Now(), timeout) {
				e.opts.Logger.Info("session expired", "endpoint", e.opts.Path, "session", id, "idle", timeout.String())
				e.endSession(id, endedIdle)
			}
		}
	}
}
