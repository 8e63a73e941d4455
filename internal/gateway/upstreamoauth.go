package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/auth/upstreamoauth"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// oauthState is the gateway's part in upstream OAuth (UI-1, UI-2, UI-3):
// the manager of connections and the upstreams it gives tokens to.
type oauthState struct {
	m   *upstreamoauth.Manager
	ups map[string]*upstream.OAuthUpstream
}

// UpstreamOAuth is the manager of upstream connections; nil when no
// upstream has oauth.
func (g *Gateway) UpstreamOAuth() *upstreamoauth.Manager {
	if g.oauth == nil {
		return nil
	}
	return g.oauth.m
}

// oauthManager makes the manager on first need, over the gateway's store.
func (g *Gateway) oauthManager() (*upstreamoauth.Manager, error) {
	if g.oauth != nil {
		return g.oauth.m, nil
	}
	if g.handler != nil {
		// Past the start: the connection routes are not mounted.
		return nil, errors.New("the first oauth upstream needs a restart to be added")
	}
	cfg := g.cfg
	key, err := config.DecodeCredentialsKey(cfg.Gateway.CredentialsKey)
	if err != nil {
		return nil, fmt.Errorf("gateway.credentialsKey: %w", err)
	}
	var prev []byte
	if cfg.Gateway.CredentialsKeyPrevious != "" {
		if prev, err = config.DecodeCredentialsKey(cfg.Gateway.CredentialsKeyPrevious); err != nil {
			return nil, fmt.Errorf("gateway.credentialsKeyPrevious: %w", err)
		}
	}
	st, ok := g.store.(upstreamoauth.Store)
	if !ok {
		return nil, fmt.Errorf("the store (%T) cannot keep upstream connections", g.store)
	}
	var ups []upstreamoauth.Upstream
	for _, u := range cfg.OAuthUpstreams() {
		ou, err := oauthUpstreamConfig(u)
		if err != nil {
			return nil, err
		}
		ups = append(ups, ou)
	}
	o := &oauthState{ups: map[string]*upstream.OAuthUpstream{}}
	m, err := upstreamoauth.New(upstreamoauth.Options{
		PublicURL: cfg.Gateway.PublicURL, Key: key, Previous: prev, Store: st, Logger: g.log,
		Publish: func(e core.EventData) {
			if g.reg != nil {
				g.reg.Bus().Publish(e)
			}
			if cc, ok := e.(core.ConnectionChanged); ok {
				if u := o.ups[cc.Connection.Upstream]; u != nil {
					u.ConnectionChanged(cc.Connection.ActorID, cc.Change)
				}
			}
		},
	}, ups)
	if err != nil {
		return nil, err
	}
	o.m = m
	g.oauth = o
	return m, nil
}

// oauthUpstreamConfig is what the manager knows of an oauth upstream,
// its client key read from its file.
func oauthUpstreamConfig(u config.Upstream) (upstreamoauth.Upstream, error) {
	ou := upstreamoauth.Upstream{Name: u.Name, URL: u.URL, Credentials: u.OAuth.Credentials,
		ClientID: u.OAuth.ClientID, ClientSecret: u.OAuth.ClientSecret.Reveal(), Scopes: u.OAuth.Scopes,
		TokenExchange: u.OAuth.TokenExchange}
	if f := u.OAuth.ClientKeyFile; f != "" {
		data, _, err := config.ReadClientKey(f)
		if err != nil {
			return ou, fmt.Errorf("upstream %q: oauth.clientKeyFile %w", u.Name, err)
		}
		if ou.ClientKey, err = upstreamoauth.NewClientKey(data, u.OAuth.ClientKeyID); err != nil {
			return ou, fmt.Errorf("upstream %q: oauth.clientKeyFile %s: %w", u.Name, f, err)
		}
		if ou.ClientKey, err = ou.ClientKey.WithAudience(u.OAuth.ClientAssertionAudience); err != nil {
			return ou, fmt.Errorf("upstream %q: oauth.clientAssertionAudience: %w", u.Name, err)
		}
	}
	return ou, nil
}

// sameOAuthUpstream: a and b are the same settings, keys compared by
// their content.
func sameOAuthUpstream(a, b upstreamoauth.Upstream) bool {
	if !a.ClientKey.Equal(b.ClientKey) {
		return false
	}
	a.ClientKey, b.ClientKey = nil, nil
	return reflect.DeepEqual(a, b)
}

// oauthUpstreamOf builds an OAuth upstream over the network upstream's
// options.
func (g *Gateway) oauthUpstreamOf(u config.Upstream, hub *serve.Hub) (core.Upstream, error) {
	m, err := g.oauthManager()
	if err != nil {
		return nil, err
	}
	// The manager is made once, at start: a reload cannot add an oauth
	// upstream or change its oauth settings.
	have, ok := m.Upstream(u.Name)
	want, err := oauthUpstreamConfig(u)
	if err != nil {
		return nil, err
	}
	if !ok || !sameOAuthUpstream(have, want) {
		return nil, fmt.Errorf("upstream %q: its url or oauth settings changed, which needs a restart", u.Name)
	}
	base, err := upstreamOptions(u, hub)
	if err != nil {
		return nil, err
	}
	up, err := upstream.NewOAuthUpstream(upstream.OAuthUpstreamOptions{Upstream: base, PerActor: u.OAuth.Credentials == config.CredentialsPerActor,
		Exchange: u.OAuth.TokenExchange, Tokens: m, Logger: g.log})
	if err != nil {
		return nil, err
	}
	g.oauth.ups[u.Name] = up
	return up, nil
}

// mountUpstreamOAuth serves the connection routes (UI-2): connect,
// callback and the client metadata document as they are; disconnect
// authenticated like the endpoint its endpoint parameter names (the first
// endpoint by default), with that endpoint's authentication in force now:
// a reload that removes a key or changes the issuer applies to it too.
// Disconnect revokes, so like /mcp it refuses a loopback listener reached
// by another name (DNS rebinding), and it refuses a browser's cross-origin
// request (a form posted from another site) and an open endpoint, whose
// actor nobody authenticates.
func (g *Gateway) mountUpstreamOAuth(mux *http.ServeMux, first string) {
	if g.oauth == nil {
		return
	}
	h := g.oauth.m.Handler()
	disconnect := serve.RejectRebinding(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if http.NewCrossOriginProtection().Check(r) != nil {
			http.Error(w, "Forbidden: disconnecting is refused from another site's page (cross-origin request)", http.StatusForbidden)
			return
		}
		ep := r.URL.Query().Get("endpoint")
		if ep == "" {
			ep = first
		}
		sw, ok := g.switches[ep] // fixed from the start; a reload swaps what each holds
		if !ok {
			http.Error(w, fmt.Sprintf("no endpoint %q", ep), http.StatusNotFound)
			return
		}
		epAuth := sw.state.Load().auth
		if epAuth.Strategy == nil {
			http.Error(w, fmt.Sprintf("Forbidden: endpoint %q is open (no credentials), so nobody can be authenticated to disconnect; an operator revokes the connection (`toolgate connections revoke ID` or the console)", ep), http.StatusForbidden)
			return
		}
		auth.Middleware(epAuth)(h).ServeHTTP(w, r)
	}))
	mux.Handle(upstreamoauth.Path+"/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/disconnect") {
			h.ServeHTTP(w, r)
			return
		}
		disconnect.ServeHTTP(w, r)
	}))
}

// endConnectWaits ends the calls waiting for their actor to connect, once
// no reload can swap the upstreams.
func (g *Gateway) endConnectWaits() {
	if g.oauth == nil {
		return
	}
	n := 0
	for _, u := range g.oauth.ups {
		n += u.Shutdown()
	}
	if n > 0 {
		g.log.Info("calls waiting for an upstream connection answered: the gateway is shutting down", "count", n)
	}
}

// closeOAuth lets go of the manager's idle connections.
func (g *Gateway) closeOAuth() {
	if g.oauth != nil {
		g.oauth.m.Close()
	}
}

var _ admin.Connections = adminBackend{}

func (b adminBackend) oauthManager() (*upstreamoauth.Manager, error) {
	if m := b.g.UpstreamOAuth(); m != nil {
		return m, nil
	}
	return nil, admin.ErrNoOAuth
}

// Connections implements admin.Connections (UI-3).
func (b adminBackend) Connections(ctx context.Context) ([]core.Connection, error) {
	m, err := b.oauthManager()
	if err != nil {
		return nil, err
	}
	return m.Connections(ctx)
}

// RevokeConnection implements admin.Connections through the operator's
// console, so a revoke is audited alike from the CLI and the console
// (UI-3).
func (b adminBackend) RevokeConnection(ctx context.Context, id, operator string) (core.Connection, error) {
	if _, err := b.oauthManager(); err != nil {
		return core.Connection{}, err
	}
	return b.g.ConsoleAs(operator).RevokeConnection(ctx, id, operator)
}

// SharedConnectURL implements admin.Connections: a connect URL for a shared
// upstream's account (UI-2).
func (b adminBackend) SharedConnectURL(ctx context.Context, upstream, operator string) (string, error) {
	m, err := b.oauthManager()
	if err != nil {
		return "", err
	}
	u, ok := m.Upstream(upstream)
	switch {
	case !ok:
		return "", fmt.Errorf("%q has no oauth: %w", upstream, core.ErrUnknownUpstream)
	case u.Credentials != upstreamoauth.Shared:
		return "", &admin.Error{Status: http.StatusConflict, Code: admin.CodeBadRequest, Message: fmt.Sprintf("upstream %q is perActor: each actor connects through their own link", upstream)}
	}
	(&accountedConsole{g: b.g, operator: operator}).account(ctx, admin.RouteConnectShared, operator, upstream, "", time.Now(), nil)
	return m.ConnectURL(upstream, core.SharedActor), nil
}

// RekeyConnections implements admin.Connections: every connection sealed
// with gateway.credentialsKeyPrevious is re-sealed with credentialsKey
// (UI-3).
func (b adminBackend) RekeyConnections(ctx context.Context, operator string) (admin.RekeyResult, error) {
	m, err := b.oauthManager()
	if err != nil {
		return admin.RekeyResult{}, err
	}
	start := time.Now()
	r, err := m.Keyring().Rekey(ctx, b.g.oauthStore())
	detail := fmt.Sprintf("%d re-sealed, %d current, %d unsealable", r.Resealed, r.Current, len(r.Unsealable))
	(&accountedConsole{g: b.g, operator: operator}).account(ctx, admin.RouteRekeyConnections, operator, "", detail, start, err)
	return admin.RekeyResult{Resealed: r.Resealed, Current: r.Current, Unsealable: r.Unsealable}, err
}

func (g *Gateway) oauthStore() core.ConnectionStore {
	cs, _ := g.store.(core.ConnectionStore)
	return cs
}
