package gateway

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/auth/upstreamoauth"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp"
)

// oauthState is the gateway's part in upstream OAuth (UI-1, UI-2, UI-3):
// the manager of connections and the upstreams it gives tokens to.
type oauthState struct {
	m   *upstreamoauth.Manager
	ups map[string]*mcp.OAuthUpstream
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
		if u.OAuth.TokenExchange {
			return nil, fmt.Errorf("upstream %q: oauth.tokenExchange is not supported by this build", u.Name)
		}
		ups = append(ups, upstreamoauth.Upstream{Name: u.Name, URL: u.URL, Credentials: u.OAuth.Credentials,
			ClientID: u.OAuth.ClientID, ClientSecret: u.OAuth.ClientSecret.Reveal(), Scopes: u.OAuth.Scopes})
	}
	o := &oauthState{ups: map[string]*mcp.OAuthUpstream{}}
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

// oauthUpstreamOf builds an OAuth upstream over the network upstream's
// options.
func (g *Gateway) oauthUpstreamOf(u config.Upstream, hub *mcp.Hub) (core.Upstream, error) {
	m, err := g.oauthManager()
	if err != nil {
		return nil, err
	}
	base, err := upstreamOptions(u, hub)
	if err != nil {
		return nil, err
	}
	up, err := mcp.NewOAuthUpstream(mcp.OAuthUpstreamOptions{Upstream: base, PerActor: u.OAuth.Credentials == config.CredentialsPerActor, Tokens: m})
	if err != nil {
		return nil, err
	}
	g.oauth.ups[u.Name] = up
	return up, nil
}

// mountUpstreamOAuth serves the connection routes (UI-2): connect,
// callback and the client metadata document as they are; disconnect
// authenticated like the endpoint its endpoint parameter names (the first
// endpoint by default).
func (g *Gateway) mountUpstreamOAuth(mux *http.ServeMux, auths map[string]auth.EndpointAuth, first string) {
	if g.oauth == nil {
		return
	}
	h := g.oauth.m.Handler()
	authed := map[string]http.Handler{}
	for path, a := range auths {
		authed[path] = auth.Middleware(a)(h)
	}
	mux.Handle(upstreamoauth.Path+"/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/disconnect") {
			h.ServeHTTP(w, r)
			return
		}
		ep := r.URL.Query().Get("endpoint")
		if ep == "" {
			ep = first
		}
		a, ok := authed[ep]
		if !ok {
			http.Error(w, fmt.Sprintf("no endpoint %q", ep), http.StatusNotFound)
			return
		}
		a.ServeHTTP(w, r)
	}))
}

// closeOAuth lets go of the manager's idle connections.
func (g *Gateway) closeOAuth() {
	if g.oauth != nil {
		g.oauth.m.Close()
	}
}
