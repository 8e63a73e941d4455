package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
)

// A modern upstream sends what belongs to no call on the response stream of
// a subscriptions/listen request, and only what that request's filter asked
// for: the list changes toolgate imports (IM-25), and the updates of the
// resources its clients subscribed to (IM-34), which the revision's filter
// carries instead of resources/subscribe. The filter of an open request is
// fixed, so a change of subscriptions opens a new request with the new
// filter and closes the old one only once the new one is acknowledged:
// list_changed always has a request listening for it. While both are open
// a notification may come twice; both kinds are hints to list or read
// again, so that costs a read, never a lost change.

// modernState is what a modern upstream keeps across its connections.
type modernState struct {
	params paramHeaders
	subs   resourceSubs
}

// resourceSubs are the resource URIs the gateway's clients subscribed to
// on this upstream, which its subscriptions/listen filter names. They
// outlive a connection, so that the next one listens for them again.
type resourceSubs struct {
	mu   sync.Mutex
	uris []string // sorted
}

func (r *resourceSubs) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.uris)
}

func (r *resourceSubs) add(uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, found := slices.BinarySearch(r.uris, uri); !found {
		r.uris = slices.Insert(r.uris, i, uri)
	}
}

func (r *resourceSubs) remove(uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, found := slices.BinarySearch(r.uris, uri); found {
		r.uris = slices.Delete(r.uris, i, i+1)
	}
}

// listener is a modern connection's subscriptions/listen.
type listener struct {
	s      *session
	acks   <-chan mcpgo.JSONRPCNotification
	onNote func(mcpgo.JSONRPCNotification)
	log    *slog.Logger
	// wg counts the listen requests still running.
	wg sync.WaitGroup

	// mu serializes opening requests, so that an acknowledgement belongs
	// to the one request waiting for it, and guards the fields below.
	mu  sync.Mutex
	cur *listenRequest
	// uris are the resources cur's server acknowledged.
	uris   []string
	closed bool
}

// listenRequest is one subscriptions/listen request.
type listenRequest struct {
	cancel context.CancelFunc
	ended  chan struct{}
	// superseded is set before a newer request's cancel: its end is no
	// loss.
	superseded atomic.Bool
}

// listen opens s's subscriptions/listen for list changes and waits, bounded
// by ctx, for the server to acknowledge it, so that a list change after
// Connect returns is heard. The request stays open until the connection
// stops or a change of resource subscriptions replaces it; if it ends
// before that while something was subscribed, the connection is marked
// lost (the next request reconnects, IM-27) and onNote gets a list_changed,
// since the server may have changed its lists while nobody listened
// (IM-25). A server that refuses the request leaves the connection without
// list_changed, as a legacy server without the capability does. s's stop
// waits for every listen request to end; if listening fails, s is stopped.
func (s *session) listen(ctx context.Context, acks <-chan mcpgo.JSONRPCNotification,
	onNote func(mcpgo.JSONRPCNotification), log *slog.Logger) error {
	l := &listener{s: s, acks: acks, onNote: onNote, log: log}
	l.mu.Lock()
	r, _, err := l.open(ctx, nil)
	switch {
	case errors.Is(err, errListenRefused):
		log.Debug("subscriptions/listen refused; no list_changed from this upstream", "err", err)
	case err != nil:
		l.mu.Unlock()
		s.markLost()
		_ = s.stop()
		l.wg.Wait()
		return err
	}
	l.cur = r
	l.mu.Unlock()
	s.listener = l
	stop := s.stop
	s.stop = func() error {
		err := stop()
		l.close()
		return err
	}
	return nil
}

// errListenRefused is a subscriptions/listen the server answered without
// acknowledging it.
var errListenRefused = errors.New("subscriptions/listen refused")

// open sends a subscriptions/listen for list changes and the resources
// uris, and waits, bounded by ctx, for its acknowledgement, which it
// returns: what the server established. A request the server refused
// (errListenRefused) or that ctx gave up on has ended when open returns.
// The caller holds l.mu.
func (l *listener) open(ctx context.Context, uris []string) (*listenRequest, mcpgo.SubscriptionFilter, error) {
	var none mcpgo.SubscriptionFilter
	if l.closed {
		return nil, none, fmt.Errorf("subscriptions/listen: %w: %w", core.ErrNotSent, errConnectionLost)
	}
	// An acknowledgement left over from a request that was given up on
	// belongs to nobody now.
	select {
	case <-l.acks:
	default:
	}
	filter := map[string]any{"notifications": mcpgo.SubscriptionFilter{
		ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true,
		ResourceSubscriptions: uris,
	}}
	// The request outlives the call that opened it.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &listenRequest{cancel: cancel, ended: make(chan struct{})}
	result := make(chan error, 1)
	// held is sent once, when it is known whether the server holds the
	// request open.
	held := make(chan bool, 1)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(r.ended)
		defer cancel()
		_, err := l.s.request(rctx, string(mcpgo.MethodSubscriptionsListen), filter)
		result <- err
		if !<-held || l.s.lost.Err() != nil || r.superseded.Load() {
			return
		}
		l.log.Debug("subscriptions/listen ended; the connection will be made again", "err", err)
		l.s.markLost()
		l.onNote(mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION,
			Notification: mcpgo.Notification{Method: string(mcpgo.MethodNotificationToolsListChanged)}})
	}()
	select {
	case n := <-l.acks:
		got := acknowledged(n)
		held <- !got.IsEmpty()
		return r, got, nil
	case err := <-result:
		held <- false
		<-r.ended
		if err == nil {
			err = errors.New("ended without an acknowledgement")
		}
		return nil, none, fmt.Errorf("%w: %w", errListenRefused, err)
	case <-ctx.Done():
		held <- false
		cancel()
		<-r.ended
		return nil, none, fmt.Errorf("subscriptions/listen: %w", ctx.Err())
	}
}

// follow makes the listen request's resources uris: unless they are what
// it has, it opens a request for them and, once the server acknowledged
// it, closes the one it replaces. On an error the request open stays as it
// was. It returns the URIs of uris the server did not establish.
func (l *listener) follow(ctx context.Context, uris []string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil && slices.Equal(l.uris, uris) {
		return nil, nil
	}
	r, got, err := l.open(ctx, uris)
	if err != nil {
		return nil, err
	}
	if old := l.cur; old != nil {
		old.superseded.Store(true)
		old.cancel()
	}
	l.cur = r
	l.uris = slices.Clone(got.ResourceSubscriptions)
	slices.Sort(l.uris)
	var missing []string
	for _, u := range uris {
		if _, ok := slices.BinarySearch(l.uris, u); !ok {
			missing = append(missing, u)
		}
	}
	return missing, nil
}

// close ends the listen requests once the connection has stopped, and
// waits for them.
func (l *listener) close() {
	l.mu.Lock()
	l.closed = true
	if l.cur != nil {
		l.cur.cancel()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// acknowledged reads what an acknowledgement says the server established.
// A server with nothing to send ends the request at once, and that is no
// lost connection.
func acknowledged(n mcpgo.JSONRPCNotification) mcpgo.SubscriptionFilter {
	var p struct {
		Notifications mcpgo.SubscriptionFilter `json:"notifications"`
	}
	raw, err := json.Marshal(n.Params)
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return mcpgo.SubscriptionFilter{}
	}
	return p.Notifications
}

// modernConnected gives a new modern connection what the upstream keeps
// across connections: its tools' header bindings, and its resource
// subscriptions, which a new listen request names again.
func (b *base) modernConnected(ctx context.Context, s *session) {
	if s.modern == nil {
		return
	}
	s.modern.bindings.Store(&b.mod.params)
	if uris := b.mod.subs.list(); len(uris) > 0 && s.listener != nil {
		if missing, err := s.listener.follow(ctx, uris); err != nil || len(missing) > 0 {
			b.log.Warn("resource subscriptions not established again", "uris", missing, "err", b.scrub(err))
		}
	}
}

// followResources makes a modern upstream's listen request name the
// resources subscribed, after uri was added to them (or removed, when
// add is false). A URI the server refuses or does not establish is
// dropped again, with an error naming it; one whose request failed
// otherwise (the connection lost, ctx done) stays, for the next change or
// connection to listen for.
func (b *base) followResources(ctx context.Context, s *session, uri string, add bool) error {
	if add {
		b.mod.subs.add(uri)
	} else {
		b.mod.subs.remove(uri)
	}
	if s.listener == nil {
		// Not reached: every modern connection listens, or fails.
		return nil
	}
	missing, err := s.listener.follow(ctx, b.mod.subs.list())
	var rpc *core.RPCError
	var status *core.StatusError
	switch {
	case err != nil && add && (errors.As(err, &rpc) || errors.As(err, &status)):
		// The server's answer: asking again would get the same.
		b.mod.subs.remove(uri)
		return b.scrub(fmt.Errorf("subscriptions/listen for %s: %w", uri, err))
	case err != nil:
		return b.scrub(fmt.Errorf("subscriptions/listen for %s: %w", uri, err))
	case len(missing) > 0:
		for _, u := range missing {
			b.mod.subs.remove(u)
		}
		return fmt.Errorf("subscriptions/listen: the upstream did not establish updates of %s", strings.Join(missing, ", "))
	}
	return nil
}
