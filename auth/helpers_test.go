package auth_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// gateway is an httptest server on loopback with one Middleware-wrapped
// endpoint per path, each answering 200 with the actor as JSON, plus the
// metadata document where the strategy exposes one.
type gateway struct {
	*httptest.Server
}

func newGateway(t *testing.T, eps ...auth.EndpointAuth) *gateway {
	t.Helper()
	mux := http.NewServeMux()
	for _, ep := range eps {
		mux.Handle(ep.Path, auth.Middleware(ep)(http.HandlerFunc(echoActor)))
		if h := auth.MetadataHandler(ep); h != nil {
			mux.Handle(auth.MetadataPath(ep.Path), h)
		}
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &gateway{srv}
}

func echoActor(w http.ResponseWriter, r *http.Request) {
	a, ok := auth.ActorFrom(r.Context())
	if !ok {
		http.Error(w, "no actor", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a)
}

// answer is what a client saw.
type answer struct {
	status    int
	challenge string
	header    http.Header
	body      string
	actor     core.Actor
}

// call sends GET path with the token as a bearer token ("" sends none).
func (g *gateway) call(t *testing.T, path, token string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, g.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return g.do(t, req)
}

func (g *gateway) do(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := g.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate"), header: resp.Header, body: string(body)}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &a.actor); err != nil {
			t.Fatalf("actor body %q: %v", body, err)
		}
	}
	return a
}

// challengeFor is the exact WWW-Authenticate header expected from path on g
// when the strategy exposes OAuth metadata; extra is appended after the
// resource_metadata parameter.
func (g *gateway) challengeFor(path, extra string) string {
	h := `Bearer resource_metadata="` + g.URL + auth.MetadataPath(path) + `"`
	if extra != "" {
		h += ", " + extra
	}
	return h
}

const invalidTokenParam = `error="invalid_token"`

// expect checks status and the exact challenge, and that refusals have a
// JSON body with an error field.
func expect(t *testing.T, got answer, status int, challenge string) {
	t.Helper()
	if got.status != status {
		t.Errorf("status = %d, want %d (body %s)", got.status, status, got.body)
	}
	if got.challenge != challenge {
		t.Errorf("WWW-Authenticate = %q, want %q", got.challenge, challenge)
	}
	if status != http.StatusOK {
		var body struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if err := json.Unmarshal([]byte(got.body), &body); err != nil || body.Error == "" {
			t.Errorf("refusal body %q is not {error, error_description}: %v", got.body, err)
		}
	}
}

// strategyFunc adapts a function to auth.Strategy.
type strategyFunc func(r *http.Request, token string) (core.Actor, error)

func (f strategyFunc) Authenticate(r *http.Request, token string) (core.Actor, error) {
	return f(r, token)
}

// mustOAuth builds the OAuth strategy for the test's lifetime.
func mustOAuth(t *testing.T, cfg auth.OAuthConfig) auth.Strategy {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := auth.OAuth(ctx, cfg)
	if err != nil {
		t.Fatalf("OAuth: %v", err)
	}
	return s
}

// because checks that the refusal's error_description mentions why.
func because(t *testing.T, got answer, why string) {
	t.Helper()
	var body struct {
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal([]byte(got.body), &body)
	if !strings.Contains(body.Description, why) {
		t.Errorf("error_description = %q, want it to mention %q", body.Description, why)
	}
}
