package upstreamoauth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/toolgate/toolgate/core"
)

// derive makes a purpose-bound key from the credentials key, so the key that
// seals tokens never also signs URLs.
func derive(key []byte, purpose string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("toolgate upstream-oauth " + purpose))
	return h.Sum(nil)
}

// sealer encrypts the flow state carried through the browser.
type sealer struct{ g cipher.AEAD }

func newSealer(key []byte) *sealer {
	b, _ := aes.NewCipher(key) // 32 bytes from derive
	g, _ := cipher.NewGCM(b)
	return &sealer{g: g}
}

func (s *sealer) seal(v any) string {
	p, _ := json.Marshal(v)
	nonce := make([]byte, s.g.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.g.Seal(nonce, nonce, p, []byte("flow-state")))
}

func (s *sealer) open(text string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(b) < s.g.NonceSize()+s.g.Overhead() {
		return errBadState
	}
	p, err := s.g.Open(nil, b[:s.g.NonceSize()], b[s.g.NonceSize():], []byte("flow-state"))
	if err != nil {
		return errBadState
	}
	if json.Unmarshal(p, v) != nil {
		return errBadState
	}
	return nil
}

var errBadState = errors.New("the state is not one this gateway issued (altered, or from another gateway)")

// connectClaim is what a connect URL binds: one actor, one upstream, until
// Expires, usable once (ID).
type connectClaim struct {
	Upstream string `json:"u"`
	Actor    string `json:"a"`
	ID       string `json:"id"`
	Expires  int64  `json:"exp"`
}

// ConnectURL mints a short-lived, single-use connect URL bound to actor and
// upstream (UI-2). It is protected by an HMAC under a key derived from the
// credentials key: it cannot be forged or moved to another actor.
func (m *Manager) ConnectURL(upstream, actor string) string {
	u, _ := m.connectURL(upstream, actor)
	return u
}

func (m *Manager) connectURL(upstream, actor string) (string, time.Time) {
	exp := m.opts.Now().Add(m.opts.ConnectTTL)
	c := connectClaim{Upstream: upstream, Actor: actor, ID: newID(), Expires: exp.Unix()}
	p, _ := json.Marshal(c)
	body := base64.RawURLEncoding.EncodeToString(p)
	return m.opts.PublicURL + Path + "/connect?t=" + body + "." + m.mac(body), time.Unix(c.Expires, 0)
}

func (m *Manager) mac(body string) string {
	h := hmac.New(sha256.New, m.connectK)
	h.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Refusals of the connect and callback routes: each names what was wrong,
// never a token.
var (
	ErrConnectLink    = errors.New("this connect link is not valid: it was altered or made by another gateway")
	ErrConnectExpired = errors.New("this connect link has expired: call the tool again for a new one")
	ErrConnectUsed    = errors.New("this connect link was already used: call the tool again for a new one")
	ErrStateUsed      = errors.New("this sign-in was already completed or abandoned (its state was used before): start again from a new connect link")
	ErrStateExpired   = errors.New("this sign-in took too long: start again from a new connect link")
	ErrOtherBrowser   = errors.New("this sign-in was not started in this browser, or was started for another person: open your own connect link")
	ErrIssuerMismatch = errors.New("the authorization response came from another issuer than the one the sign-in was sent to (RFC 9207): refused")
	ErrIssuerMissing  = errors.New("the authorization response carries no iss, though the server says it sends one (RFC 9207): refused")
)

func (m *Manager) checkConnect(t string) (connectClaim, error) {
	var c connectClaim
	body, sig, ok := strings.Cut(t, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(m.mac(body))) {
		return c, ErrConnectLink
	}
	p, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || json.Unmarshal(p, &c) != nil {
		return c, ErrConnectLink
	}
	if _, ok := m.ups[c.Upstream]; !ok {
		return c, fmt.Errorf("%w (no oauth upstream %q)", ErrConnectLink, c.Upstream)
	}
	if !m.opts.Now().Before(time.Unix(c.Expires, 0)) {
		return c, ErrConnectExpired
	}
	return c, nil
}

// flowState travels through the browser sealed; the cookie holds Flow, so a
// state is only accepted by the browser that started its flow.
type flowState struct {
	Flow         string `json:"f"`
	Upstream     string `json:"u"`
	Actor        string `json:"a"`
	Verifier     string `json:"v"`
	Issuer       string `json:"i"`
	IssInResp    bool   `json:"ir,omitempty"`
	ClientID     string `json:"c"`
	ClientSecret string `json:"cs,omitempty"`
	Expires      int64  `json:"exp"`
}

const flowCookie = "toolgate_upstream_flow"

// clientIdentity is how the gateway identifies itself to one server.
type clientIdentity struct {
	ID, Secret string
	// key signs private_key_jwt assertions for audience, the server's
	// issuer; nil: a secret or a public client.
	key      *ClientKey
	audience string
}

func (m *Manager) identityFor(u Upstream, ts tokenSet) clientIdentity {
	if u.ClientID != "" {
		return preRegistered(u, ts.Issuer)
	}
	return clientIdentity{ID: ts.ClientID, Secret: ts.ClientSecret}
}

// preRegistered is the configured client of u at the server issuer.
func preRegistered(u Upstream, issuer string) clientIdentity {
	return clientIdentity{ID: u.ClientID, Secret: u.ClientSecret, key: u.ClientKey, audience: issuer}
}

// discover returns the upstream's metadata, discovered once per process.
func (m *Manager) discover(ctx context.Context, u Upstream) (Metadata, error) {
	m.mu.Lock()
	md, ok := m.metadata[u.Name]
	m.mu.Unlock()
	if ok {
		return md, nil
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	md, err := Discover(ctx, m.hc, u.URL)
	if err != nil {
		return md, err
	}
	m.mu.Lock()
	m.metadata[u.Name] = md
	m.mu.Unlock()
	return md, nil
}

// identity picks the client identity in the order of UI-1: pre-registered,
// else a Client ID Metadata Document where the server takes one, else
// dynamic registration (RFC 7591), registered once per server and process.
func (m *Manager) identity(ctx context.Context, u Upstream, md Metadata) (clientIdentity, error) {
	if u.ClientID != "" {
		if u.ClientKey != nil && len(md.Server.TokenEndpointAuthMethodsSupported) > 0 &&
			!slices.Contains(md.Server.TokenEndpointAuthMethodsSupported, "private_key_jwt") {
			return clientIdentity{}, fmt.Errorf("upstream %q: its authorization server %s does not take private_key_jwt (token_endpoint_auth_methods_supported), which upstreams[].oauth.clientKeyFile uses", u.Name, md.Server.Issuer)
		}
		return preRegistered(u, md.Server.Issuer), nil
	}
	if md.Server.ClientIDMetadataDocumentSupported {
		return clientIdentity{ID: m.ClientMetadataURL()}, nil
	}
	if md.Server.RegistrationEndpoint == "" {
		return clientIdentity{}, fmt.Errorf("upstream %q: its authorization server %s takes neither a client metadata document nor registration; configure upstreams[].oauth.clientId", u.Name, md.Server.Issuer)
	}
	m.mu.Lock()
	id, ok := m.registered[md.Server.Issuer]
	m.mu.Unlock()
	if ok {
		return id, nil
	}
	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := m.postJSON(ctx, md.Server.RegistrationEndpoint, m.clientMetadata(false), &reg); err != nil {
		return clientIdentity{}, fmt.Errorf("registering with %s (RFC 7591): %w", md.Server.Issuer, err)
	}
	if reg.ClientID == "" {
		return clientIdentity{}, fmt.Errorf("registering with %s (RFC 7591): the answer has no client_id", md.Server.Issuer)
	}
	id = clientIdentity{ID: reg.ClientID, Secret: reg.ClientSecret}
	m.mu.Lock()
	m.registered[md.Server.Issuer] = id
	m.mu.Unlock()
	return id, nil
}

// clientMetadata is the gateway as an OAuth client: the Client ID Metadata
// Document (withID) and the registration request.
func (m *Manager) clientMetadata(withID bool) map[string]any {
	md := map[string]any{
		"client_name":                "toolgate",
		"client_uri":                 m.opts.PublicURL,
		"redirect_uris":              []string{m.redirectURI()},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
		"application_type":           "web",
	}
	if withID {
		md["client_id"] = m.ClientMetadataURL()
	}
	return md
}

// peek checks a connect link as the page shows it: valid, fresh and not
// yet used, without spending it, so a link previewer that fetches it
// leaves it working (UI-2).
func (m *Manager) peek(ctx context.Context, t string) (connectClaim, error) {
	claim, err := m.checkConnect(t)
	if err != nil {
		return claim, err
	}
	spent, err := m.opts.Store.TokenSpent(ctx, "upstream-oauth/connect/"+claim.ID)
	if err != nil {
		return claim, err
	}
	if spent {
		return claim, ErrConnectUsed
	}
	return claim, nil
}

// ErrCrossSite refuses a connect POST that did not come from the gateway's
// own connect page.
var ErrCrossSite = errors.New("this connect request did not come from the connect page of this gateway (another site sent it): open your connect link again")

// sameSite reports whether a connect POST came from the connect page: the
// browser says so (Sec-Fetch-Site, else Origin), and the form carries the
// nonce of the page's SameSite=Strict cookie, which a form on another site
// can neither read nor have sent along.
//
// The link token alone would not do: whoever holds a link could post it
// from their own site in the victim's browser, skip the page, and where
// the victim's session at the authorization server approves silently, get
// the victim's account connected as the link's actor, the confused deputy
// the page exists to stop.
func sameSite(r *http.Request) bool {
	if http.NewCrossOriginProtection().Check(r) != nil {
		return false
	}
	ck, err := r.Cookie(consentCookie)
	n := r.PostFormValue("n")
	return err == nil && ck.Value != "" && hmac.Equal([]byte(ck.Value), []byte(n))
}

const consentCookie = "toolgate_upstream_consent"

// start runs the connect POST, sent by the connect page's form: check the
// link and that the page sent it, discover, spend the link and send the
// browser to the authorization server.
func (m *Manager) start(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	claim, err := m.checkConnect(r.PostFormValue("t"))
	if err != nil {
		return err
	}
	if !sameSite(r) {
		return ErrCrossSite
	}
	u := m.ups[claim.Upstream]
	md, err := m.discover(r.Context(), u)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), m.opts.Timeout)
	defer cancel()
	id, err := m.identity(ctx, u, md)
	if err != nil {
		return err
	}
	first, err := m.opts.Store.UseToken(r.Context(), "upstream-oauth/connect/"+claim.ID, time.Unix(claim.Expires, 0))
	if err != nil {
		return err
	}
	if !first {
		return ErrConnectUsed
	}
	st := flowState{Flow: newID(), Upstream: u.Name, Actor: claim.Actor, Verifier: oauth2.GenerateVerifier(), Issuer: md.Server.Issuer,
		IssInResp: md.Server.AuthorizationResponseIssParameterSupported, ClientID: id.ID, ClientSecret: id.Secret,
		Expires: m.opts.Now().Add(m.opts.FlowTTL).Unix()}
	scopes := u.Scopes
	if scopes == nil {
		scopes = md.ScopesSupported
	}
	conf := m.oauthConfig(md, id, scopes)
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: st.Flow, Path: Path + "/", MaxAge: int(m.opts.FlowTTL / time.Second),
		HttpOnly: true, Secure: strings.HasPrefix(m.opts.PublicURL, "https:"), SameSite: http.SameSiteLaxMode})
	target := conf.AuthCodeURL(m.stateSeal.seal(st), oauth2.S256ChallengeOption(st.Verifier), oauth2.SetAuthURLParam("resource", md.Resource))
	http.Redirect(w, r, target, http.StatusSeeOther)
	return nil
}

func (m *Manager) oauthConfig(md Metadata, id clientIdentity, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if id.Secret != "" {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{ClientID: id.ID, ClientSecret: id.Secret, RedirectURL: m.redirectURI(), Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: md.Server.AuthorizationEndpoint, TokenURL: md.Server.TokenEndpoint, AuthStyle: style}}
}

// finish runs the callback route: the state must be this gateway's, fresh,
// unused and of this browser's flow, the issuer the one asked (RFC 9207);
// then the code is exchanged with the PKCE verifier and the resource, and
// the connection stored. Nothing is stored on any failure.
func (m *Manager) finish(w http.ResponseWriter, r *http.Request) (core.Connection, error) {
	q := r.URL.Query()
	var st flowState
	if err := m.stateSeal.open(q.Get("state"), &st); err != nil {
		return core.Connection{}, err
	}
	if !m.opts.Now().Before(time.Unix(st.Expires, 0)) {
		return core.Connection{}, ErrStateExpired
	}
	ck, err := r.Cookie(flowCookie)
	if err != nil || !hmac.Equal([]byte(ck.Value), []byte(st.Flow)) {
		return core.Connection{}, ErrOtherBrowser
	}
	u, ok := m.ups[st.Upstream]
	if !ok {
		return core.Connection{}, fmt.Errorf("%q: %w", st.Upstream, ErrUnknownUpstream)
	}
	first, err := m.opts.Store.UseToken(r.Context(), "upstream-oauth/state/"+st.Flow, time.Unix(st.Expires, 0))
	if err != nil {
		return core.Connection{}, err
	}
	if !first {
		return core.Connection{}, ErrStateUsed
	}
	switch iss := q.Get("iss"); {
	case iss != "" && iss != st.Issuer:
		return core.Connection{}, ErrIssuerMismatch
	case iss == "" && st.IssInResp:
		return core.Connection{}, ErrIssuerMissing
	}
	if e := q.Get("error"); e != "" {
		return core.Connection{}, fmt.Errorf("the authorization server refused: %s", printable(e+": "+q.Get("error_description")))
	}
	code := q.Get("code")
	if code == "" {
		return core.Connection{}, errors.New("the authorization response carries no code")
	}
	md, err := m.discover(r.Context(), u)
	if err != nil {
		return core.Connection{}, err
	}
	if md.Server.Issuer != st.Issuer {
		return core.Connection{}, ErrIssuerMismatch
	}
	id := clientIdentity{ID: st.ClientID, Secret: st.ClientSecret}
	if u.ClientID != "" && st.ClientID == u.ClientID {
		id = preRegistered(u, md.Server.Issuer)
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), oauth2.HTTPClient, m.hc), m.opts.Timeout)
	defer cancel()
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(st.Verifier), oauth2.SetAuthURLParam("resource", md.Resource)}
	if id.key != nil {
		a, err := id.key.assertion(id.ID, id.audience, md.Server.TokenEndpoint)
		if err != nil {
			return core.Connection{}, err
		}
		opts = append(opts, oauth2.SetAuthURLParam("client_assertion_type", ClientAssertionType), oauth2.SetAuthURLParam("client_assertion", a))
	}
	tok, err := m.oauthConfig(md, id, nil).Exchange(ctx, code, opts...)
	if err != nil {
		return core.Connection{}, fmt.Errorf("exchanging the code at %s: %w", md.Server.Issuer, tokenErr(err))
	}
	if tok.AccessToken == "" {
		return core.Connection{}, errors.New("the authorization server answered no access token")
	}
	ts := tokenSet{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, TokenType: tok.TokenType, Expiry: tok.Expiry,
		Issuer: md.Server.Issuer, TokenEndpoint: md.Server.TokenEndpoint, Resource: md.Resource}
	if u.ClientID == "" {
		ts.ClientID, ts.ClientSecret = id.ID, id.Secret
	}
	actor := st.Actor
	if u.Credentials == Shared {
		actor = core.SharedActor
	}
	c := core.Connection{ID: "conn_" + newID()[:20], Upstream: u.Name, ActorID: actor, Expiry: ts.Expiry, CreatedAt: m.opts.Now().UTC()}
	if s, ok := tok.Extra("scope").(string); ok {
		c.Scopes = strings.Fields(s)
	}
	if err := m.seal(&c, ts); err != nil {
		return core.Connection{}, err
	}
	if _, err := m.opts.Store.PutConnection(r.Context(), c); err != nil {
		return core.Connection{}, err
	}
	c.Sealed = nil
	m.publish(c, "connected")
	m.opts.Logger.Info("upstream connected", "upstream", u.Name, "actor", core.ActorLabel(actor), "connection", c.ID)
	return c, nil
}

// tokenErr turns x/oauth2's error, which quotes the whole answer body,
// into a TokenError that names only the OAuth error code.
func tokenErr(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return &TokenError{Code: re.ErrorCode, Description: re.ErrorDescription}
		}
		return fmt.Errorf("the token endpoint answered HTTP %d without an OAuth error", re.Response.StatusCode)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, ue.URL, ue.Err)
	}
	return err
}

// printable keeps a server's text to one short printable line.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.TrimSuffix(strings.TrimSpace(s), ":")
}

// TokenError is an OAuth error answer of a token endpoint (RFC 6749 §5.2).
type TokenError struct{ Code, Description string }

func (e *TokenError) Error() string {
	if e.Description == "" {
		return "the authorization server answered " + printable(e.Code)
	}
	return "the authorization server answered " + printable(e.Code) + " (" + printable(e.Description) + ")"
}

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
}

func (t tokenResponse) expiry(now time.Time) time.Time {
	if t.ExpiresIn <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(t.ExpiresIn) * time.Second)
}

// tokenRequest posts a grant to the token endpoint. Refresh is written here
// rather than through x/oauth2's TokenSource because that cannot send the
// resource parameter (RFC 8707) a refresh must repeat.
func (m *Manager) tokenRequest(ctx context.Context, endpoint string, id clientIdentity, form url.Values) (tokenResponse, error) {
	var tr tokenResponse
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	if err := m.post(ctx, endpoint, id, form, &tr); err != nil {
		return tr, err
	}
	if tr.AccessToken == "" {
		return tr, errors.New("the token endpoint answered no access_token")
	}
	return tr, nil
}

// post sends a form with the client's authentication and decodes a JSON
// answer into v (nil: none expected); an OAuth error is a *TokenError.
func (m *Manager) post(ctx context.Context, endpoint string, id clientIdentity, form url.Values, v any) error {
	basic, err := id.authenticate(form, endpoint)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		req.SetBasicAuth(url.QueryEscape(id.ID), url.QueryEscape(id.Secret))
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", endpoint, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var oe struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if decodeJSON(resp, endpoint, &oe) == nil && oe.Error != "" {
			return &TokenError{Code: oe.Error, Description: oe.Description}
		}
		return fmt.Errorf("POST %s answered HTTP %d", endpoint, resp.StatusCode)
	}
	if v == nil {
		return nil
	}
	return decodeJSON(resp, endpoint, v)
}

// postJSON sends a JSON body (client registration) and decodes the answer.
func (m *Manager) postJSON(ctx context.Context, endpoint string, body, v any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := m.hc.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", endpoint, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var oe struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if decodeJSON(resp, endpoint, &oe) == nil && oe.Error != "" {
			return &TokenError{Code: oe.Error, Description: oe.Description}
		}
		return fmt.Errorf("POST %s answered HTTP %d", endpoint, resp.StatusCode)
	}
	return decodeJSON(resp, endpoint, v)
}
