package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// callStream is the response of one POST, through which the gateway writes
// what an upstream sends during a call (progress, log messages) as SSE
// events on that call's own stream, ahead of the call's response.
//
// mcp-go queues request-scoped notifications on a channel it shares with the
// session's standing GET stream, so either stream may carry them, and one
// that goes out on the GET stream can reach the client after the result it
// belongs to. Writing them here keeps them on the call's stream and in
// order.
//
// The answer, always JSON, is written through this writer. Until the
// gateway sends an event, it passes straight through. Once it has, the
// response is SSE: the answer is held back and sent as one final event
// when the request ends (finish).
type callStream struct {
	// dl moves the write deadline on before every write (SV-9).
	dl deadline

	mu sync.Mutex
	w  http.ResponseWriter
	// hdr is the header map the answer's writer fills; copied to w's when
	// it sends its header, so the two writers never share a map.
	hdr http.Header
	// upgraded: the real response went out as text/event-stream.
	upgraded bool
	// libHeader: the answer's writer sent its header.
	libHeader bool
	// done: the call's answer is written; later writes are dropped.
	done bool
	// ended: finish ran and the handler is returning; the ResponseWriter
	// is no longer ours. A late write (an upstream withdrawing its
	// request after the call was answered) is refused rather than put
	// into a response the server may already be reusing.
	ended bool
	held  bytes.Buffer
}

type callStreamKey struct{}

func newCallStream(w http.ResponseWriter) *callStream {
	return &callStream{w: w, hdr: http.Header{}}
}

func callStreamFrom(ctx context.Context) *callStream {
	cs, _ := ctx.Value(callStreamKey{}).(*callStream)
	return cs
}

func (c *callStream) Header() http.Header { return c.hdr }

func (c *callStream) WriteHeader(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || c.ended {
		return
	}
	c.writeHeaderLocked(code)
}

// answered marks the call's answer as written: later writes are dropped.
func (c *callStream) answered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
}

func (c *callStream) writeHeaderLocked(code int) {
	if c.libHeader {
		return
	}
	c.libHeader = true
	if c.upgraded {
		return // the event stream's header went out already
	}
	for k, v := range c.hdr {
		c.w.Header()[k] = v
	}
	c.dl.extend()
	c.w.WriteHeader(code)
}

func (c *callStream) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return 0, errStreamEnded
	}
	if c.done {
		return len(p), nil
	}
	c.writeHeaderLocked(http.StatusOK)
	if c.upgraded {
		return c.held.Write(p)
	}
	c.dl.extend()
	return c.w.Write(p)
}

func (c *callStream) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
}

func (c *callStream) flushLocked() {
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
}

// ping writes an SSE comment on a call's event stream, which clients
// ignore: a long call keeps its connection alive (SV-9). A call still
// answering in plain JSON has no stream to ping.
func (c *callStream) ping() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.upgraded || c.done || c.ended {
		return
	}
	c.dl.extend()
	if _, err := c.w.Write([]byte(": ping\n\n")); err == nil {
		c.flushLocked()
	}
}

var errStreamTaken = errors.New("the response was already sent as JSON")

var errStreamEnded = errors.New("the call's response has ended")

// send writes one JSON-RPC message as an SSE event, switching the response
// to an event stream if nothing was sent yet.
func (c *callStream) send(msg any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return errStreamEnded
	}
	if !c.upgraded {
		if c.libHeader {
			return errStreamTaken
		}
		setEventStream(c.w.Header())
		c.dl.extend()
		c.w.WriteHeader(http.StatusOK)
		c.upgraded = true
	}
	c.dl.extend()
	if err := writeEvent(c.w, data); err != nil {
		return err
	}
	c.flushLocked()
	return nil
}

// finish sends a JSON answer written after the stream was upgraded as the
// stream's last event.
func (c *callStream) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() { c.ended = true }()
	c.dl.extend()
	body := bytes.TrimSpace(c.held.Bytes())
	if len(body) == 0 {
		return
	}
	var compact bytes.Buffer
	if json.Compact(&compact, body) == nil {
		body = compact.Bytes()
	}
	_ = writeEvent(c.w, body)
	c.flushLocked()
	c.held.Reset()
}

// seqBarrier lets requests wait until the endpoint has applied the bus
// events committed before them, so a tool registered just before a
// tools/list or tools/call is in its answer (SV-1). Waits are bounded: a
// stuck follower never holds a request for longer than maxCatchUp.
type seqBarrier struct {
	mu      sync.Mutex
	seq     uint64
	stopped bool
	waiters []seqWaiter
}

type seqWaiter struct {
	seq  uint64
	done chan struct{}
}

const maxCatchUp = 2 * time.Second

func (b *seqBarrier) advance(seq uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if seq > b.seq {
		b.seq = seq
	}
	kept := b.waiters[:0]
	for _, w := range b.waiters {
		if w.seq <= b.seq {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	b.waiters = kept
}

// stop releases every waiter for good: the follower has ended.
func (b *seqBarrier) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	for _, w := range b.waiters {
		close(w.done)
	}
	b.waiters = nil
}

// wait returns once events up to seq are applied, ctx ends, or maxCatchUp
// passes.
func (b *seqBarrier) wait(ctx context.Context, seq uint64) {
	b.mu.Lock()
	if b.stopped || b.seq >= seq {
		b.mu.Unlock()
		return
	}
	w := seqWaiter{seq: seq, done: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	t := time.NewTimer(maxCatchUp)
	defer t.Stop()
	select {
	case <-w.done:
	case <-ctx.Done():
	case <-t.C:
	}
}

// setEventStream sets the headers of a response that is an SSE stream.
func setEventStream(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
}

// writeEvent writes one JSON-RPC message as an SSE message event.
func writeEvent(w io.Writer, data []byte) error {
	_, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", data)
	return err
}
