package serve

import (
	"errors"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/mcp/session"
)

// Session bounds (SV-2), the defaults of the gateway.* keys that set them.
const (
	DefaultSessionIdleTimeout   = 30 * time.Minute
	DefaultMaxSessions          = session.DefaultMaxSessions
	DefaultMaxSessionsPerActor  = session.DefaultMaxSessionsPerActor
	DefaultMaxStreamsPerSession = 4
)

// refuseSession answers a request that would open a session over a cap:
// 429 when the actor's own cap is reached, 503 when the gateway's is; an
// initialize gets a JSON-RPC error saying which.
func refuseSession(w http.ResponseWriter, r *http.Request, body []byte, err error) {
	status := http.StatusServiceUnavailable
	var le *session.LimitError
	if errors.As(err, &le) && le.Actor != "" {
		status = http.StatusTooManyRequests
	}
	if r.Method != http.MethodPost {
		http.Error(w, err.Error(), status)
		return
	}
	e := &modernError{code: codeTooManySessions, message: err.Error()}
	if le != nil {
		e.data = map[string]any{"limit": le.Key, "max": le.Limit}
	}
	writeJSON(w, status, errorBody(idOf(body), e))
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
// idle for SessionParkAfter (package session), until stop closes.
func (e *Endpoint) sweep(stop <-chan struct{}) {
	defer e.swept.Done()
	timeout := e.opts.SessionIdleTimeout
	var expire, park <-chan time.Time
	if timeout > 0 {
		t := time.NewTicker(sweepInterval(timeout))
		defer t.Stop()
		expire = t.C
	}
	if e.ids.Parks() {
		t := time.NewTicker(parkInterval(e.opts.SessionParkAfter))
		defer t.Stop()
		park = t.C
	}
	for {
		select {
		case <-stop:
			return
		case now := <-park:
			e.ids.ParkIdle(now)
		case <-expire:
			e.clients.sweep(time.Now())
			for _, id := range e.ids.TakeIdle(time.Now(), timeout) {
				e.opts.Logger.Info("session expired", "endpoint", e.opts.Path, "session", id, "idle", timeout.String())
				e.ids.End(id, session.Idle)
			}
		}
	}
}
