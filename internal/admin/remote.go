package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
)

// Defaults of RemoteOptions.
const (
	DefaultBackoffMin = 250 * time.Millisecond
	DefaultBackoffMax = 5 * time.Second
)

// RemoteOptions configure a RemoteConsole; zero fields take defaults.
type RemoteOptions struct {
	// Idle is how long the event stream may stay silent before the link
	// is taken as lost. Default 3×HeartbeatInterval.
	Idle time.Duration
	// BackoffMin and BackoffMax bound the wait between reconnect attempts:
	// it doubles from BackoffMin up to BackoffMax, with jitter.
	BackoffMin, BackoffMax time.Duration
	// Buffer is how many events wait for a slow consumer before it is
	// taken as fallen behind and resynced. Default
	// core.DefaultSubscriptionBuffer.
	Buffer int
	// Logger records losses and reconnects; nil discards.
	Logger *slog.Logger
	// Jitter returns a number in [0, 1); nil uses math/rand. Tests fix it.
	Jitter func() float64
}

// RemoteConsole is a core.Console over the admin API of a gateway in another
// process (CO-9). Commands are one request each. A subscription keeps one
// event stream open and survives the link breaking: it delivers
// core.ConnectionLost at once, reconnects with backoff, and then delivers
// core.Resync, whose Resync returns the reconnected stream's snapshot.
//
// The by arguments of the review and confirmation commands are ignored: the
// gateway records the operator its admin key names.
type RemoteConsole struct {
	c *Client
	o RemoteOptions
}

var _ core.Console = (*RemoteConsole)(nil)

// NewRemoteConsole returns a console over c.
func NewRemoteConsole(c *Client, o *RemoteOptions) *RemoteConsole {
	var opts RemoteOptions
	if o != nil {
		opts = *o
	}
	if opts.Idle <= 0 {
		opts.Idle = 3 * HeartbeatInterval
	}
	if opts.BackoffMin <= 0 {
		opts.BackoffMin = DefaultBackoffMin
	}
	if opts.BackoffMax < opts.BackoffMin {
		opts.BackoffMax = max(DefaultBackoffMax, opts.BackoffMin)
	}
	if opts.Buffer <= 0 {
		opts.Buffer = core.DefaultSubscriptionBuffer
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	return &RemoteConsole{c: c, o: opts}
}

// Client is the console's admin API client.
func (r *RemoteConsole) Client() *Client { return r.c }

func (r *RemoteConsole) Info(ctx context.Context) (core.ConsoleInfo, error) { return r.c.Info(ctx) }

func (r *RemoteConsole) PlanRefresh(ctx context.Context, upstream string) (core.RefreshPlan, error) {
	return r.c.PlanRefresh(ctx, upstream)
}

func (r *RemoteConsole) ApplyRefresh(ctx context.Context, planID string) (core.Diff, error) {
	return r.c.ApplyRefresh(ctx, planID)
}

func (r *RemoteConsole) CancelRefresh(ctx context.Context, planID string) error {
	return r.c.CancelRefresh(ctx, planID)
}

func (r *RemoteConsole) RefreshAll(ctx context.Context) ([]core.Diff, error) {
	return r.c.RefreshAll(ctx)
}

func (r *RemoteConsole) Ping(ctx context.Context, upstream string) (time.Duration, error) {
	return r.c.Ping(ctx, upstream)
}

func (r *RemoteConsole) ApproveTool(ctx context.Context, name, _ string) error {
	return r.c.ApproveTool(ctx, name)
}

func (r *RemoteConsole) RejectTool(ctx context.Context, name, _ string) error {
	return r.c.RejectTool(ctx, name)
}

func (r *RemoteConsole) ToolFlags(ctx context.Context, name string) ([]core.Flag, error) {
	return r.c.ToolFlags(ctx, name)
}

func (r *RemoteConsole) ReviewStates(ctx context.Context) (map[string]core.ReviewState, error) {
	return r.c.Reviews(ctx)
}

func (r *RemoteConsole) ReviewEntries(ctx context.Context) ([]core.ReviewEntry, error) {
	return r.c.ReviewEntries(ctx)
}

func (r *RemoteConsole) AuditOf(ctx context.Context, callID string) ([]core.AuditCheck, error) {
	return r.c.AuditOf(ctx, callID)
}

func (r *RemoteConsole) Policies(ctx context.Context) (core.PolicyReport, error) {
	return r.c.Policies(ctx)
}

// TryPolicy asks POST /v1/policy/test; the actor's roles and tenant are
// those the gateway's config gives its id.
func (r *RemoteConsole) TryPolicy(ctx context.Context, q core.PolicyQuestion) (core.PolicyTrial, error) {
	t, err := r.c.TryPolicy(ctx, PolicyTestRequest{Endpoint: q.Endpoint, Actor: q.Actor, Tool: q.Tool, Args: q.Args, Via: q.Via, SessionLabels: q.SessionLabels})
	if err != nil {
		return core.PolicyTrial{}, err
	}
	return core.PolicyTrial(t), nil
}

// Connections asks GET /v1/connections (UI-3); a gateway with no OAuth
// upstream has none.
func (r *RemoteConsole) Connections(ctx context.Context) ([]core.Connection, error) {
	list, err := r.c.Connections(ctx)
	var ae *Error
	if errors.As(err, &ae) && ae.Code == CodeNotFound && ae.Message == ErrNoOAuth.Error() {
		return []core.Connection{}, nil
	}
	return list, err
}

// RevokeConnection is DELETE /v1/connections/{id}, recorded as the
// operator the admin key names.
func (r *RemoteConsole) RevokeConnection(ctx context.Context, id, _ string) (core.Connection, error) {
	c, err := r.c.RevokeConnection(ctx, id)
	var ae *Error
	if errors.As(err, &ae) && ae.Code == CodeUnknownConnection {
		return c, fmt.Errorf("%q: %w", id, core.ErrNoConnection)
	}
	return c, err
}

func (r *RemoteConsole) ApproveConfirmation(ctx context.Context, id, _ string) error {
	return r.c.ApproveConfirmation(ctx, id)
}

func (r *RemoteConsole) RejectConfirmation(ctx context.Context, id, _, reason string) error {
	return r.c.RejectConfirmation(ctx, id, reason)
}

func (r *RemoteConsole) EndSession(ctx context.Context, id string) error {
	return r.c.EndSession(ctx, id)
}

// DisconnectedError answers a Resync while the link is down. The
// subscription carries on: it delivers core.ConnectionLost for each failed
// attempt and core.Resync once it is back.
type DisconnectedError struct {
	Err   string
	Retry time.Time
}

func (e *DisconnectedError) Error() string {
	return "connection to the gateway lost: " + e.Err
}

// ConnectionLost is the loss as the event that reports it; the console
// shows the two alike.
func (e *DisconnectedError) ConnectionLost() core.ConnectionLost {
	return core.ConnectionLost{Error: e.Err, Retry: e.Retry}
}

// ErrSubscriptionClosed: Resync after Close.
var ErrSubscriptionClosed = errors.New("subscription closed")

// errBehind ends a stream whose consumer fell behind.
var errBehind = errors.New("the console fell behind the event stream")

// Subscribe opens the event stream and returns its first snapshot. ctx
// bounds only the opening; the subscription lives until Close.
func (r *RemoteConsole) Subscribe(ctx context.Context) (core.Snapshot, core.Subscription, error) {
	s := &remoteSub{
		rc:        r,
		ch:        make(chan core.Event, r.o.Buffer+1), // one slot kept for the Resync marker
		done:      make(chan struct{}),
		reconnect: make(chan struct{}, 1),
		changed:   make(chan struct{}),
	}
	// The stream outlives ctx but keeps its values.
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, s.cancel)
	st, snap, err := s.connect()
	if !stop() || err != nil {
		s.cancel()
		if st != nil {
			st.Close()
		}
		if err == nil || ctx.Err() != nil {
			err = ctx.Err()
		}
		return core.Snapshot{}, nil, err
	}
	s.lastSeq, s.cur = snap.Seq, st
	go s.run(st)
	return snap, s, nil
}

// remoteSub is one subscription. The run goroutine owns the stream; Resync
// callers and run meet under mu.
//
// Delivery follows the bus's rule: once a Resync marker is in C, nothing
// else is put there until the consumer's Resync has returned; events that
// follow the marker's snapshot wait in held.
type remoteSub struct {
	rc        *RemoteConsole
	ch        chan core.Event
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{} // run has returned and C is closed
	reconnect chan struct{} // Resync asks run for a fresh stream

	mu sync.Mutex
	// closed: C is closed; nothing is sent any more.
	closed bool
	// outstanding: a Resync marker was delivered and its Resync has not
	// returned.
	outstanding bool
	// pending is what the outstanding Resync returns, once known; held are
	// the events after it.
	pending *core.Snapshot
	held    []core.Event
	// lost is the link's failure while it is down.
	lost *core.ConnectionLost
	// parked: the stream was dropped because the consumer fell behind; run
	// waits for a Resync to ask for a new one.
	parked bool
	// changed is closed (and replaced) when pending, lost or closed change.
	changed chan struct{}
	// cur is the stream run reads, nil while it reconnects.
	cur     *EventStream
	lastSeq uint64
}

func (s *remoteSub) C() <-chan core.Event { return s.ch }

// Close ends the subscription: the stream, any reconnect in progress and
// the goroutine; C is closed when it returns.
func (s *remoteSub) Close() {
	s.cancel()
	<-s.done
}

func (s *remoteSub) wakeLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// sendLocked puts ev in C if a slot other than the marker's is free.
func (s *remoteSub) sendLocked(ev core.Event) bool {
	if s.closed || len(s.ch) >= cap(s.ch)-1 {
		return false
	}
	s.ch <- ev
	return true
}

// markerLocked delivers a Resync marker, in the slot kept for it.
func (s *remoteSub) markerLocked() {
	s.outstanding = true
	if s.closed {
		return
	}
	select {
	case s.ch <- core.Event{Seq: s.lastSeq, Time: time.Now(), Data: core.Resync{}}:
	default: // cannot happen: one marker at a time, and its slot is kept
	}
}

// event delivers one event from the stream; false means the consumer fell
// behind and the stream is to be dropped.
func (s *remoteSub) event(ev core.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outstanding {
		if s.pending == nil {
			return true // a snapshot frame follows and covers it
		}
		if len(s.held) >= cap(s.ch)-1 {
			s.pending, s.held, s.parked = nil, nil, true
			s.wakeLocked()
			s.askReconnect() // a Resync is outstanding already
			return false
		}
		s.held = append(s.held, ev)
		return true
	}
	if s.sendLocked(ev) {
		s.lastSeq = ev.Seq
		return true
	}
	s.pending, s.held = nil, nil
	s.markerLocked()
	s.parked = true // run waits for the consumer's Resync to reconnect
	s.wakeLocked()
	return false
}

// snapshot records a snapshot that replaces the consumer's view: after a
// resync frame, or the first frame of a new stream st.
func (s *remoteSub) snapshot(snap core.Snapshot, st *EventStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st != nil {
		s.cur = st
	}
	s.lost, s.parked = nil, false
	s.pending, s.held = &snap, nil
	if !s.outstanding {
		s.markerLocked()
	}
	s.wakeLocked()
}

// serverResync: the gateway dropped events for this stream; its next frame
// is a snapshot.
func (s *remoteSub) serverResync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending, s.held = nil, nil
	if !s.outstanding {
		s.markerLocked()
	}
	s.wakeLocked()
}

// linkLost records the failure and, unless a Resync is outstanding (which
// then reports it), tells the consumer at once.
func (s *remoteSub) linkLost(err error, retry time.Time) {
	// The console names the URL already: the cause is what it shows.
	var ue *UnreachableError
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost = &core.ConnectionLost{Error: err.Error(), Retry: retry}
	s.pending, s.held, s.parked = nil, nil, false
	if !s.outstanding {
		s.sendLocked(core.Event{Seq: s.lastSeq, Time: time.Now(), Data: *s.lost})
	}
	s.wakeLocked()
}

// Resync returns the snapshot that replaces the consumer's view after a
// Resync marker. While the link is down it fails with *DisconnectedError;
// a Resync marker follows in C once the link is back.
func (s *remoteSub) Resync(ctx context.Context) (core.Snapshot, error) {
	s.mu.Lock()
	if !s.outstanding && s.lost == nil && !s.closed {
		// Asked without a marker: a fresh stream gives a fresh snapshot.
		s.outstanding, s.pending, s.held = true, nil, nil
		s.dropStreamLocked()
	}
	for {
		switch {
		case s.closed:
			s.mu.Unlock()
			return core.Snapshot{}, ErrSubscriptionClosed
		case s.pending != nil:
			snap := *s.pending
			held := s.held
			s.pending, s.held, s.outstanding = nil, nil, false
			s.lastSeq = snap.Seq
			for _, ev := range held {
				if !s.sendLocked(ev) {
					// Behind again already: the rest is dropped and another
					// marker follows.
					s.markerLocked()
					s.dropStreamLocked()
					break
				}
				s.lastSeq = ev.Seq
			}
			s.mu.Unlock()
			return snap, nil
		case s.lost != nil:
			lost := *s.lost
			s.outstanding = false // the reconnect delivers a new marker
			s.mu.Unlock()
			return core.Snapshot{}, &DisconnectedError{Err: lost.Error, Retry: lost.Retry}
		}
		if s.parked {
			s.askReconnect() // the consumer is here: a new stream now
		}
		wait := s.changed
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return core.Snapshot{}, ctx.Err()
		}
		s.mu.Lock()
	}
}

// dropStreamLocked ends the current stream and has run open a new one; its
// snapshot answers the outstanding Resync.
func (s *remoteSub) dropStreamLocked() {
	s.parked = true
	if s.cur != nil {
		s.cur.Close()
	}
	s.askReconnect()
}

func (s *remoteSub) askReconnect() {
	select {
	case s.reconnect <- struct{}{}:
	default:
	}
}

// connect opens a stream and reads its first frame, the snapshot.
func (s *remoteSub) connect() (*EventStream, core.Snapshot, error) {
	st, err := s.rc.c.Events(s.ctx, s.rc.o.Idle)
	if err != nil {
		return nil, core.Snapshot{}, err
	}
	f, err := st.Next()
	if err == nil && f.Event != FrameSnapshot {
		err = fmt.Errorf("event stream: first frame %q, want %q", f.Event, FrameSnapshot)
	}
	var snap core.Snapshot
	if err == nil {
		if err = json.Unmarshal(f.Data, &snap); err != nil {
			err = fmt.Errorf("event stream: snapshot: %w", err)
		}
	}
	if err != nil {
		st.Close()
		return nil, core.Snapshot{}, err
	}
	return st, snap, nil
}

// run reads the stream and, when it breaks, reconnects until Close.
func (s *remoteSub) run(st *EventStream) {
	defer close(s.done)
	defer func() {
		s.mu.Lock()
		s.closed = true
		close(s.ch)
		s.wakeLocked()
		s.mu.Unlock()
	}()
	log := s.rc.o.Logger
	attempt := 0
	for {
		started := time.Now()
		err := s.read(st)
		st.Close()
		s.mu.Lock()
		s.cur = nil
		parked := s.parked
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			return
		}
		if parked {
			// The consumer fell behind (or asked): a new stream once it
			// resyncs, straight away, for the link is fine.
			log.Info("admin: resyncing the console with a new event stream")
			select {
			case <-s.reconnect:
			case <-s.ctx.Done():
				return
			}
			next, snap, cerr := s.connect()
			if cerr == nil {
				st = next
				s.snapshot(snap, st)
				continue
			}
			if s.ctx.Err() != nil {
				return
			}
			err = cerr
		}
		// A stream that lived a while starts the backoff afresh; one that
		// breaks as soon as it opens keeps backing off.
		if time.Since(started) > 2*s.rc.o.BackoffMax {
			attempt = 0
		}
		for {
			d := backoff(attempt, s.rc.o.BackoffMin, s.rc.o.BackoffMax, s.rc.o.Jitter)
			attempt++
			log.Warn("admin: connection to the gateway lost", "url", s.rc.c.URL(), "err", err, "retry_in", d)
			s.linkLost(err, time.Now().Add(d))
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
			next, snap, cerr := s.connect()
			if cerr == nil {
				log.Info("admin: reconnected to the gateway", "url", s.rc.c.URL(), "attempts", attempt)
				st = next
				s.snapshot(snap, st)
				break
			}
			if s.ctx.Err() != nil {
				return
			}
			err = cerr
		}
	}
}

// read delivers the stream's frames until it fails.
func (s *remoteSub) read(st *EventStream) error {
	for {
		f, err := st.Next()
		if err != nil {
			return err
		}
		switch f.Event {
		case FrameEvent:
			ev, err := DecodeEvent(f.Data)
			if err != nil {
				return fmt.Errorf("event stream: %w", err)
			}
			if !s.event(ev) {
				return errBehind
			}
		case FrameResync:
			s.serverResync()
		case FrameSnapshot:
			var snap core.Snapshot
			if err := json.Unmarshal(f.Data, &snap); err != nil {
				return fmt.Errorf("event stream: snapshot: %w", err)
			}
			s.snapshot(snap, nil)
		default:
			// A frame of a newer gateway: not ours to read.
		}
	}
}

// backoff is the wait before reconnect attempt n (0-based): min·2ⁿ capped
// at max, then jittered into its upper half, so consoles that lost the same
// gateway do not all knock at once.
func backoff(n int, lo, hi time.Duration, jitter func() float64) time.Duration {
	d := hi
	if n < 32 {
		if x := lo << n; x > 0 && x < hi {
			d = x
		}
	}
	half := d / 2
	return half + time.Duration(jitter()*float64(d-half))
}
