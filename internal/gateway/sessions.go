package gateway

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
)

// sessionKey seals the endpoints' session ids (SV-2, OP-5). Derived from
// the confirm secret, which replicas sharing a store must already share
// (CF-5), under its own label: every replica, and this gateway restarted,
// can continue a session with no new setting. Without a secret the key is
// this process's own, and sessions end with it.
func sessionKey(cfg *config.Config) ([]byte, error) {
	secret := cfg.Gateway.Confirm.Secret.Reveal()
	if secret == "" {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		return key, nil
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, "toolgate session ids v1", 32)
	if err != nil {
		return nil, fmt.Errorf("deriving the session key: %w", err)
	}
	return key, nil
}

// sessionEndedWait bounds telling the other replicas that a session ended:
// a DELETE waits for it.
const sessionEndedWait = 2 * time.Second

// broadcastSessionEnded is the endpoints' SessionTerminated over a shared
// store: the other replicas refuse the id from then on. nil otherwise.
func (g *Gateway) broadcastSessionEnded() func(id string) {
	b, ok := g.store.(core.Broadcaster)
	if !ok {
		return nil
	}
	return func(id string) {
		ctx, cancel := context.WithTimeout(g.life, sessionEndedWait)
		defer cancel()
		if err := b.Broadcast(ctx, core.SharedEvent{Kind: core.SharedSessionEnded, ID: id}); err != nil && g.life.Err() == nil {
			g.log.Warn("telling other replicas a session ended", "err", err)
		}
	}
}

// replicas counts the gateways built in this process.
var replicas atomic.Int64

// replicaName names this gateway in the sessions it serves: host:pid, and
// a sequence number for the second and later gateways of one process (the
// tests run several), since the shared listing tells replicas apart by it.
func replicaName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	name := host + ":" + strconv.Itoa(os.Getpid())
	if n := replicas.Add(1); n > 1 {
		name += "/" + strconv.FormatInt(n, 10)
	}
	return name
}

const (
	// sessionBeat is how often, at the least, a replica rewrites its
	// sessions in the shared store and says it is alive; any change of its
	// sessions is written at once too (CO-5, OP-5).
	sessionBeat = 10 * time.Second
	// sessionStale: the sessions of a replica that has not said it is alive
	// for this long are not listed; it died or lost the store, and its
	// clients continue elsewhere (and are listed there).
	sessionStale = 3 * sessionBeat
	// endElsewhereWait bounds how long ending another replica's session
	// waits for that replica to have ended it.
	endElsewhereWait = 5 * time.Second
)

// sessionShare keeps this replica's sessions in the shared store and shows
// the other replicas' beside them: in the snapshot after the local ones,
// marked Elsewhere and named by their SessionKey, and as SessionsElsewhere
// events when they change.
type sessionShare struct {
	store   core.SharedSessions
	bcast   core.Broadcaster
	replica string
	bus     *core.Bus
	local   *core.Sessions
	log     *slog.Logger
	life    context.Context

	sub    *core.BusSubscription
	reread chan struct{} // buffered 1: another replica's sessions changed
	stop   chan struct{}
	done   chan struct{}
	failed bool // the last sync failed; only the loop touches it

	mu     sync.Mutex
	remote []core.Session
	// changed is closed, and replaced, whenever remote is.
	changed chan struct{}
}

// startSessionShare shares the session listing when the store can hold it.
func (g *Gateway) startSessionShare() {
	st, ok := g.store.(core.SharedSessions)
	b, ok2 := g.store.(core.Broadcaster)
	if !ok || !ok2 {
		return
	}
	bus := g.reg.Bus()
	s := &sessionShare{store: st, bcast: b, replica: g.replica, bus: bus, local: g.sessions, log: g.log, life: g.life,
		reread: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), changed: make(chan struct{})}
	bus.AddSnapshotPart(func(snap *core.Snapshot) {
		s.mu.Lock()
		defer s.mu.Unlock()
		snap.Sessions = append(snap.Sessions, s.remote...)
	})
	_, s.sub = bus.Subscribe(0)
	g.sessionShare = s
	go s.run()
}

// stopSessionShare ends the loop and takes this replica out of the
// listing, so the others stop showing its sessions at once rather than when
// its beat is stale.
func (g *Gateway) stopSessionShare() {
	s := g.sessionShare
	if s == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), sessionEndedWait)
	defer cancel()
	if err := s.store.DropReplica(ctx, s.replica); err == nil {
		_ = s.bcast.Broadcast(ctx, core.SharedEvent{Kind: core.SharedSessionsChanged})
	}
}

// changedElsewhere is told that another replica's sessions changed.
func (s *sessionShare) changedElsewhere() {
	select {
	case s.reread <- struct{}{}:
	default:
	}
}

func (s *sessionShare) run() {
	defer close(s.done)
	beat := time.NewTicker(sessionBeat)
	defer beat.Stop()
	write, read, tell := true, true, false
	for {
		if write {
			if s.sync() && tell {
				s.broadcast()
			}
			write, tell = false, false
		}
		if read {
			s.read()
			read = false
		}
		select {
		case <-s.stop:
			return
		case ev, ok := <-s.sub.C():
			if !ok {
				return
			}
			// Every event already queued is one sync.
			for more := true; more; {
				switch ev.Data.(type) {
				case core.SessionStarted, core.SessionEnded:
					write, tell = true, true
				case core.Resync:
					s.sub.Resync()
					write, tell = true, true
				}
				select {
				case ev, ok = <-s.sub.C():
					more = ok
				default:
					more = false
				}
			}
		case <-beat.C:
			write, read = true, true
		case <-s.reread:
			read = true
		}
	}
}

// sync writes this replica's sessions, keyed by SessionKey.
func (s *sessionShare) sync() bool {
	list := s.local.List()
	for i := range list {
		list[i].ID = core.SessionKey(list[i].ID)
		list[i].Replica = s.replica
	}
	ctx, cancel := context.WithTimeout(s.life, sharedWait)
	defer cancel()
	err := s.store.SyncSessions(ctx, s.replica, time.Now(), list)
	switch {
	case err != nil && !s.failed && s.life.Err() == nil:
		s.log.Warn("recording this replica's sessions in the store", "err", err)
	case err == nil && s.failed:
		s.log.Info("recording this replica's sessions in the store again")
	}
	s.failed = err != nil
	return err == nil
}

func (s *sessionShare) broadcast() {
	ctx, cancel := context.WithTimeout(s.life, sessionEndedWait)
	defer cancel()
	_ = s.bcast.Broadcast(ctx, core.SharedEvent{Kind: core.SharedSessionsChanged})
}

// read lists the other replicas' sessions and publishes them if they
// changed. On failure the last list stays: the store being down is said
// by the store's own errors.
func (s *sessionShare) read() {
	ctx, cancel := context.WithTimeout(s.life, sharedWait)
	defer cancel()
	all, err := s.store.ListSessions(ctx, time.Now().Add(-sessionStale))
	if err != nil {
		return
	}
	remote := make([]core.Session, 0, len(all))
	for _, x := range all {
		if x.Replica != s.replica {
			x.Elsewhere = true
			remote = append(remote, x)
		}
	}
	s.mu.Lock()
	same := slices.EqualFunc(remote, s.remote, func(a, b core.Session) bool { return reflect.DeepEqual(a, b) })
	s.mu.Unlock()
	if same {
		return
	}
	s.bus.Commit(func() []core.EventData {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.remote = remote
		close(s.changed)
		s.changed = make(chan struct{})
		return []core.EventData{core.SessionsElsewhere{Sessions: slices.Clone(remote)}}
	})
}

// listed reports the replica listing session key, if one does.
func (s *sessionShare) listed(key string) (replica string, ok bool, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.remote {
		if x.ID == key {
			return x.Replica, true, s.changed
		}
	}
	return "", false, s.changed
}

// endElsewhere ends another replica's session, named by its SessionKey:
// the replica serving it is asked to end it, as its own operator would,
// and this waits until it is no longer listed. The end then reaches every
// replica as any end does, so no copy of the session is continued.
func (s *sessionShare) endElsewhere(ctx context.Context, key string) error {
	replica, ok, changed := s.listed(key)
	if !ok {
		return fmt.Errorf("%w: %q", core.ErrUnknownSession, key)
	}
	if err := s.bcast.Broadcast(ctx, core.SharedEvent{Kind: core.SharedEndSession, ID: key}); err != nil {
		return fmt.Errorf("asking replica %s to end session %s: %w", replica, key, err)
	}
	wait := time.NewTimer(endElsewhereWait)
	defer wait.Stop()
	// The listing is read again now and then too: the other replica's
	// word that its sessions changed may be lost, like any event.
	poll := time.NewTicker(endElsewhereWait / 10)
	defer poll.Stop()
	for {
		select {
		case <-poll.C:
			s.changedElsewhere()
		case <-changed:
			if _, ok, changed = s.listed(key); !ok {
				return nil
			}
		case <-wait.C:
			return fmt.Errorf("asked replica %s to end session %s, and it still lists it after %v: it may have lost the store; its sessions are no longer listed once it has been silent for %v",
				replica, key, endElsewhereWait, sessionStale)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// endHere ends this replica's sessions whose SessionKey is key, for an
// operator of another replica.
func (s *sessionShare) endHere(key string) {
	for _, x := range s.local.List() {
		if core.SessionKey(x.ID) == key {
			if err := s.local.End(x.ID); err != nil && !errors.Is(err, core.ErrUnknownSession) {
				s.log.Warn("ending a session for another replica's operator", "session", key, "err", err)
			}
		}
	}
}

// allSessions is every session listed: this replica's, then the others'.
func (g *Gateway) allSessions() []core.Session {
	if g.sessions == nil {
		return nil
	}
	list := g.sessions.List()
	if s := g.sessionShare; s != nil {
		s.mu.Lock()
		list = append(list, s.remote...)
		s.mu.Unlock()
	}
	return list
}
