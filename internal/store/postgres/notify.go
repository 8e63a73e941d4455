package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/core"
)

// Cross-replica events (core.Broadcaster) travel by LISTEN/NOTIFY on one
// channel per schema, so replicas of different deployments sharing a
// database do not hear each other. Payloads only name what changed.
const (
	// maxPayload is below NOTIFY's 8000-byte limit.
	maxPayload = 7900
	// listenBackoffMin and listenBackoffMax bound the wait between two
	// attempts to (re)connect the listening connection.
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

var _ core.Broadcaster = (*Store)(nil)

// ChannelName is the NOTIFY channel of a schema's events.
func ChannelName(schema string) string {
	name := "toolgate_events_" + schema
	if len(name) > 63 { // NAMEDATALEN: longer names would be cut
		sum := sha256.Sum256([]byte(schema))
		name = "toolgate_events_" + hex.EncodeToString(sum[:12])
	}
	return name
}

// wire is a payload: the event and the handle that sent it.
type wire struct {
	core.SharedEvent
	Origin string `json:"o"`
}

// notifier holds one dedicated connection LISTENing for the schema's
// channel, started by the first subscription. It reconnects by itself,
// with backoff, after the server restarts, and then tells every
// subscriber to resync: what was sent meanwhile was not heard.
type notifier struct {
	s      *Store
	origin string // this handle's id, to skip its own events

	mu      sync.Mutex
	subs    map[*sharedSub]struct{}
	started bool
	closed  bool
	stop    context.CancelFunc
	done    chan struct{}
	// ready is closed once the connection first listens, gone by close.
	ready, gone chan struct{}
}

func newNotifier(s *Store) *notifier {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return &notifier{s: s, origin: hex.EncodeToString(b[:]), subs: map[*sharedSub]struct{}{}, ready: make(chan struct{}), gone: make(chan struct{})}
}

// sharedSub queues events for its consumer, so the listener never waits
// for a slow one; past maxQueued they collapse into one resync.
type sharedSub struct {
	n    *notifier
	ch   chan core.SharedEvent
	wake chan struct{} // buffered 1
	quit chan struct{}
	done chan struct{}

	queue []core.SharedEvent // guarded by n.mu
}

// maxQueued bounds a subscription's queue.
const maxQueued = 4096

func (c *sharedSub) C() <-chan core.SharedEvent { return c.ch }

func (c *sharedSub) Close() {
	c.n.mu.Lock()
	_, ok := c.n.subs[c]
	delete(c.n.subs, c)
	c.n.mu.Unlock()
	if ok {
		close(c.quit)
		<-c.done
	}
}

// pump hands the queued events to the consumer in order.
func (c *sharedSub) pump() {
	defer close(c.done)
	defer close(c.ch)
	for {
		c.n.mu.Lock()
		q := c.queue
		c.queue = nil
		c.n.mu.Unlock()
		for _, e := range q {
			select {
			case c.ch <- e:
			case <-c.quit:
				return
			}
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-c.wake:
		case <-c.quit:
			return
		}
	}
}

// Broadcast implements core.Broadcaster.
func (s *Store) Broadcast(ctx context.Context, e core.SharedEvent) error {
	if err := s.usable(); err != nil {
		return err
	}
	body, err := json.Marshal(wire{SharedEvent: e, Origin: s.notes.origin})
	if err != nil {
		return err
	}
	if len(body) > maxPayload {
		return fmt.Errorf("broadcast %s: payload of %d bytes is over NOTIFY's limit", e.Kind, len(body))
	}
	return s.do(ctx, "broadcast", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", ChannelName(s.d.schema), string(body))
		return err
	})
}

// SubscribeShared implements core.Broadcaster.
func (s *Store) SubscribeShared(ctx context.Context) core.SharedSubscription {
	n := s.notes
	c := &sharedSub{n: n, ch: make(chan core.SharedEvent), wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	n.mu.Lock()
	if n.closed {
		close(c.ch)
		close(c.done)
		n.mu.Unlock()
		return c
	}
	n.subs[c] = struct{}{}
	select {
	case <-n.ready:
		// Listening already: the subscription starts with a resync, as
		// those made before listening started do.
		c.queue = append(c.queue, core.SharedEvent{Kind: core.SharedResync})
	default:
	}
	go c.pump()
	if !n.started {
		n.started = true
		lctx, stop := context.WithCancel(context.Background())
		n.stop, n.done = stop, make(chan struct{})
		go n.run(lctx)
	}
	ready := n.ready
	n.mu.Unlock()
	select {
	case <-ready:
	case <-n.gone:
	case <-ctx.Done():
	}
	return c
}

// close stops the listener and ends every subscription.
func (n *notifier) close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	close(n.gone)
	stop, done := n.stop, n.done
	subs := make([]*sharedSub, 0, len(n.subs))
	for c := range n.subs {
		subs = append(subs, c)
	}
	n.mu.Unlock()
	for _, c := range subs {
		c.Close()
	}
	if stop != nil {
		stop()
		<-done
	}
}

func (n *notifier) run(ctx context.Context) {
	defer close(n.done)
	wait := listenBackoffMin
	first := true
	for ctx.Err() == nil {
		conn, err := n.listen(ctx)
		if err != nil {
			// Jittered, so replicas do not come back in step.
			d := wait/2 + mrand.N(wait/2+1)
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
			wait = min(wait*2, listenBackoffMax)
			continue
		}
		wait = listenBackoffMin
		if first {
			close(n.ready)
			first = false
		}
		// Whatever was sent before LISTEN took effect was not heard.
		n.deliver(core.SharedEvent{Kind: core.SharedResync})
		n.receive(ctx, conn)
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
	}
}

func (n *notifier) listen(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, n.s.d.pool.ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{ChannelName(n.s.d.schema)}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// receive delivers notifications until the connection fails or ctx ends.
func (n *notifier) receive(ctx context.Context, conn *pgx.Conn) {
	for {
		nt, err := conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		var w wire
		if json.Unmarshal([]byte(nt.Payload), &w) != nil || w.Kind == "" || w.Origin == n.origin {
			continue
		}
		n.deliver(w.SharedEvent)
	}
}

// deliver queues e for every subscriber without waiting for any.
func (n *notifier) deliver(e core.SharedEvent) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for c := range n.subs {
		if len(c.queue) >= maxQueued {
			// Far behind: what it has not read yet is read again anyway.
			c.queue = append(c.queue[:0], core.SharedEvent{Kind: core.SharedResync})
		}
		c.queue = append(c.queue, e)
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}
