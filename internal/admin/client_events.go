package admin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// MaxFrameBytes bounds one frame of the event stream (a snapshot of a large
// registry is the biggest), so a broken stream cannot grow the client's
// memory without bound.
const MaxFrameBytes = 64 << 20

// ErrIdle: the event stream sent nothing, not even a heartbeat, for the idle
// limit: the link is taken as dead.
var ErrIdle = errors.New("the gateway sent nothing, not even a heartbeat")

// ErrStreamEnded: the gateway ended the event stream.
var ErrStreamEnded = errors.New("the gateway ended the event stream")

// Frame is one frame of the event stream: its SSE event name (FrameSnapshot,
// FrameEvent, FrameResync), id and data.
type Frame struct {
	Event string
	ID    string
	Data  []byte
}

// EventStream is an open GET /v1/events. Next is for one goroutine; Close
// may be called from any, and ends a Next in progress.
type EventStream struct {
	body   io.ReadCloser
	r      *bufio.Reader
	cancel context.CancelCauseFunc
	ctx    context.Context
	idle   time.Duration

	mu       sync.Mutex
	watchdog *time.Timer
}

// Events opens the event stream. idle is how long the stream may stay
// silent before Next fails with ErrIdle (0: 3×HeartbeatInterval); it also
// bounds the wait for the answer's headers. The stream lives until Close or
// ctx ends.
func (c *Client) Events(ctx context.Context, idle time.Duration) (*EventStream, error) {
	if idle <= 0 {
		idle = 3 * HeartbeatInterval
	}
	sctx, cancel := context.WithCancelCause(ctx)
	s := &EventStream{cancel: cancel, ctx: sctx, idle: idle}
	s.watchdog = time.AfterFunc(min(idle, c.timeout), func() { cancel(ErrIdle) })
	req, err := c.newRequest(sctx, RouteEvents.Method(), RouteEvents.Path(), nil, nil)
	if err != nil {
		s.Close()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.streams.Do(req)
	if err != nil {
		cause := context.Cause(sctx)
		s.Close()
		if errors.Is(cause, ErrIdle) {
			return nil, &UnreachableError{URL: c.display, Err: fmt.Errorf("no answer within %v", min(idle, c.timeout))}
		}
		return nil, c.transportError(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		err := c.errorOf(resp)
		s.Close()
		return nil, err
	}
	s.body = resp.Body
	s.r = bufio.NewReaderSize(&idleReader{s: s, r: resp.Body}, 64<<10)
	s.kick()
	return s, nil
}

// kick restarts the idle limit: bytes arrived.
func (s *EventStream) kick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchdog != nil {
		s.watchdog.Reset(s.idle)
	}
}

// Close ends the stream.
func (s *EventStream) Close() {
	s.mu.Lock()
	if s.watchdog != nil {
		s.watchdog.Stop()
		s.watchdog = nil
	}
	s.mu.Unlock()
	s.cancel(context.Canceled)
	if s.body != nil {
		_ = s.body.Close()
	}
}

type idleReader struct {
	s *EventStream
	r io.Reader
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.s.kick()
	}
	return n, err
}

// Next returns the next frame; heartbeats are read and skipped. Its error
// is ErrIdle when the stream went silent, ErrStreamEnded when the gateway
// closed it, or the read error.
func (s *EventStream) Next() (Frame, error) {
	var (
		f       Frame
		data    bytes.Buffer
		hasData bool
	)
	for {
		line, err := s.readLine()
		if err != nil {
			return Frame{}, s.readErr(err)
		}
		if len(line) == 0 {
			if f.Event == "" && !hasData {
				continue // a heartbeat comment's end, or stray blank lines
			}
			f.Data = data.Bytes()
			return f, nil
		}
		if line[0] == ':' {
			continue // a comment: the heartbeat
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			f.Event = string(value)
		case "id":
			f.ID = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			hasData = true
			if data.Len()+len(value) > MaxFrameBytes {
				return Frame{}, fmt.Errorf("event stream: a frame of more than %d bytes", MaxFrameBytes)
			}
			data.Write(value)
		}
	}
}

func (s *EventStream) readErr(err error) error {
	if cause := context.Cause(s.ctx); cause != nil && s.ctx.Err() != nil {
		if errors.Is(cause, ErrIdle) {
			return fmt.Errorf("%w for %v", ErrIdle, s.idle)
		}
		return cause
	}
	if errors.Is(err, io.EOF) {
		return ErrStreamEnded
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w mid-frame", ErrStreamEnded)
	}
	return fmt.Errorf("event stream: %w", err)
}

// readLine reads one line without its end (\n or \r\n), bounded.
func (s *EventStream) readLine() ([]byte, error) {
	var long []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		if err == nil || (errors.Is(err, bufio.ErrBufferFull)) {
			if long == nil && err == nil {
				return bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r")), nil
			}
			if len(long)+len(chunk) > MaxFrameBytes {
				return nil, fmt.Errorf("event stream: a line of more than %d bytes", MaxFrameBytes)
			}
			long = append(long, chunk...)
			if err == nil {
				return bytes.TrimSuffix(bytes.TrimSuffix(long, []byte("\n")), []byte("\r")), nil
			}
			continue
		}
		if errors.Is(err, io.EOF) && len(long)+len(chunk) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
}
