package auth_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// TestOpenMode runs every request as the fixed actor without any check
// (AU-7).
func TestOpenMode(t *testing.T) {
	dev := core.Actor{ID: "dev", Roles: []string{"ADMIN"}}
	ep := auth.EndpointAuth{Path: "/dev", Actor: &dev}
	gw := newGateway(t, ep)
	dev.Roles[0] = "MUTATED" // the middleware keeps its own copy

	for _, token := range []string{"", "anything"} {
		got := gw.call(t, "/dev", token)
		expect(t, got, http.StatusOK, "")
		if d := cmp.Diff(core.Actor{ID: "dev", Roles: []string{"ADMIN"}}, got.actor); d != "" {
			t.Errorf("actor (-want +got):\n%s", d)
		}
	}
	if auth.MetadataHandler(ep) != nil {
		t.Error("open mode serves OAuth metadata")
	}
}

// TestFailClosed refuses everything when neither auth nor actor is set
// (AU-8).
func TestFailClosed(t *testing.T) {
	gw := newGateway(t, auth.EndpointAuth{Path: "/mcp"})
	for _, token := range []string{"", "anything"} {
		expect(t, gw.call(t, "/mcp", token), http.StatusUnauthorized, "Bearer")
	}
}

// TestBearerParsing reads only "Authorization: Bearer", with the scheme in
// any case.
func TestBearerParsing(t *testing.T) {
	keys := auth.APIKeys([]auth.APIKey{{Key: "k-123", Actor: core.Actor{ID: "svc"}}})
	gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: keys})
	tests := []struct {
		name      string
		headers   []string
		status    int
		challenge string
	}{
		{"Bearer", []string{"Bearer k-123"}, http.StatusOK, ""},
		{"bearer", []string{"bearer k-123"}, http.StatusOK, ""},
		{"BEARER, extra spaces", []string{"BEARER   k-123 "}, http.StatusOK, ""},
		{"Basic is no credentials", []string{"Basic azoxMjM="}, http.StatusUnauthorized, "Bearer"},
		{"empty bearer is no credentials", []string{"Bearer "}, http.StatusUnauthorized, "Bearer"},
		{"two headers", []string{"Bearer k-123", "Bearer k-123"}, http.StatusBadRequest, "Bearer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, gw.URL+"/mcp", nil)
			for _, h := range tt.headers {
				req.Header.Add("Authorization", h)
			}
			expect(t, gw.do(t, req), tt.status, tt.challenge)
		})
	}
	t.Run("query token is never read", func(t *testing.T) {
		expect(t, gw.call(t, "/mcp?access_token=k-123", ""), http.StatusUnauthorized, "Bearer")
	})
}

// TestStrategyAnswers maps what a custom strategy returns to responses
// (AU-2, AU-4).
func TestStrategyAnswers(t *testing.T) {
	tests := []struct {
		name   string
		actor  core.Actor
		err    error
		status int
		code   string
	}{
		{"empty actor id is refused", core.Actor{}, nil, http.StatusUnauthorized, `error="invalid_token"`},
		{"401 without code", core.Actor{}, &auth.Error{Status: 401}, http.StatusUnauthorized, `error="invalid_token"`},
		{"403 without code", core.Actor{}, &auth.Error{Status: 403}, http.StatusForbidden, `error="insufficient_scope"`},
		{"odd status is a 401", core.Actor{}, &auth.Error{Status: 418}, http.StatusUnauthorized, `error="invalid_token"`},
		{"503", core.Actor{}, &auth.Error{Status: 503}, http.StatusServiceUnavailable, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := withMetadata{strategyFunc(func(*http.Request, string) (core.Actor, error) { return tt.actor, tt.err })}
			gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: s})
			expect(t, gw.call(t, "/mcp", "tok"), tt.status, gw.challengeFor("/mcp", tt.code))
		})
	}
}

// withMetadata gives a strategy OAuth metadata.
type withMetadata struct{ auth.Strategy }

func (withMetadata) Metadata() auth.ProtectedResourceMetadata {
	return auth.ProtectedResourceMetadata{AuthorizationServers: []string{"https://id.example"}}
}

// TestResourceInContext hands strategies the endpoint's resource URL.
func TestResourceInContext(t *testing.T) {
	var seen string
	s := strategyFunc(func(r *http.Request, _ string) (core.Actor, error) {
		seen, _ = auth.ResourceFrom(r.Context())
		return core.Actor{ID: "x"}, nil
	})
	h := auth.Middleware(auth.EndpointAuth{Path: "/mcp", Strategy: s, PublicURL: "https://tools.example.com"})(http.HandlerFunc(echoActor))
	req := httptest.NewRequest(http.MethodPost, "http://internal:8080/mcp", nil)
	req.Header.Set("Authorization", "Bearer t")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || seen != "https://tools.example.com/mcp" {
		t.Fatalf("status %d, resource %q", rec.Code, seen)
	}
}

// OP-8: Revoked is asked about refusals for credentials only, sees the
// token it is asked about, and its answer replaces the description; a
// refusal it does not claim keeps its own.
func TestRevokedDescription(t *testing.T) {
	keys := auth.APIKeys([]auth.APIKey{{Key: "k-123", Actor: core.Actor{ID: "svc"}}})
	var asked []string
	h := auth.Middleware(auth.EndpointAuth{Path: "/mcp", Strategy: keys, Revoked: func(r *http.Request, token string) string {
		asked = append(asked, token)
		if r.Header.Get("X-Session") == "old" {
			return "the credentials of this session are no longer accepted"
		}
		return ""
	}})(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	do := func(token, session string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("X-Session", session)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	if code, _ := do("k-123", "old"); code != http.StatusOK {
		t.Fatalf("an accepted key: %d", code)
	}
	if code, body := do("gone-key", "old"); code != http.StatusUnauthorized || !strings.Contains(body, "no longer accepted") {
		t.Errorf("a revoked session's refusal: %d %s", code, body)
	}
	if code, body := do("", "old"); code != http.StatusUnauthorized || !strings.Contains(body, "no longer accepted") {
		t.Errorf("a revoked session without a token: %d %s", code, body)
	}
	if code, body := do("gone-key", "new"); code != http.StatusUnauthorized || strings.Contains(body, "no longer accepted") {
		t.Errorf("an unclaimed refusal: %d %s", code, body)
	}
	if diff := cmp.Diff([]string{"gone-key", "", "gone-key"}, asked); diff != "" {
		t.Errorf("asked about (-want +got):\n%s", diff)
	}
}
