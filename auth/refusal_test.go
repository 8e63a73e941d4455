package auth_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// TestOnRefusalReasons: every refusal reaches EndpointAuth.OnRefusal with
// one of the fixed reasons, whatever Code a strategy makes up; accepted
// requests and open mode report nothing (OP-7, AU-4, AU-8).
func TestOnRefusalReasons(t *testing.T) {
	var mu sync.Mutex
	var got []string
	record := func(reason string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, reason)
	}
	last := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := got
		got = nil
		return out
	}
	keys := auth.APIKeys([]auth.APIKey{{Key: "k-123", Actor: core.Actor{ID: "svc"}}})
	strategyErr := func(err error) auth.Strategy {
		return strategyFunc(func(*http.Request, string) (core.Actor, error) { return core.Actor{}, err })
	}
	dev := core.Actor{ID: "dev"}
	tests := []struct {
		name    string
		ep      auth.EndpointAuth
		headers []string
		want    string // "" for no refusal
	}{
		{"accepted", auth.EndpointAuth{Strategy: keys}, []string{"Bearer k-123"}, ""},
		{"open mode", auth.EndpointAuth{Actor: &dev}, nil, ""},
		{"fail closed", auth.EndpointAuth{}, []string{"Bearer k-123"}, auth.RefusedUnconfigured},
		{"two headers", auth.EndpointAuth{Strategy: keys}, []string{"Bearer k-123", "Bearer k-123"}, auth.RefusedMalformed},
		{"no token", auth.EndpointAuth{Strategy: keys}, nil, auth.RefusedMissingToken},
		{"too long", auth.EndpointAuth{Strategy: keys}, []string{"Bearer " + strings.Repeat("x", auth.MaxTokenBytes+1)}, auth.RefusedTokenTooLong},
		{"unknown key", auth.EndpointAuth{Strategy: keys}, []string{"Bearer nope"}, auth.RefusedInvalidToken},
		{"403", auth.EndpointAuth{Strategy: strategyErr(&auth.Error{Status: 403})}, []string{"Bearer t"}, auth.RefusedInsufficientScope},
		{"503", auth.EndpointAuth{Strategy: strategyErr(&auth.Error{Status: 503})}, []string{"Bearer t"}, auth.RefusedUnavailable},
		{"a strategy's own code is not a reason", auth.EndpointAuth{Strategy: strategyErr(&auth.Error{Status: 401, Code: "k-123 leaked"})}, []string{"Bearer t"}, auth.RefusedInvalidToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := tt.ep
			ep.Path, ep.OnRefusal = "/mcp", record
			gw := newGateway(t, ep)
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, gw.URL+"/mcp", nil)
			for _, h := range tt.headers {
				req.Header.Add("Authorization", h)
			}
			gw.do(t, req)
			reasons := last()
			switch {
			case tt.want == "" && len(reasons) != 0:
				t.Errorf("reported %q for a request that was let through", reasons)
			case tt.want != "" && (len(reasons) != 1 || reasons[0] != tt.want):
				t.Errorf("reported %q, want [%s]", reasons, tt.want)
			}
		})
	}
}
