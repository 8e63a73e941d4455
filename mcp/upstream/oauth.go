package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/core"
)

// OAuthTokens gives the bearer tokens of an OAuth upstream (UI-1, UI-2).
// Its errors for an actor without a working connection wrap
// core.ErrNotConnected and read as the person's next step (a connect URL).
// Safe for concurrent use.
type OAuthTokens interface {
	// Token returns the access token of actor (core.SharedActor for the
	// shared connection) and the id of its connection.
	Token(ctx context.Context, upstream, actor string) (token, connID string, err error)
	// CatalogActor returns the actor whose connection lists the catalog of
	// a perActor upstream: the first connected. ok is false when none is.
	CatalogActor(ctx context.Context, upstream string) (actor string, ok bool, err error)
	// Refused is told that the upstream answered HTTP 401 to the token of
	// connection connID: it refreshes the token, or fails with an error
	// wrapping core.ErrNotConnected when the connection cannot go on.
	Refused(ctx context.Context, upstream, actor, connID string) error
}

// OAuthUpstreamOptions configure NewOAuthUpstream.
type OAuthUpstreamOptions struct {
	// Upstream is the network upstream's options; its Token is set per
	// connection.
	Upstream Options
	// PerActor: each actor's calls go through a connection of their own
	// with their own token; else one shared connection.
	PerActor bool
	// Exchange: each actor's token comes from a token exchange of their
	// own sign-in (RFC 8693), not a browser step; only ConnectTool's text
	// differs.
	Exchange bool
	Tokens   OAuthTokens
	// IdleAfter closes an actor's connection unused that long (default 10
	// min); the next call opens it again.
	IdleAfter time.Duration
	// ConnectWait bounds how long a call whose client agreed to open the
	// connect link (URL-mode elicitation) waits for the connection
	// (default 10 min, never past the link's expiry).
	ConnectWait time.Duration
	// Logger logs what connecting asks of the client; nil: the upstream's.
	Logger *slog.Logger
}

// ConnectTool is the remote name of the one tool a perActor upstream lists
// until its catalog is known (UI-2): a read whose call answers the actor's
// connect URL.
const ConnectTool = "connect"

// OAuthUpstream is an upstream toolgate is the OAuth client of (UI-2). A
// shared one is one connection with the shared account's token. A perActor
// one opens a connection per actor, lazily, with that actor's token —
// an upstream may bind its session to the person — and closes it when idle
// or when the connection is revoked; its catalog is listed through the
// first connected actor's connection, and until one is connected it lists
// ConnectTool alone.
type OAuthUpstream struct {
	opts OAuthUpstreamOptions
	name string
	log  *slog.Logger

	mu          sync.Mutex
	lister      core.Upstream // nil: not connected, or the placeholder
	listerActor string
	actors      map[string]*actorConn
	onChange    func()

	// waiters are the URL elicitations waiting for an actor to connect.
	waiters connectWaiters
	// waiting counts the calls waiting for their actor to connect.
	waiting atomic.Int64
	// shut ends every wait for a connection: the upstream shuts down.
	shut     context.Context
	shutDown context.CancelCauseFunc
}

var (
	errShuttingDown = errors.New("toolgate is shutting down")
	errClosed       = errors.New("the upstream was closed (its configuration was reloaded, or toolgate is stopping)")
)

type actorConn struct {
	mu        sync.Mutex // serialises connecting
	up        core.Upstream
	connected bool // connected
	lastUsed  time.Time
}

var (
	_ core.Upstream             = (*OAuthUpstream)(nil)
	_ core.CallPreparer         = (*OAuthUpstream)(nil)
	_ core.ToolsChangedNotifier = (*OAuthUpstream)(nil)
)

// NewOAuthUpstream makes an OAuth upstream over a network upstream.
func NewOAuthUpstream(opts OAuthUpstreamOptions) (*OAuthUpstream, error) {
	if opts.Upstream.URL == "" || opts.Upstream.Command != "" {
		return nil, fmt.Errorf("upstream %q: oauth needs a url upstream", opts.Upstream.Name)
	}
	if opts.Tokens == nil {
		return nil, fmt.Errorf("upstream %q: oauth needs a token source", opts.Upstream.Name)
	}
	if opts.IdleAfter <= 0 {
		opts.IdleAfter = 10 * time.Minute
	}
	if opts.ConnectWait <= 0 {
		opts.ConnectWait = 10 * time.Minute
	}
	log := opts.Logger
	if log == nil {
		log = opts.Upstream.Logger
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	shut, shutDown := context.WithCancelCause(context.Background())
	return &OAuthUpstream{opts: opts, name: opts.Upstream.Name, log: log.With("upstream", opts.Upstream.Name), actors: map[string]*actorConn{},
		shut: shut, shutDown: shutDown}, nil
}

// connFor makes a network upstream whose every request carries actor's
// token.
func (u *OAuthUpstream) connFor(actor string) (core.Upstream, error) {
	o := u.opts.Upstream
	o.Authorization = ""
	o.Token = func(ctx context.Context) (string, error) {
		tok, _, err := u.opts.Tokens.Token(ctx, u.name, actor)
		return tok, err
	}
	return New(o)
}

// Connect opens the connection the catalog is listed with: the shared one,
// or the first connected actor's. A perActor upstream with no connected
// actor connects to nothing and lists ConnectTool.
func (u *OAuthUpstream) Connect(ctx context.Context) (core.ServerInfo, error) {
	actor := core.SharedActor
	if u.opts.PerActor {
		a, ok, err := u.opts.Tokens.CatalogActor(ctx, u.name)
		if err != nil {
			return core.ServerInfo{}, err
		}
		if !ok {
			u.setLister(nil, "")
			return core.ServerInfo{Name: u.name + " (no account connected yet)"}, nil
		}
		actor = a
	}
	up, err := u.connFor(actor)
	if err != nil {
		return core.ServerInfo{}, err
	}
	info, err := up.Connect(ctx)
	if err != nil {
		_ = up.Close()
		if u.opts.PerActor && errors.Is(err, core.ErrNotConnected) {
			// That connection broke meanwhile: list the placeholder.
			u.setLister(nil, "")
			return core.ServerInfo{Name: u.name + " (no account connected yet)"}, nil
		}
		return core.ServerInfo{}, err
	}
	u.setLister(up, actor)
	return info, nil
}

func (u *OAuthUpstream) setLister(up core.Upstream, actor string) {
	u.mu.Lock()
	old := u.lister
	u.lister, u.listerActor = up, actor
	onChange := u.onChange
	u.mu.Unlock()
	if old != nil && old != up {
		_ = old.Close()
	}
	if n, ok := up.(core.ToolsChangedNotifier); ok && onChange != nil {
		n.OnToolsChanged(onChange)
	}
}

func (u *OAuthUpstream) current() (core.Upstream, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lister, u.listerActor
}

// ListTools lists through the catalog connection, or answers ConnectTool.
// A perActor upstream listing the placeholder first looks again for a
// connected actor: a list after list_changed is how the real tools come.
func (u *OAuthUpstream) ListTools(ctx context.Context) ([]core.RemoteTool, error) {
	l, _ := u.current()
	if l == nil && u.opts.PerActor {
		if _, err := u.Connect(ctx); err != nil {
			return nil, err
		}
		l, _ = u.current()
	}
	if l == nil {
		if !u.opts.PerActor {
			return nil, u.sharedNotConnected()
		}
		desc := fmt.Sprintf("Connect your account on %s: answers a link to open in your browser. Its tools appear once an account is connected.", u.name)
		if u.opts.Exchange {
			desc = fmt.Sprintf("Connect to %s with your own sign-in, exchanged for its access (no browser step). Its tools appear once connected.", u.name)
		}
		return []core.RemoteTool{{
			Name: ConnectTool, Description: &desc, InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`),
		}}, nil
	}
	return l.ListTools(ctx)
}

// sharedNotConnected says what an operator does about a shared upstream
// nobody connected yet.
func (u *OAuthUpstream) sharedNotConnected() error {
	return fmt.Errorf("upstream %q: the shared account is not connected: an operator connects it with `toolgate connect %s` or c in the console's Upstreams pane: %w",
		u.name, u.name, core.ErrNotConnected)
}

// CallTool calls as the calling actor: the shared connection, or the
// actor's own. An actor without a working connection gets an isError
// result with their connect URL (UI-2).
func (u *OAuthUpstream) CallTool(ctx context.Context, remote string, args json.RawMessage) (core.Result, error) {
	if !u.opts.PerActor {
		l, _ := u.current()
		if l == nil {
			return core.Result{}, u.sharedNotConnected()
		}
		_, id, err := u.opts.Tokens.Token(ctx, u.name, core.SharedActor)
		if err != nil {
			return core.Result{}, err
		}
		core.NoteConnection(ctx, id)
		return u.callRefreshing(ctx, l, core.SharedActor, id, remote, args)
	}
	call, _ := core.CallFromContext(ctx)
	actor := call.Actor.ID
	if actor == "" {
		return core.ErrorResult(fmt.Sprintf("upstream %q acts as each caller, and this call has no actor", u.name)), nil
	}
	// Not connected: PrepareCall has asked the client to connect if it
	// could; the connection is gone again, or nobody could be asked.
	_, id, err := u.opts.Tokens.Token(ctx, u.name, actor)
	if errors.Is(err, core.ErrNotConnected) {
		return core.ErrorResult(err.Error()), nil
	} else if err != nil {
		return core.Result{}, err
	}
	if l, _ := u.current(); l == nil && remote == ConnectTool {
		// Connected now: the catalog can be listed.
		u.toolsChanged()
		return core.TextResult(fmt.Sprintf("Your account on %s is connected; its tools are being listed.", u.name)), nil
	}
	u.sweep(actor)
	up, err := u.actorConn(ctx, actor)
	if err != nil {
		if errors.Is(err, core.ErrNotConnected) {
			return core.ErrorResult(err.Error()), nil
		}
		return core.Result{}, err
	}
	core.NoteConnection(ctx, id)
	res, err := u.callRefreshing(ctx, up, actor, id, remote, args)
	if errors.Is(err, core.ErrNotConnected) {
		return core.ErrorResult(err.Error()), nil
	}
	if core.Transient(err) {
		u.drop(actor)
	}
	return res, err
}

// PrepareCall implements core.CallPreparer (UI-2): before a call's
// attempts, an actor not yet connected to a perActor upstream, whose
// client can open a URL for its user, is asked to connect, and the call
// waits for the connection — outside the per-attempt timeout, which is
// the upstream's and not the person's. ok false answers res: the isError
// with the link. Everything else is left to CallTool.
func (u *OAuthUpstream) PrepareCall(ctx context.Context, _ string) (core.Result, bool) {
	call, _ := core.CallFromContext(ctx)
	if !u.opts.PerActor || u.opts.Exchange || call.Actor.ID == "" || !canElicitURL(ctx) {
		// Nobody to ask (or nothing to ask: an exchange has no link):
		// CallTool answers, with no extra token read.
		return core.Result{}, true
	}
	_, _, err := u.opts.Tokens.Token(ctx, u.name, call.Actor.ID)
	if !errors.Is(err, core.ErrNotConnected) {
		return core.Result{}, true
	}
	return u.askToConnect(ctx, call.Actor.ID, err)
}

// Shutdown ends every call waiting for its actor to connect, at once,
// with the isError answer naming the link, and has no call wait again; it
// returns how many were waiting. The gateway calls it as it begins to
// close, as pending approvals are rejected then, so a wait does not hold
// shutdown; Close does it too.
func (u *OAuthUpstream) Shutdown() int {
	n := int(u.waiting.Load())
	if u.shutDown != nil {
		u.shutDown(errShuttingDown)
	}
	return n
}

// callRefreshing calls through up; an HTTP 401 (the token was refused
// before the call ran) has the token refreshed and the call sent once
// more, or answers the actor's connect text when the connection cannot go
// on.
func (u *OAuthUpstream) callRefreshing(ctx context.Context, up core.Upstream, actor, connID, remote string, args json.RawMessage) (core.Result, error) {
	res, err := up.CallTool(ctx, remote, args)
	var se *core.StatusError
	if !errors.As(err, &se) || se.Code != 401 {
		return res, err
	}
	if rerr := u.opts.Tokens.Refused(ctx, u.name, actor, connID); rerr != nil {
		if errors.Is(rerr, core.ErrNotConnected) {
			return core.ErrorResult(rerr.Error()), nil
		}
		return res, err
	}
	return up.CallTool(ctx, remote, args)
}

func (u *OAuthUpstream) toolsChanged() {
	u.mu.Lock()
	f := u.onChange
	u.mu.Unlock()
	if f != nil {
		f()
	}
}

// actorConn returns actor's connection, connecting it first if needed.
func (u *OAuthUpstream) actorConn(ctx context.Context, actor string) (core.Upstream, error) {
	u.mu.Lock()
	ac := u.actors[actor]
	if ac == nil {
		ac = &actorConn{}
		u.actors[actor] = ac
	}
	ac.lastUsed = time.Now()
	u.mu.Unlock()
	ac.mu.Lock()
	defer ac.mu.Unlock()
	if ac.connected {
		return ac.up, nil
	}
	if ac.up == nil {
		up, err := u.connFor(actor)
		if err != nil {
			return nil, err
		}
		ac.up = up
	}
	if _, err := ac.up.Connect(ctx); err != nil {
		return nil, err
	}
	ac.connected = true
	return ac.up, nil
}

// drop closes actor's connection; the next call opens it again.
func (u *OAuthUpstream) drop(actor string) {
	u.mu.Lock()
	ac := u.actors[actor]
	delete(u.actors, actor)
	u.mu.Unlock()
	if ac != nil {
		ac.mu.Lock()
		if ac.up != nil {
			_ = ac.up.Close()
		}
		ac.mu.Unlock()
	}
}

// sweep closes the connections of actors other than the caller that were
// idle past IdleAfter; done on calls, so no timer outlives the upstream.
func (u *OAuthUpstream) sweep(except string) {
	cut := time.Now().Add(-u.opts.IdleAfter)
	var idle []string
	u.mu.Lock()
	for a, ac := range u.actors {
		if a != except && ac.lastUsed.Before(cut) {
			idle = append(idle, a)
		}
	}
	u.mu.Unlock()
	for _, a := range idle {
		u.drop(a)
	}
}

// ConnectionChanged tells the upstream that actor's connection changed
// (UI-2): a new one lets the catalog be listed (list_changed); a revoked,
// disconnected or broken one closes the actor's upstream connection, and
// the catalog's if it was listed through it.
func (u *OAuthUpstream) ConnectionChanged(actor, change string) {
	if change == "connected" {
		u.waiters.complete(actor)
		if l, _ := u.current(); l == nil {
			u.toolsChanged()
		}
		return
	}
	u.drop(actor)
	if _, la := u.current(); la == actor {
		u.setLister(nil, "")
		u.toolsChanged()
	}
}

// Ping pings the catalog connection; the placeholder has nothing to ping.
func (u *OAuthUpstream) Ping(ctx context.Context) error {
	if l, _ := u.current(); l != nil {
		return l.Ping(ctx)
	}
	return nil
}

// Close ends the calls waiting for a connection and closes every
// connection.
func (u *OAuthUpstream) Close() error {
	if u.shutDown != nil {
		u.shutDown(errClosed) // the first cause stays: Shutdown's, if it came first
	}
	u.mu.Lock()
	l := u.lister
	u.lister, u.listerActor = nil, ""
	actors := u.actors
	u.actors = map[string]*actorConn{}
	u.mu.Unlock()
	var errs []error
	if l != nil {
		errs = append(errs, l.Close())
	}
	for _, ac := range actors {
		ac.mu.Lock()
		if ac.up != nil {
			errs = append(errs, ac.up.Close())
		}
		ac.mu.Unlock()
	}
	return errors.Join(errs...)
}

// OnToolsChanged implements core.ToolsChangedNotifier: the catalog
// connection's list_changed, and the moment a first account connects.
func (u *OAuthUpstream) OnToolsChanged(f func()) {
	u.mu.Lock()
	u.onChange = f
	l := u.lister
	u.mu.Unlock()
	if n, ok := l.(core.ToolsChangedNotifier); ok {
		n.OnToolsChanged(f)
	}
}
