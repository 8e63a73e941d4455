package serve

import (
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// A client can post a JSON-RPC response to a request the gateway never
// made. Each is refused, but logging each would let any client write log
// lines at will, so they are logged as a WARN at most once per session per
// unsolicitedEvery, and at most unsolicitedBurst times per interval in all;
// the rest are counted.
const (
	unsolicitedEvery = time.Minute
	unsolicitedBurst = 20
)

// unsolicitedMsg is the log text of an unsolicited response.
const unsolicitedMsg = "ignored a response to a request the gateway never made"

// unsolicited rate-limits the log lines of unsolicited responses.
type unsolicited struct {
	total atomic.Int64

	mu sync.Mutex
	// last is when each session's last line was written, and how many of
	// its responses went unlogged since.
	last map[string]*unsolicitedSession
	// window and inWindow bound the lines of all sessions together.
	window   time.Time
	inWindow int
}

type unsolicitedSession struct {
	at         time.Time
	suppressed int
}

// note counts one unsolicited response of session and logs it unless the
// rate limit says otherwise.
func (u *unsolicited) note(log *slog.Logger, endpoint, session string, body []byte) {
	u.total.Add(1)
	now := time.Now()
	u.mu.Lock()
	if u.last == nil {
		u.last = map[string]*unsolicitedSession{}
	}
	s := u.last[session]
	if s == nil {
		s = &unsolicitedSession{}
		u.last[session] = s
	}
	if now.Sub(u.window) >= unsolicitedEvery {
		u.window, u.inWindow = now, 0
	}
	if !s.at.IsZero() && now.Sub(s.at) < unsolicitedEvery || u.inWindow >= unsolicitedBurst {
		s.suppressed++
		u.mu.Unlock()
		return
	}
	suppressed := s.suppressed
	s.at, s.suppressed = now, 0
	u.inWindow++
	u.mu.Unlock()
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &msg)
	id := string(msg.ID)
	if len(id) > 64 {
		id = id[:64] + "…"
	}
	log.Warn(unsolicitedMsg, "endpoint", endpoint, "session", session, "id", id,
		"unloggedSinceLast", suppressed, "total", u.total.Load(), "next", "at most one line per session per minute")
}

// forget drops a session's state when it ends.
func (u *unsolicited) forget(session string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.last, session)
}
