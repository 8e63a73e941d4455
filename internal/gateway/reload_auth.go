package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/mcp/serve"
)

// RevokedText is what a session opened with credentials a reload no longer
// accepts reads on its next request (OP-8); the session has ended by then.
const RevokedText = "the credentials this session was opened with are no longer accepted " +
	"(the gateway's configuration changed); the session has ended: initialize a new session with valid credentials"

// endpointSwitch serves one endpoint behind the authentication in force,
// which a reload replaces without touching the endpoint or its sessions
// (OP-8). Its metadata document follows the same switch.
type endpointSwitch struct {
	path  string
	ep    *serve.Endpoint
	g     *Gateway
	state atomic.Pointer[authState]
}

// authState is one generation of an endpoint's authentication.
type authState struct {
	gen     uint64
	handler http.Handler // the auth middleware in front of the endpoint
	meta    http.Handler // nil: no OAuth metadata
	// end stops what the generation's strategies run in the background
	// (the OAuth key-set refresh); nil for the one New built.
	end context.CancelFunc
	// auth is the generation's authentication, for the routes that
	// authenticate like the endpoint (upstream disconnect, UI-2).
	auth auth.EndpointAuth
}

// mountEndpoint serves ep at its path behind epAuth, and its RFC 9728
// metadata when a strategy has any, both through one switch.
func (g *Gateway) mountEndpoint(mux *http.ServeMux, ep *serve.Endpoint, epAuth auth.EndpointAuth) {
	s := &endpointSwitch{path: epAuth.Path, ep: ep, g: g}
	s.set(epAuth, nil)
	if g.switches == nil {
		g.switches = map[string]*endpointSwitch{}
	}
	g.switches[s.path] = s
	mux.Handle(s.path, g.traced(s.path, serve.RejectRebinding(s)))
	mux.HandleFunc(auth.MetadataPath(s.path), s.metadata)
}

// set puts epAuth in force and ends the previous generation. Sessions
// opened before it may be told that their credentials are gone.
func (s *endpointSwitch) set(epAuth auth.EndpointAuth, end context.CancelFunc) {
	var gen uint64
	prev := s.state.Load()
	if prev != nil {
		gen = prev.gen + 1
	}
	plain := epAuth
	epAuth.Revoked = s.revoked
	st := &authState{gen: gen, handler: authStarts(auth.Middleware(epAuth)(authPassed(s.ep))), meta: auth.MetadataHandler(epAuth), end: end, auth: plain}
	s.state.Store(st)
	if prev != nil && prev.end != nil {
		prev.end()
	}
}

func (s *endpointSwitch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := s.state.Load()
	// Hashed only if the request opens a session (credentials.started):
	// calls pay for no HMAC.
	ctx := context.WithValue(r.Context(), credKey{}, presented{header: r.Header, gen: st.gen, path: s.path})
	st.handler.ServeHTTP(w, r.WithContext(ctx))
}

func (s *endpointSwitch) metadata(w http.ResponseWriter, r *http.Request) {
	if m := s.state.Load().meta; m != nil {
		m.ServeHTTP(w, r)
		return
	}
	http.NotFound(w, r)
}

// revoked is the auth middleware's Revoked: a request refused for its
// credentials, on a session opened under an earlier generation with the
// very same credentials, is that session's credentials having been removed
// by a reload. The session ends, and the refusal says why. A refusal of
// other credentials on the session (someone else's, or a typo) ends
// nothing, nor does one before any reload changed this endpoint.
func (s *endpointSwitch) revoked(r *http.Request, _ string) string {
	id := r.Header.Get(sessionHeader)
	if id == "" {
		return ""
	}
	c, ok := s.g.creds.get(id)
	fp := s.g.creds.fingerprint(r.Header)
	if !ok || c.path != s.path || c.gen >= s.state.Load().gen || !hmac.Equal(c.fp[:], fp[:]) {
		return ""
	}
	s.g.creds.forget(id)
	if err := s.ep.EndSession(id); err == nil {
		s.g.log.Info("session ended: its credentials are no longer accepted after a config reload", "endpoint", s.path, "session", id)
	}
	return RevokedText
}

// sessionHeader carries the MCP session id (Streamable HTTP).
const sessionHeader = "Mcp-Session-Id"

type credKey struct{}

// presented is what a request came with, until a session is opened with it.
type presented struct {
	header http.Header
	gen    uint64
	path   string
}

// credential is what a session was opened with: a keyed hash of its
// Authorization header (never the header itself), the generation of the
// endpoint's authentication, and the endpoint.
type credential struct {
	fp   [sha256.Size]byte
	gen  uint64
	path string
}

// credentials remembers each live session's credential, so a reload that
// removes it can tell that session rather than refuse it without a word.
// Entries go when their sessions end.
type credentials struct {
	key [32]byte // keys the hashes, so they reveal nothing outside the process

	mu        sync.Mutex
	bySession map[string]credential
}

func newCredentials() *credentials {
	c := &credentials{bySession: map[string]credential{}}
	_, _ = rand.Read(c.key[:])
	return c
}

func (c *credentials) fingerprint(h http.Header) [sha256.Size]byte {
	m := hmac.New(sha256.New, c.key[:])
	m.Write([]byte(strings.TrimSpace(h.Get("Authorization"))))
	var out [sha256.Size]byte
	copy(out[:], m.Sum(nil))
	return out
}

// started is the endpoints' SessionStarted: ctx is the initialize's.
func (c *credentials) started(ctx context.Context, id string) {
	p, ok := ctx.Value(credKey{}).(presented)
	if !ok {
		return
	}
	cred := credential{fp: c.fingerprint(p.header), gen: p.gen, path: p.path}
	c.mu.Lock()
	c.bySession[id] = cred
	c.mu.Unlock()
}

func (c *credentials) get(id string) (credential, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cred, ok := c.bySession[id]
	return cred, ok
}

// forget is the endpoints' SessionEnded.
func (c *credentials) forget(id string) {
	c.mu.Lock()
	delete(c.bySession, id)
	c.mu.Unlock()
}
