package upstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/downstream"
)

// Connecting through URL-mode elicitation (MCP 2025-11-25; UI-2). An actor
// not yet connected to a perActor upstream whose client declared
// elicitation.url is asked to open the connect link through the client
// (elicitation/create, mode "url") rather than reading it in an isError
// result. On "accept" the call waits, within its own lifetime and the
// link's, for the connection to complete — signalled by the manager on this
// replica, or seen in the store when the browser came back through another
// — and then goes on as if it had been connected all along. A session that
// asked is sent notifications/elicitation/complete with the elicitation's
// id when the connection completes, whenever that is, if it is still there.
// A 2026-07-28 client is asked the same question as an input request of
// the call (package mcp/serve's modern_relay.go), which has no session to
// notify: the call's result is its completion. A client without the capability, one that
// declines or cancels, or one that cannot be asked gets the isError answer
// with the link, as before.

// connectLinker is an error that carries the actor's connect link (the
// upstream OAuth manager's NeedsConnect).
type connectLinker interface {
	ConnectLink() (url string, expires time.Time)
}

// connectPoll is how often a waiting call looks in the store for a
// connection completed on another replica.
const connectPoll = 2 * time.Second

// maxConnectWaiters bounds the elicitations remembered per actor.
const maxConnectWaiters = 8

// connectWaiter is one URL elicitation waiting for an actor's connection:
// while its call waits, or, once the call has ended, only what tells its
// session when the connection completes.
type connectWaiter struct {
	id      string
	expires time.Time
	// notify sends notifications/elicitation/complete to the session that
	// was asked; nil for a sessionless (2026-07-28) client.
	notify func()
	// later is notify once the call has ended: to the session alone, so
	// the record holds nothing of the call (its context, its stream); nil:
	// nobody to tell.
	later func()
	// live: a call waits on done (set before add, never changed).
	live bool
	once sync.Once
	ok   bool // the connection completed; set before done is closed
	done chan struct{}
}

// connectWaiters are an upstream's elicitations, by actor.
type connectWaiters struct {
	mu sync.Mutex
	m  map[string][]*connectWaiter
}

// add remembers w, dropping actor's expired waiters and, past
// maxConnectWaiters, the oldest one, an ended call's first. A dropped
// waiter is finished unconnected: a call still waiting on it answers the
// link rather than waiting on a record nobody will complete.
func (cw *connectWaiters) add(actor string, w *connectWaiter) {
	now := time.Now()
	var dropped []*connectWaiter
	defer func() {
		for _, o := range dropped {
			o.finish(false)
		}
	}()
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if cw.m == nil {
		cw.m = map[string][]*connectWaiter{}
	}
	var keep []*connectWaiter
	for _, o := range cw.m[actor] {
		if now.Before(o.expires) {
			keep = append(keep, o)
		} else {
			dropped = append(dropped, o)
		}
	}
	for len(keep) >= maxConnectWaiters {
		i := slices.IndexFunc(keep, func(o *connectWaiter) bool { return !o.live })
		if i < 0 {
			i = 0
		}
		dropped = append(dropped, keep[i])
		keep = slices.Delete(keep, i, i+1)
	}
	cw.m[actor] = append(keep, w)
}

// take removes and returns actor's waiters: all of them, or the one of id.
func (cw *connectWaiters) take(actor, id string) []*connectWaiter {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if id == "" {
		ws := cw.m[actor]
		delete(cw.m, actor)
		return ws
	}
	ws := cw.m[actor]
	for i, w := range ws {
		if w.id == id {
			cw.m[actor] = append(ws[:i:i], ws[i+1:]...)
			if len(cw.m[actor]) == 0 {
				delete(cw.m, actor)
			}
			return []*connectWaiter{w}
		}
	}
	return nil
}

// ended is told when w's call has ended: w, if still there, gives way to
// a record that only tells its session when the connection completes, or
// to nothing when there is no session to tell.
func (cw *connectWaiters) ended(actor string, w *connectWaiter) {
	now := time.Now()
	cw.mu.Lock()
	defer cw.mu.Unlock()
	ws := cw.m[actor]
	i := slices.Index(ws, w)
	switch {
	case i < 0:
		return
	case w.later == nil:
		ws = slices.Delete(ws, i, i+1)
	default:
		ws[i] = &connectWaiter{id: w.id, expires: w.expires, notify: w.later, done: make(chan struct{})}
	}
	// Ended calls' records past their expiry go too (no call waits on them).
	ws = slices.DeleteFunc(ws, func(o *connectWaiter) bool { return !o.live && !now.Before(o.expires) })
	if len(ws) == 0 {
		delete(cw.m, actor)
		return
	}
	cw.m[actor] = ws
}

// complete tells every waiter of actor that the connection is made: the
// sessions that asked get notifications/elicitation/complete, then the
// calls waiting go on.
func (cw *connectWaiters) complete(actor string) {
	for _, w := range cw.take(actor, "") {
		w.finish(true)
	}
}

// finish lets w's call go on (ok: connected, after its session is told)
// or answer; once, whoever calls it first.
func (w *connectWaiter) finish(ok bool) {
	w.once.Do(func() {
		if ok && w.notify != nil {
			w.notify()
		}
		w.ok = ok
		close(w.done)
	})
}

// canElicitURL reports whether the calling client declared URL-mode
// elicitation and can be asked during this call.
func canElicitURL(ctx context.Context) bool {
	d := downstream.From(ctx)
	return d != nil && d.CanElicitURL()
}

// askToConnect is the answer to a call whose actor is not connected (err
// wraps core.ErrNotConnected). connected is true when the client was asked
// through URL-mode elicitation and the connection then completed: the call
// goes on. Otherwise res is the isError answer naming the link. Asking and
// waiting end with the call, at ConnectWait or the link's expiry, and when
// the upstream shuts down.
func (u *OAuthUpstream) askToConnect(ctx context.Context, actor string, err error) (res core.Result, connected bool) {
	var link connectLinker
	if !errors.As(err, &link) || !canElicitURL(ctx) {
		return core.ErrorResult(err.Error()), false
	}
	url, expires := link.ConnectLink()
	d := downstream.From(ctx)
	if url == "" || d == nil || u.shut.Err() != nil {
		return core.ErrorResult(err.Error()), false
	}
	wait := u.opts.ConnectWait
	if !expires.IsZero() {
		left := time.Until(expires)
		if left <= 0 {
			// A link already expired is not worth a sign-in.
			return core.ErrorResult(err.Error()), false
		}
		wait = min(wait, left)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	defer context.AfterFunc(u.shut, cancel)()
	w := &connectWaiter{id: elicitationID(), expires: time.Now().Add(wait), live: true, done: make(chan struct{})}
	var inCall atomic.Bool // the call still waits: its own stream carries the notification
	inCall.Store(true)
	defer inCall.Store(false)
	if toSession := d.SessionNotifier(); toSession != nil {
		id := w.id
		w.notify = func() { notifyComplete(d, toSession, id, inCall.Load()) }
		w.later = func() {
			toSession(string(mcpgo.MethodNotificationElicitationComplete), map[string]any{"elicitationId": id})
		}
	}
	u.waiters.add(actor, w)
	// Nothing of the call is kept once it has ended.
	defer u.waiters.ended(actor, w)
	params, _ := json.Marshal(mcpgo.ElicitationParams{Mode: mcpgo.ElicitationModeURL, ElicitationID: w.id, URL: url,
		Message: fmt.Sprintf("Connect your account on %s: sign in there, and toolgate calls %s as you from then on.", u.name, u.name)})
	raw, aerr := d.Request(ctx, string(mcpgo.MethodElicitationCreate), params)
	var answer struct {
		Action mcpgo.ElicitationResponseAction `json:"action"`
	}
	if aerr == nil {
		b, merr := json.Marshal(raw)
		if merr == nil {
			aerr = json.Unmarshal(b, &answer)
		} else {
			aerr = merr
		}
	}
	switch {
	case u.shut.Err() != nil:
		u.waiters.take(actor, w.id)
		return u.shutAnswer(err), false
	case aerr != nil:
		u.waiters.take(actor, w.id)
		u.log.Debug("asking to connect by URL elicitation failed; answering the link", "err", aerr)
		return core.ErrorResult(err.Error()), false
	case answer.Action != mcpgo.ElicitationResponseActionAccept:
		u.waiters.take(actor, w.id)
		return core.ErrorResult(fmt.Sprintf("Not connected: the connect page was not opened (%s). %s", answer.Action, err.Error())), false
	}
	u.log.Debug("URL elicitation accepted: waiting for the actor to connect", "actor", core.ActorLabel(actor), "elicitation", w.id, "wait", wait.Round(time.Second).String())
	u.waiting.Add(1)
	ok := u.waitConnected(ctx, actor, w)
	u.waiting.Add(-1)
	if ok {
		return core.Result{}, true
	}
	if u.shut.Err() != nil {
		// The session is not told later: the gateway is going.
		u.waiters.take(actor, w.id)
		return u.shutAnswer(err), false
	}
	// The call ends; the session still hears when the connection is made.
	u.log.Debug("the call stopped waiting for the actor to connect", "actor", core.ActorLabel(actor), "elicitation", w.id, "cause", context.Cause(ctx))
	return core.ErrorResult(err.Error()), false
}

// elicitationID is a new URL elicitation's id: unguessable, as it names
// the wait to whoever completes it.
func elicitationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// shutAnswer is the answer of a call that was waiting for its actor to
// connect when the upstream shut down.
func (u *OAuthUpstream) shutAnswer(err error) core.Result {
	return core.ErrorResult(fmt.Sprintf("Not connected: %v, so this call no longer waits for the connection. %s", context.Cause(u.shut), err.Error()))
}

// notifyComplete sends notifications/elicitation/complete for id to the
// session that was asked: on the waiting call's stream, else to the
// session if it is still there (dropped otherwise).
func notifyComplete(d downstream.Downstream, toSession func(string, map[string]any), id string, inCall bool) {
	method := string(mcpgo.MethodNotificationElicitationComplete)
	params := map[string]any{"elicitationId": id}
	if inCall && d.NotifyCallStream(method, params) {
		return
	}
	toSession(method, params)
}

// waitConnected waits for actor's connection until ctx ends: the
// manager's signal on this replica, or a working token read from the store
// (the browser came back through another replica).
func (u *OAuthUpstream) waitConnected(ctx context.Context, actor string, w *connectWaiter) bool {
	poll := time.NewTicker(connectPoll)
	defer poll.Stop()
	for {
		select {
		case <-w.done:
			return w.ok
		case <-ctx.Done():
			return false
		case <-poll.C:
			if _, _, err := u.opts.Tokens.Token(ctx, u.name, actor); err != nil {
				continue
			}
			if ws := u.waiters.take(actor, w.id); len(ws) == 1 {
				w.finish(true)
				return true
			}
			// complete took it and is telling the session first; or it
			// was dropped. Either way it is finished: wait for that, so
			// the notification goes before the result, but never past
			// the call.
			select {
			case <-w.done:
				return true
			case <-ctx.Done():
				return false
			}
		}
	}
}
