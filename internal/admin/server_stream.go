package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/core"
)

// events serves GET /v1/events: the snapshot, then every event after it,
// with a resync and a fresh snapshot whenever the bus dropped events for
// this stream. The bus never waits for a stream; a stream whose client
// does not take a frame within the write timeout ends.
func (s *Server) events(w http.ResponseWriter, r *http.Request, op string) {
	// Deferred first so it runs last: once "ended" is logged the stream's
	// slot is free and its subscription closed, so whoever waits on that
	// line can open another stream at once.
	var ended error
	defer func() {
		if ended != nil {
			s.streamEnded(op, ended)
		}
	}()
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		s.fail(w, r, op, &Error{Status: http.StatusServiceUnavailable, Code: CodeTooManyStreams,
			Message: fmt.Sprintf("%s: at most %d event streams may be open at once", ErrTooManyStreams, cap(s.streams))})
		return
	}
	ctx := r.Context()
	snap, sub, err := s.backend.ConsoleAs(op).Subscribe(ctx)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	defer sub.Close()

	st := &stream{w: w, rc: http.NewResponseController(w), timeout: s.writeTO}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	// A proxy in front must not hold frames back.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := st.snapshot(snap); err != nil {
		ended = err
		return
	}
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			s.drain(st, sub)
			return
		case <-beat.C:
			err = st.write(heartbeatFrame)
		case ev, ok := <-sub.C():
			if !ok {
				return // the gateway closed
			}
			err = s.deliver(ctx, st, sub, ev)
		}
		if err != nil {
			ended = err
			return
		}
	}
}

// drain sends the events already delivered to the stream when the server
// closes (the shutdown's rejections), without waiting for more.
func (s *Server) drain(st *stream, sub core.Subscription) {
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			if _, resync := ev.Data.(core.Resync); resync {
				return
			}
			if st.event(ev) != nil {
				return
			}
		default:
			return
		}
	}
}

func (s *Server) deliver(ctx context.Context, st *stream, sub core.Subscription, ev core.Event) error {
	if _, ok := ev.Data.(core.Resync); !ok {
		return st.event(ev)
	}
	if err := st.write([]byte("event: " + FrameResync + "\ndata: {}\n\n")); err != nil {
		return err
	}
	snap, err := sub.Resync(ctx)
	if err != nil {
		return err
	}
	return st.snapshot(snap)
}

func (s *Server) streamEnded(op string, err error) {
	s.log.Info("admin event stream ended", "operator", op, "err", err)
}

var heartbeatFrame = []byte(": heartbeat\n\n")

// stream writes frames, each under its own write deadline.
type stream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (st *stream) snapshot(snap core.Snapshot) error {
	b, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("encoding the snapshot: %w", err)
	}
	return st.write(frame(FrameSnapshot, "", b))
}

func (st *stream) event(ev core.Event) error {
	b, err := EncodeEvent(ev)
	if err != nil {
		return err
	}
	return st.write(frame(FrameEvent, strconv.FormatUint(ev.Seq, 10), b))
}

// write sends one frame and flushes it; a client that does not take it
// within the timeout ends the stream.
func (st *stream) write(b []byte) error {
	if err := st.rc.SetWriteDeadline(time.Now().Add(st.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := st.w.Write(b); err != nil {
		return err
	}
	return st.rc.Flush()
}

// frame is one SSE frame. data is one line of JSON: encoding/json escapes
// every newline inside strings.
func frame(event, id string, data []byte) []byte {
	b := make([]byte, 0, len(data)+len(event)+len(id)+24)
	b = append(b, "event: "...)
	b = append(b, event...)
	b = append(b, '\n')
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}
