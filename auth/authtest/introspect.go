package authtest

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Introspector is an RFC 7662 token introspection endpoint on 127.0.0.1.
// Tokens are active once Activate names them, until Revoke; any other token
// is inactive. Requests must authenticate with ClientID and ClientSecret
// (HTTP Basic). Its methods are safe for concurrent use.
type Introspector struct {
	ClientID, ClientSecret string

	srv       *httptest.Server
	hits      atomic.Int64
	bodyLimit atomic.Int64

	mu     sync.Mutex
	active map[string]map[string]any
}

// NewIntrospector starts an introspection endpoint; it stops when the test
// ends.
func NewIntrospector(tb testing.TB, clientID, clientSecret string) *Introspector {
	tb.Helper()
	in := &Introspector{ClientID: clientID, ClientSecret: clientSecret, active: map[string]map[string]any{}}
	in.srv = httptest.NewServer(http.HandlerFunc(in.serve))
	tb.Cleanup(in.srv.Close)
	return in
}

// URL is the endpoint's address.
func (in *Introspector) URL() string { return in.srv.URL }

// Hits counts introspection requests so far, refused ones included.
func (in *Introspector) Hits() int { return int(in.hits.Load()) }

// LimitBody makes the endpoint refuse request bodies over n bytes with 400
// invalid_request, as providers with a form size limit do; 0 lifts it.
func (in *Introspector) LimitBody(n int64) { in.bodyLimit.Store(n) }

// Activate makes token active; the response carries claims besides
// "active": true.
func (in *Introspector) Activate(token string, claims map[string]any) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.active[token] = maps.Clone(claims)
}

// Revoke makes token inactive.
func (in *Introspector) Revoke(token string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.active, token)
}

func (in *Introspector) serve(w http.ResponseWriter, r *http.Request) {
	in.hits.Add(1)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	id, secret, ok := r.BasicAuth()
	// RFC 6749 §2.3.1: Basic credentials are form-encoded first.
	id, errID := url.QueryUnescape(id)
	secret, errSecret := url.QueryUnescape(secret)
	if !ok || errID != nil || errSecret != nil || id != in.ClientID || secret != in.ClientSecret {
		w.Header().Set("WWW-Authenticate", `Basic realm="introspection"`)
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	if n := in.bodyLimit.Load(); n > 0 {
		r.Body = http.MaxBytesReader(w, r.Body, n)
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	in.mu.Lock()
	claims, ok := in.active[r.PostForm.Get("token")]
	resp := map[string]any{"active": ok}
	if ok {
		maps.Copy(resp, claims)
		resp["active"] = true
	}
	in.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// Close stops the endpoint before the test ends, to simulate an outage.
func (in *Introspector) Close() { in.srv.Close() }
