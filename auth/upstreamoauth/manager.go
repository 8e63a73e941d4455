package upstreamoauth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/credentials"
)

// Credential scopes (UI-2), as the config spells them.
const (
	Shared   = "shared"
	PerActor = "perActor"
)

// Upstream is one upstream toolgate is the OAuth client of.
type Upstream struct {
	Name string
	// URL is the upstream's MCP URL: the resource asked for.
	URL string
	// Credentials is Shared or PerActor.
	Credentials string
	// ClientID and ClientSecret name a pre-registered client; empty: a
	// Client ID Metadata Document where the server takes one, else
	// registration (RFC 7591).
	ClientID     string
	ClientSecret string
	// ClientKey, instead of ClientSecret, makes the pre-registered client
	// authenticate with private_key_jwt (RFC 7523): a signed assertion at
	// the token and revocation endpoints.
	ClientKey *ClientKey
	// Scopes to ask for; nil: the resource's scopes_supported.
	Scopes []string
	// TokenExchange (PerActor only): each actor's incoming OAuth token is
	// exchanged for the upstream's (RFC 8693) instead of a browser step.
	TokenExchange bool
}

// Store is what the manager keeps connections and spent single-use ids in;
// TokenSpent looks at an id without spending it (the connect page).
type Store interface {
	core.ConnectionStore
	UseToken(ctx context.Context, tokenID string, expires time.Time) (bool, error)
	TokenSpent(ctx context.Context, tokenID string) (bool, error)
}

// Options configure a Manager. Zero fields take defaults.
type Options struct {
	// PublicURL is the gateway's public origin: the redirect URI, the
	// connect URLs and the client metadata document live under it.
	PublicURL string
	// Key is the credentials key (32 bytes); Previous the one being
	// rotated away from, or nil.
	Key, Previous []byte
	Store         Store
	// HTTPClient talks to upstreams and authorization servers; nil: one
	// with Timeout.
	HTTPClient *http.Client
	// Timeout bounds each exchange with an authorization server (default
	// 15 s): one that hangs fails the flow, it does not hold it.
	Timeout time.Duration
	// ConnectTTL is how long a connect URL may be opened (default 10 min);
	// FlowTTL how long a browser may take at the authorization server.
	ConnectTTL, FlowTTL time.Duration
	// RefreshBefore refreshes an access token that long before it expires
	// (default 1 min).
	RefreshBefore time.Duration
	// Publish reports connection changes; nil: none.
	Publish func(core.EventData)
	Logger  *slog.Logger
	Now     func() time.Time
}

// Path is where the manager's routes live, under the public URL.
const Path = "/upstream-oauth"

// Manager runs the connections of every OAuth upstream of a gateway. It is
// safe for concurrent use.
type Manager struct {
	opts      Options
	ups       map[string]Upstream
	keyring   *credentials.Keyring
	connectK  []byte // HMAC key of connect URLs
	stateSeal *sealer
	hc        *http.Client

	mu         sync.Mutex
	metadata   map[string]Metadata       // upstream → discovered
	registered map[string]clientIdentity // issuer → registered client
	refreshing map[string]*sync.Mutex    // connection id → its refresh lock
	exchanges  map[string]exchanged      // upstream, actor → exchanged token (memory only)
}

// ErrUnknownUpstream: no OAuth upstream of that name.
var ErrUnknownUpstream = errors.New("no upstream of that name uses oauth")

// NeedsConnect is the error of a call whose actor has no working connection
// to a perActor upstream (or the shared one is missing): URL is where the
// person connects (UI-2). It carries no token.
type NeedsConnect struct {
	Upstream, Actor string
	URL             string
	// Expires is when URL stops working.
	Expires time.Time
	// Reason says why: not connected yet, or why the connection broke.
	Reason string
}

// ConnectLink is where the actor connects and until when: what a client
// that can open a URL for its user is asked to open (UI-2). "" for the
// shared account, which an operator connects.
func (e *NeedsConnect) ConnectLink() (string, time.Time) { return e.URL, e.Expires }

func (e *NeedsConnect) Error() string {
	if e.Actor == core.SharedActor {
		return fmt.Sprintf("upstream %q needs its shared account connected (%s): an operator runs `toolgate connect %s`", e.Upstream, e.Reason, e.Upstream)
	}
	return fmt.Sprintf("upstream %q needs your account connected (%s): open %s to connect, then call again", e.Upstream, e.Reason, e.URL)
}

// Unwrap makes a NeedsConnect match core.ErrNotConnected.
func (e *NeedsConnect) Unwrap() error { return core.ErrNotConnected }

// CatalogActor returns the actor whose connection lists a perActor
// upstream's catalog: the earliest connected that is not broken.
func (m *Manager) CatalogActor(ctx context.Context, upstream string) (string, bool, error) {
	if u, ok := m.ups[upstream]; ok && u.TokenExchange {
		a, ok := m.exchangeCatalogActor(upstream)
		return a, ok, nil
	}
	cs, err := m.opts.Store.Connections(ctx)
	if err != nil {
		return "", false, err
	}
	var best *core.Connection
	for i := range cs {
		c := &cs[i]
		if c.Upstream == upstream && c.Broken == "" && (best == nil || c.CreatedAt.Before(best.CreatedAt)) {
			best = c
		}
	}
	if best == nil {
		return "", false, nil
	}
	return best.ActorID, true, nil
}

// New makes a manager for the given upstreams.
func New(opts Options, ups []Upstream) (*Manager, error) {
	if opts.Store == nil {
		return nil, errors.New("upstreamoauth: a store is required")
	}
	if _, err := httpURL(opts.PublicURL); err != nil {
		return nil, fmt.Errorf("upstreamoauth: public URL: %w", err)
	}
	opts.PublicURL = strings.TrimSuffix(opts.PublicURL, "/")
	kr, err := credentials.NewKeyring(opts.Key, opts.Previous)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 15 * time.Second
	}
	if opts.ConnectTTL <= 0 {
		opts.ConnectTTL = 10 * time.Minute
	}
	if opts.FlowTTL <= 0 {
		opts.FlowTTL = 10 * time.Minute
	}
	if opts.RefreshBefore <= 0 {
		opts.RefreshBefore = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: opts.Timeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	// Tokens and codes never follow a redirect to another place.
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	m := &Manager{
		opts: opts, ups: map[string]Upstream{}, keyring: kr, hc: &c,
		connectK:   derive(opts.Key, "connect-url"),
		stateSeal:  newSealer(derive(opts.Key, "flow-state")),
		metadata:   map[string]Metadata{},
		registered: map[string]clientIdentity{},
		refreshing: map[string]*sync.Mutex{},
		exchanges:  map[string]exchanged{},
	}
	for _, u := range ups {
		if u.Credentials != Shared && u.Credentials != PerActor {
			return nil, fmt.Errorf("upstreamoauth: upstream %q: credentials must be %s or %s", u.Name, PerActor, Shared)
		}
		if u.TokenExchange && u.Credentials != PerActor {
			return nil, fmt.Errorf("upstreamoauth: upstream %q: a token exchange acts as each actor: credentials must be %s", u.Name, PerActor)
		}
		if u.ClientKey != nil && (u.ClientID == "" || u.ClientSecret != "") {
			return nil, fmt.Errorf("upstreamoauth: upstream %q: a client key belongs to a pre-registered client (clientId) without a secret", u.Name)
		}
		m.ups[u.Name] = u
	}
	return m, nil
}

// Close lets go of the manager's idle connections to authorization
// servers and upstreams.
func (m *Manager) Close() { m.hc.CloseIdleConnections() }

// Keyring is the manager's keyring, for rekeying.
func (m *Manager) Keyring() *credentials.Keyring { return m.keyring }

// Upstream returns the OAuth upstream of that name.
func (m *Manager) Upstream(name string) (Upstream, bool) {
	u, ok := m.ups[name]
	return u, ok
}

func (m *Manager) redirectURI() string { return m.opts.PublicURL + Path + "/callback" }

// ClientMetadataURL is the Client ID Metadata Document's URL: the client id
// where the server takes one.
func (m *Manager) ClientMetadataURL() string { return m.opts.PublicURL + Path + "/client.json" }

func (m *Manager) publish(c core.Connection, change string) {
	if m.opts.Publish != nil {
		c.Sealed = nil
		m.opts.Publish(core.ConnectionChanged{Connection: c, Change: change})
	}
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// tokenSet is what a connection seals: its tokens and what refreshing them
// needs on any replica.
type tokenSet struct {
	AccessToken   string    `json:"access_token"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	TokenType     string    `json:"token_type,omitempty"`
	Expiry        time.Time `json:"expiry,omitzero"`
	Issuer        string    `json:"issuer"`
	TokenEndpoint string    `json:"token_endpoint"`
	Resource      string    `json:"resource"`
	// ClientID and ClientSecret of a registered client (RFC 7591); a
	// pre-registered client's come from the config instead.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
}

// Token returns the access token to send upstream for actor (SharedActor
// for the shared connection) and the id of the connection it came from,
// refreshing it when it is about to expire. Without a working connection
// it fails with a *NeedsConnect carrying the actor's connect URL (UI-2).
func (m *Manager) Token(ctx context.Context, upstream, actor string) (token, connID string, err error) {
	u, ok := m.ups[upstream]
	if !ok {
		return "", "", fmt.Errorf("%q: %w", upstream, ErrUnknownUpstream)
	}
	if u.Credentials == Shared {
		actor = core.SharedActor
	}
	if u.TokenExchange {
		return m.exchangeToken(ctx, u, actor)
	}
	c, err := m.opts.Store.ConnectionFor(ctx, upstream, actor)
	if errors.Is(err, core.ErrNoConnection) {
		return "", "", m.needsConnect(u, actor, "not connected yet")
	}
	if err != nil {
		return "", "", err
	}
	if c.Broken != "" {
		return "", "", m.needsConnect(u, actor, c.Broken)
	}
	ts, err := m.open(ctx, c)
	if err != nil {
		return "", "", err
	}
	if m.expiring(ts) {
		if ts, c, err = m.refresh(ctx, u, c, false); err != nil {
			return "", "", err
		}
	}
	now := m.opts.Now()
	if now.Sub(c.LastUsed) > time.Minute {
		// Last use is for the operator's list; minute precision saves a
		// write per call.
		_ = m.opts.Store.TouchConnection(ctx, c.ID, now)
	}
	return ts.AccessToken, c.ID, nil
}

func (m *Manager) expiring(ts tokenSet) bool {
	return !ts.Expiry.IsZero() && !m.opts.Now().Add(m.opts.RefreshBefore).Before(ts.Expiry)
}

func (m *Manager) needsConnect(u Upstream, actor, reason string) *NeedsConnect {
	e := &NeedsConnect{Upstream: u.Name, Actor: actor, Reason: reason}
	if actor != core.SharedActor {
		e.URL, e.Expires = m.connectURL(u.Name, actor)
	}
	return e
}

// open decrypts a connection's tokens, re-sealing them with the current key
// when they were sealed with the previous one (UI-3).
func (m *Manager) open(ctx context.Context, c core.Connection) (tokenSet, error) {
	var ts tokenSet
	p, stale, err := m.keyring.Open(c)
	if err != nil {
		return ts, err
	}
	if err := json.Unmarshal(p, &ts); err != nil {
		return ts, fmt.Errorf("connection %s: its sealed tokens are not a token set", c.ID)
	}
	if stale {
		next := c
		m.keyring.Seal(&next, p)
		if _, err := m.opts.Store.UpdateConnection(ctx, next, c.Version); err != nil {
			m.opts.Logger.Warn("re-sealing a connection with the current credentials key failed", "connection", c.ID, "err", err)
		}
	}
	return ts, nil
}

func (m *Manager) seal(c *core.Connection, ts tokenSet) error {
	p, err := json.Marshal(ts)
	if err != nil {
		return err
	}
	m.keyring.Seal(c, p)
	return nil
}

func (m *Manager) lockFor(id string) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.refreshing[id]
	if l == nil {
		l = &sync.Mutex{}
		m.refreshing[id] = l
	}
	return l
}

// refresh trades the connection's refresh token for new tokens, once per
// connection at a time in this process and, through the store's version,
// across replicas: the loser reads the winner's tokens. The refresh token
// is used once and replaced by the one the server returns; invalid_grant
// marks the connection broken (UI-1, UI-3).
func (m *Manager) refresh(ctx context.Context, u Upstream, c core.Connection, force bool) (tokenSet, core.Connection, error) {
	seen := c.Version
	l := m.lockFor(c.ID)
	l.Lock()
	defer l.Unlock()
	c, err := m.opts.Store.ConnectionByID(ctx, c.ID)
	if err != nil {
		return tokenSet{}, c, err
	}
	if c.Broken != "" {
		return tokenSet{}, c, m.needsConnect(u, c.ActorID, c.Broken)
	}
	ts, err := m.open(ctx, c)
	if err != nil {
		return ts, c, err
	}
	if !m.expiring(ts) && (!force || c.Version != seen) {
		return ts, c, nil // fresh, or refreshed meanwhile
	}
	if ts.RefreshToken == "" {
		if force {
			return ts, c, m.markBroken(ctx, u, c, "the upstream refused the token and the server gave no refresh token: connect again")
		}
		if m.opts.Now().Before(ts.Expiry) {
			return ts, c, nil
		}
		return ts, c, m.markBroken(ctx, u, c, "the access token expired and the server gave no refresh token")
	}
	id := m.identityFor(u, ts)
	tr, err := m.tokenRequest(ctx, ts.TokenEndpoint, id, map[string][]string{
		"grant_type":    {"refresh_token"},
		"refresh_token": {ts.RefreshToken},
		"resource":      {ts.Resource},
	})
	var te *TokenError
	if errors.As(err, &te) && te.Code == "invalid_grant" {
		return ts, c, m.markBroken(ctx, u, c, "the authorization server refused the refresh token (invalid_grant): connect again")
	}
	if err != nil {
		if !force && m.opts.Now().Before(ts.Expiry) {
			// The token still works: use it, refresh on a later call.
			m.opts.Logger.Warn("refreshing an upstream token failed; the current one is used until it expires", "upstream", u.Name, "connection", c.ID, "err", err)
			return ts, c, nil
		}
		return ts, c, fmt.Errorf("refreshing the token of connection %s on %q: %w", c.ID, u.Name, err)
	}
	ts.AccessToken, ts.TokenType, ts.Expiry = tr.AccessToken, tr.TokenType, tr.expiry(m.opts.Now())
	if tr.RefreshToken != "" {
		ts.RefreshToken = tr.RefreshToken
	}
	next := c
	if tr.Scope != "" {
		next.Scopes = strings.Fields(tr.Scope)
	}
	next.Expiry = ts.Expiry
	if err := m.seal(&next, ts); err != nil {
		return ts, c, err
	}
	ok, err := m.opts.Store.UpdateConnection(ctx, next, c.Version)
	if err != nil {
		return ts, c, err
	}
	if !ok {
		// Another replica refreshed (and so spent the same refresh
		// token) first: its tokens are the ones to use.
		c, err = m.opts.Store.ConnectionByID(ctx, c.ID)
		if err != nil {
			return ts, c, err
		}
		if c.Broken != "" {
			return ts, c, m.needsConnect(u, c.ActorID, c.Broken)
		}
		ts, err = m.open(ctx, c)
		return ts, c, err
	}
	next.Version = c.Version + 1
	return ts, next, nil
}

// Refused is told that the upstream answered HTTP 401 to the token of
// connection connID (revoked, or expired early): the token is refreshed
// now, and a connection that cannot be refreshed is marked broken, the
// error then being a *NeedsConnect (UI-1, UI-2).
func (m *Manager) Refused(ctx context.Context, upstream, actor, connID string) error {
	u, ok := m.ups[upstream]
	if !ok {
		return fmt.Errorf("%q: %w", upstream, ErrUnknownUpstream)
	}
	if u.TokenExchange {
		// Exchanged again from the call's own token, or the call fails.
		m.forgetExchange(u, actor, connID)
		_, _, err := m.exchangeToken(ctx, u, actor)
		return err
	}
	c, err := m.opts.Store.ConnectionByID(ctx, connID)
	if errors.Is(err, core.ErrNoConnection) {
		return m.needsConnect(u, actor, "the connection was revoked")
	}
	if err != nil {
		return err
	}
	_, _, err = m.refresh(ctx, u, c, true)
	return err
}

func (m *Manager) markBroken(ctx context.Context, u Upstream, c core.Connection, reason string) error {
	next := c
	next.Broken = reason
	if _, err := m.opts.Store.UpdateConnection(ctx, next, c.Version); err != nil {
		return err
	}
	m.publish(next, "broken")
	m.opts.Logger.Info("upstream connection broken", "upstream", u.Name, "actor", core.ActorLabel(c.ActorID), "connection", c.ID, "reason", reason)
	return m.needsConnect(u, c.ActorID, reason)
}

// Connections lists every connection (UI-3), without its tokens.
func (m *Manager) Connections(ctx context.Context) ([]core.Connection, error) {
	cs, err := m.opts.Store.Connections(ctx)
	for i := range cs {
		cs[i].Sealed = nil
	}
	return cs, err
}

// Revoke forgets a connection (UI-3) and asks its authorization server to
// revoke its refresh token where it offers revocation (RFC 7009). The
// actor's next call gets a connect URL. by is who revoked it: "disconnected"
// for the actor, "revoked" for an operator.
func (m *Manager) Revoke(ctx context.Context, id, change string) (core.Connection, error) {
	c, err := m.opts.Store.ConnectionByID(ctx, id)
	if err != nil {
		return c, err
	}
	if ok, err := m.opts.Store.DeleteConnection(ctx, id); err != nil {
		return c, err
	} else if !ok {
		return c, fmt.Errorf("%q: %w", id, core.ErrNoConnection)
	}
	if u, ok := m.ups[c.Upstream]; ok {
		if ts, err := m.open(ctx, c); err == nil {
			m.revokeAtServer(ctx, u, ts)
		}
	}
	c.Sealed = nil
	m.publish(c, change)
	return c, nil
}

// Disconnect forgets an actor's own connection to an upstream (UI-2).
func (m *Manager) Disconnect(ctx context.Context, upstream, actor string) (core.Connection, error) {
	c, err := m.opts.Store.ConnectionFor(ctx, upstream, actor)
	if err != nil {
		return c, err
	}
	return m.Revoke(ctx, c.ID, "disconnected")
}

// revokeAtServer is best effort: the connection is gone from the store
// whatever the server answers.
func (m *Manager) revokeAtServer(ctx context.Context, u Upstream, ts tokenSet) {
	md, err := m.discover(ctx, u)
	if err != nil || md.Server.RevocationEndpoint == "" || ts.RefreshToken == "" {
		return
	}
	id := m.identityFor(u, ts)
	if err := m.post(ctx, md.Server.RevocationEndpoint, id, map[string][]string{"token": {ts.RefreshToken}, "token_type_hint": {"refresh_token"}}, nil); err != nil {
		m.opts.Logger.Info("revoking at the authorization server failed; the connection is forgotten all the same", "upstream", u.Name, "err", err)
	}
}
