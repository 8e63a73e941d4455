package serve

import (
	"net/http"
	"sync"
	"time"
)

// Connection deadlines (SV-9), the defaults of the gateway.* keys that set
// them.
const (
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultHeartbeatInterval = 15 * time.Second
)

// WithDeadlines bounds each request's body read by read and each response
// write by write (SV-9). They are per request rather than the server's
// ReadTimeout and WriteTimeout: those run from the start of the request,
// so they would cut an event stream that outlives them — and a read
// deadline passing during a response cancels its context. The endpoint
// clears the read deadline once it has the body and moves the write
// deadline on with every write, heartbeats included.
func WithDeadlines(h http.Handler, read, write time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		now := time.Now()
		if read > 0 && r.ContentLength != 0 {
			// A body sent slowly, or shorter than its Content-Length, is
			// cut at the deadline.
			_ = rc.SetReadDeadline(now.Add(read))
		}
		if write > 0 {
			_ = rc.SetWriteDeadline(now.Add(write))
		}
		h.ServeHTTP(w, r)
	})
}

// deadline moves a response's write deadline on before each write, so a
// client that stops reading is cut after timeout while a stream that keeps
// flowing is never cut.
type deadline struct {
	rc      *http.ResponseController
	timeout time.Duration
	// at is when the deadline was last moved. Moving it again within
	// extendSlack changes nothing a client could notice and costs a timer
	// update in the poller: a call's answer is a header and a body moments
	// apart.
	at time.Time
}

const extendSlack = time.Millisecond

func newDeadline(w http.ResponseWriter, timeout time.Duration) deadline {
	return deadline{rc: http.NewResponseController(w), timeout: timeout}
}

// extend is called with the writer's lock held.
func (d *deadline) extend() {
	if d.timeout <= 0 {
		return
	}
	now := time.Now()
	if !d.at.IsZero() && now.Sub(d.at) < extendSlack {
		return
	}
	d.at = now
	_ = d.rc.SetWriteDeadline(now.Add(d.timeout))
}

// streamWriter is a GET stream's event stream, its header sent: every
// write moves the write deadline on, and a heartbeat keeps it alive
// through proxies and the deadline alike.
type streamWriter struct {
	w  http.ResponseWriter
	dl deadline

	mu sync.Mutex
	// ended: the handler returned; nothing may write any more.
	ended bool
}

// keepAlive sends a heartbeat every interval until the returned function
// is called, when the handler returns: from then on nothing writes.
func (s *streamWriter) keepAlive(interval time.Duration) (stop func()) {
	stopBeat := heartbeat(interval, s.ping)
	return func() {
		stopBeat()
		s.mu.Lock()
		s.ended = true
		s.mu.Unlock()
	}
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dl.extend()
	return s.w.Write(p)
}

func (s *streamWriter) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dl.extend()
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// ping writes an SSE comment, which clients ignore.
func (s *streamWriter) ping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.dl.extend()
	if _, err := s.w.Write([]byte(": ping\n\n")); err == nil {
		if f, ok := s.w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// heartbeat pings every interval until the returned function is called;
// once it returns, no ping runs or will. A timer rather than a goroutine:
// every POST has one, and most end long before the first ping.
func heartbeat(interval time.Duration, ping func()) func() {
	if interval <= 0 {
		return func() {}
	}
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	t = time.AfterFunc(interval, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		ping()
		t.Reset(interval)
	})
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}
