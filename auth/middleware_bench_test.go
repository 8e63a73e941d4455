package auth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// BenchmarkMiddlewareAPIKeys is the authentication every request to an
// endpoint pays (AU-1, AU-3): a bearer key among ten, compared in constant
// time, and the actor put in the request's context.
func BenchmarkMiddlewareAPIKeys(b *testing.B) {
	keys := make([]auth.APIKey, 10)
	for i := range keys {
		keys[i] = auth.APIKey{Key: fmt.Sprintf("bench-key-%02d-0123456789abcdef", i), Actor: core.Actor{ID: fmt.Sprintf("client-%d", i), Roles: []string{"bench"}}}
	}
	var seen string
	h := auth.Middleware(auth.EndpointAuth{Path: "/mcp", Strategy: auth.APIKeys(keys)})(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		a, _ := auth.ActorFrom(r.Context())
		seen = a.ID
	}))
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+keys[7].Key)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, req)
		if seen != "client-7" {
			b.Fatalf("actor %q, status %d", seen, w.Code)
		}
	}
}
