package upstreamoauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// Token exchange (RFC 8693): for an upstream with TokenExchange, the
// actor's incoming token — verified by the endpoint's OAuth strategy — is
// traded at the upstream's authorization server for a token whose audience
// is the upstream. There is no browser step and nothing is stored: the
// exchanged tokens are cached in this process's memory only, per actor,
// until RefreshBefore ahead of their expiry. The incoming token is sent to
// the token endpoint alone, and only when that server is the issuer that
// signed it; it never goes upstream.

// The grant and token type of RFC 8693.
const (
	GrantTokenExchange    = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeAccessToken  = "urn:ietf:params:oauth:token-type:access_token"
	exchangeTTLWithoutExp = 5 * time.Minute
)

// ExchangeError is why a token exchange could not give an actor a token
// for an upstream: no OAuth token to exchange, another issuer, or the
// authorization server refused or failed. It names no token, and matches
// core.ErrNotConnected so the caller gets it as an isError result.
type ExchangeError struct {
	Upstream string
	Reason   string
}

func (e *ExchangeError) Error() string {
	return fmt.Sprintf("upstream %q acts as you through a token exchange, which failed: %s", e.Upstream, e.Reason)
}

// Unwrap makes an ExchangeError match core.ErrNotConnected.
func (e *ExchangeError) Unwrap() error { return core.ErrNotConnected }

// exchanged is one actor's exchanged token.
type exchanged struct {
	token  string
	id     string // stands for a connection in audit: "xchg_…"
	expiry time.Time
	at     time.Time
}

func exchangeKey(upstream, actor string) string { return upstream + "\x00" + actor }

// exchangeToken returns actor's exchanged token for u: the cached one while
// fresh, else a new exchange of the token in ctx.
func (m *Manager) exchangeToken(ctx context.Context, u Upstream, actor string) (string, string, error) {
	key := exchangeKey(u.Name, actor)
	now := m.opts.Now()
	m.mu.Lock()
	x, ok := m.exchanges[key]
	m.mu.Unlock()
	if ok && now.Add(m.opts.RefreshBefore).Before(x.expiry) {
		return x.token, x.id, nil
	}
	subject, has := auth.SubjectTokenFrom(ctx)
	if !has {
		if ok && now.Before(x.expiry) {
			// Not a call (a catalog listing): the cached token serves until
			// it expires.
			return x.token, x.id, nil
		}
		return "", "", &ExchangeError{Upstream: u.Name, Reason: "this call was not authenticated with an OAuth token of the endpoint (an API key cannot be exchanged); sign in with OAuth to use it"}
	}
	l := m.lockFor("exchange/" + key)
	l.Lock()
	defer l.Unlock()
	m.mu.Lock()
	x, ok = m.exchanges[key]
	m.mu.Unlock()
	if ok && now.Add(m.opts.RefreshBefore).Before(x.expiry) {
		return x.token, x.id, nil // exchanged meanwhile
	}
	fresh, err := m.exchange(ctx, u, subject)
	if err != nil {
		if ok && now.Before(x.expiry) {
			// The token still works: use it, exchange on a later call.
			m.opts.Logger.Warn("exchanging an upstream token failed; the current one is used until it expires", "upstream", u.Name, "actor", core.ActorLabel(actor), "connection", x.id, "err", err)
			return x.token, x.id, nil
		}
		return "", "", err
	}
	x = fresh
	m.mu.Lock()
	for k, old := range m.exchanges {
		if !now.Before(old.expiry) {
			delete(m.exchanges, k)
		}
	}
	m.exchanges[key] = x
	m.mu.Unlock()
	m.opts.Logger.Info("upstream token exchanged", "upstream", u.Name, "actor", core.ActorLabel(actor), "connection", x.id, "expires", x.expiry.UTC().Format(time.RFC3339))
	return x.token, x.id, nil
}

// exchange posts the RFC 8693 grant to the upstream's authorization server.
func (m *Manager) exchange(ctx context.Context, u Upstream, subject auth.SubjectToken) (exchanged, error) {
	fail := func(format string, a ...any) (exchanged, error) {
		return exchanged{}, &ExchangeError{Upstream: u.Name, Reason: fmt.Sprintf(format, a...)}
	}
	md, err := m.discover(ctx, u)
	if err != nil {
		return fail("discovering its authorization server: %v", err)
	}
	if md.Server.Issuer != subject.Issuer {
		// The incoming token goes to no other server than its own issuer.
		return fail("it trusts the authorization server %s, not %s that issued your token, so your token is not sent there", md.Server.Issuer, subject.Issuer)
	}
	if md.Server.TokenEndpoint == "" {
		return fail("its authorization server %s has no token endpoint", md.Server.Issuer)
	}
	ictx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	id, err := m.identity(ictx, u, md)
	if err != nil {
		return fail("%v", err)
	}
	form := url.Values{
		"grant_type":           {GrantTokenExchange},
		"subject_token":        {subject.Token},
		"subject_token_type":   {TokenTypeAccessToken},
		"requested_token_type": {TokenTypeAccessToken},
		"resource":             {md.Resource},
	}
	if len(u.Scopes) > 0 {
		form.Set("scope", strings.Join(u.Scopes, " "))
	}
	tr, err := m.tokenRequest(ictx, md.Server.TokenEndpoint, id, form)
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) {
			return fail("%v", te)
		}
		if ctx.Err() == nil && ictx.Err() != nil {
			return fail("the authorization server %s did not answer within %s", md.Server.Issuer, m.opts.Timeout)
		}
		return fail("%v", err)
	}
	if tr.AccessToken == subject.Token {
		// An exchange that answers the incoming token would send it upstream.
		return fail("the authorization server answered the incoming token itself")
	}
	now := m.opts.Now()
	exp := tr.expiry(now)
	if exp.IsZero() {
		exp = now.Add(exchangeTTLWithoutExp)
	}
	return exchanged{token: tr.AccessToken, id: "xchg_" + newID()[:20], expiry: exp, at: now}, nil
}

// forgetExchange drops actor's exchanged token when it is the one of id
// (the upstream refused it); the next call exchanges again.
func (m *Manager) forgetExchange(u Upstream, actor, id string) {
	key := exchangeKey(u.Name, actor)
	m.mu.Lock()
	defer m.mu.Unlock()
	if x, ok := m.exchanges[key]; ok && x.id == id {
		delete(m.exchanges, key)
	}
}

// exchangeCatalogActor is the actor whose exchanged token lists the
// catalog: the one whose token lasts longest.
func (m *Manager) exchangeCatalogActor(upstream string) (string, bool) {
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var best string
	var bestExp time.Time
	for k, x := range m.exchanges {
		up, actor, _ := strings.Cut(k, "\x00")
		if up == upstream && now.Before(x.expiry) && x.expiry.After(bestExp) {
			best, bestExp = actor, x.expiry
		}
	}
	return best, best != ""
}
