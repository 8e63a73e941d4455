package admin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/core"
)

// memTransport runs an http.Handler in memory, over a pipe, so a test can
// run the client inside a synctest bubble, where time is the bubble's and
// a test of waits takes no wall time. fail, when set, answers a request
// with an error before the handler sees it (a refused connection).
type memTransport struct {
	h    http.Handler
	fail func() error
}

type memWriter struct {
	header http.Header
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	status int
}

func (w *memWriter) Header() http.Header { return w.header }

func (w *memWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.status = code
		close(w.ready)
	})
}

func (w *memWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b)
}

func (w *memWriter) Flush() {}

func (m *memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if m.fail != nil {
		if err := m.fail(); err != nil {
			return nil, err
		}
	}
	pr, pw := io.Pipe()
	w := &memWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		m.h.ServeHTTP(w, req)
		w.WriteHeader(http.StatusOK)
		_ = pw.Close()
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		_ = pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: w.status, Status: http.StatusText(w.status), Header: w.header, Body: pr, Request: req}, nil
}

// CO-9: the reconnect schedule, in the bubble's exact time: a lost link is
// reported at once; attempt n comes min·2ⁿ (capped) after the one before,
// jittered into that wait's upper half; each ConnectionLost names the time
// of the next attempt; a success delivers Resync.
func TestRemoteBackoffScheduleSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeAdmin(t)
		var (
			mu       sync.Mutex
			attempts []time.Time
			down     bool
		)
		tr := &memTransport{h: f, fail: func() error {
			mu.Lock()
			defer mu.Unlock()
			attempts = append(attempts, time.Now())
			if down {
				return errors.New("connection refused")
			}
			return nil
		}}
		c, err := NewClient("http://127.0.0.1:7332", fakeKey, &ClientOptions{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		jitters := []float64{0, 0.5, 0.999}
		var jn int
		o := RemoteOptions{Jitter: func() float64 { j := jitters[jn%len(jitters)]; jn++; return j }}
		rc := NewRemoteConsole(c, &o)
		_, sub, err := rc.Subscribe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conn := <-f.conns

		mu.Lock()
		down = true
		mu.Unlock()
		start := time.Now()
		conn.drop()
		const failures = 8
		var lost []core.ConnectionLost
		for len(lost) < failures {
			ev := <-sub.C()
			l, ok := ev.Data.(core.ConnectionLost)
			if !ok {
				t.Fatalf("got %T while down", ev.Data)
			}
			if len(lost) == 0 && !time.Now().Equal(start) {
				t.Errorf("the first ConnectionLost came %v after the loss, not at once", time.Since(start))
			}
			lost = append(lost, l)
		}
		mu.Lock()
		down = false
		mu.Unlock()
		for {
			ev := <-sub.C()
			if _, ok := ev.Data.(core.Resync); ok {
				break
			}
		}
		snap, err := sub.Resync(context.Background())
		if err != nil || streamOf(snap) != "stream-2" {
			t.Fatalf("Resync: %+v %v", snap, err)
		}

		mu.Lock()
		got := attempts[1:] // attempts[0] opened the first stream
		mu.Unlock()
		prev := start
		for i, at := range got {
			nominal := DefaultBackoffMax
			if i < 5 {
				nominal = DefaultBackoffMin << i
			}
			want := nominal/2 + time.Duration(jitters[i%len(jitters)]*float64(nominal-nominal/2))
			if d := at.Sub(prev); d != want {
				t.Errorf("attempt %d came %v after the one before, want %v", i+1, d, want)
			}
			if i < len(lost) && !lost[i].Retry.Equal(at) {
				t.Errorf("ConnectionLost %d said retry at +%v, the attempt came at +%v", i, lost[i].Retry.Sub(start), at.Sub(start))
			}
			prev = at
		}
		// The first ConnectionLost is the loss itself; each later one is a
		// failed attempt; the attempt after the last is the success.
		if len(got) != failures {
			t.Errorf("%d attempts, want %d failures and a success", len(got), failures-1)
		}
		sub.Close()
		c.Close()
		synctest.Wait()
	})
}

// CO-9: heartbeats keep a quiet stream alive however long nothing happens; once
// they stop, the link is lost exactly 3×HeartbeatInterval after the last
// byte.
func TestRemoteHeartbeatSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeAdmin(t)
		f.heartbeat = HeartbeatInterval
		c, err := NewClient("http://127.0.0.1:7332", fakeKey, &ClientOptions{Transport: &memTransport{h: f}})
		if err != nil {
			t.Fatal(err)
		}
		_, sub, err := NewRemoteConsole(c, nil).Subscribe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conn := <-f.conns
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		select {
		case ev := <-sub.C():
			t.Fatalf("a quiet stream with heartbeats delivered %T", ev.Data)
		default:
		}
		// Silence: the server stops writing but keeps the connection.
		f.mu.Lock()
		f.heartbeat = 0
		f.mu.Unlock()
		conn.drop() // memTransport cannot hijack: this ends the body…
		<-conn.gone
		ev := <-sub.C() // …so the loss is an end of stream, at once
		if _, ok := ev.Data.(core.ConnectionLost); !ok {
			t.Fatalf("got %T", ev.Data)
		}
		// The reconnected stream has no heartbeat: it goes silent.
		for {
			ev = <-sub.C()
			if _, ok := ev.Data.(core.Resync); ok {
				break
			}
		}
		if _, err := sub.Resync(context.Background()); err != nil {
			t.Fatal(err)
		}
		quietFrom := time.Now()
		ev = <-sub.C()
		l, ok := ev.Data.(core.ConnectionLost)
		if !ok || time.Since(quietFrom) != 3*HeartbeatInterval {
			t.Fatalf("got %T %+v %v after the stream went quiet, want ConnectionLost after %v", ev.Data, l, time.Since(quietFrom), 3*HeartbeatInterval)
		}
		sub.Close()
		c.Close()
		synctest.Wait()
	})
}
