package auth_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// counting is a strategy that answers fixed values and counts its calls.
type counting struct {
	actor core.Actor
	err   error
	calls int
}

func (c *counting) Authenticate(*http.Request, string) (core.Actor, error) {
	c.calls++
	return c.actor, c.err
}

// TestAnyOfSemantics pins the chain rules (AU-2).
func TestAnyOfSemantics(t *testing.T) {
	refusal := &auth.Error{Status: http.StatusForbidden, Description: "no"}
	tests := []struct {
		name      string
		chain     []*counting
		wantActor core.Actor
		wantErr   error
		wantCalls []int
	}{
		{"first verifies", []*counting{{actor: core.Actor{ID: "one"}}, {actor: core.Actor{ID: "two"}}}, core.Actor{ID: "one"}, nil, []int{1, 0}},
		{"not mine passes on", []*counting{{err: auth.ErrNotMine}, {actor: core.Actor{ID: "two"}}}, core.Actor{ID: "two"}, nil, []int{1, 1}},
		{"plain error passes on", []*counting{{err: errors.New("db down")}, {actor: core.Actor{ID: "two"}}}, core.Actor{ID: "two"}, nil, []int{1, 1}},
		{"refusal stops", []*counting{{err: refusal}, {actor: core.Actor{ID: "two"}}}, core.Actor{}, refusal, []int{1, 0}},
		{"refusal after not mine", []*counting{{err: auth.ErrNotMine}, {err: refusal}, {actor: core.Actor{ID: "three"}}}, core.Actor{}, refusal, []int{1, 1, 0}},
		{"none recognises", []*counting{{err: auth.ErrNotMine}, {err: auth.ErrNotMine}}, core.Actor{}, auth.ErrNotMine, []int{1, 1}},
		{"empty chain", nil, core.Actor{}, auth.ErrNotMine, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ss []auth.Strategy
			for _, c := range tt.chain {
				ss = append(ss, c)
			}
			actor, err := auth.AnyOf(ss...).Authenticate(httptest.NewRequest(http.MethodGet, "/", nil), "tok")
			if d := cmp.Diff(tt.wantActor, actor); d != "" {
				t.Errorf("actor (-want +got):\n%s", d)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			for i, c := range tt.chain {
				if c.calls != tt.wantCalls[i] {
					t.Errorf("strategy %d called %d times, want %d", i, c.calls, tt.wantCalls[i])
				}
			}
		})
	}
}

// TestAnyOfMetadata exposes metadata only when a member does, merging them
// (AU-2, AU-5).
func TestAnyOfMetadata(t *testing.T) {
	keys := auth.APIKeys([]auth.APIKey{{Key: "k", Actor: core.Actor{ID: "a"}}})
	if _, ok := auth.AnyOf(keys, nil).(auth.MetadataProvider); ok {
		t.Error("AnyOf(apiKeys) claims OAuth metadata")
	}
	f1 := newOAuthFixture(t, nil)
	f2 := newOAuthFixture(t, func(c *auth.OAuthConfig) { c.ScopesSupported = []string{"tools", "admin"} })
	md, ok := auth.MetadataOf(auth.AnyOf(keys, f1.oauth, auth.AnyOf(f2.oauth)))
	if !ok {
		t.Fatal("AnyOf with OAuth members exposes no metadata")
	}
	want := auth.ProtectedResourceMetadata{
		AuthorizationServers: []string{f1.idp.Issuer(), f2.idp.Issuer()},
		ScopesSupported:      []string{"openid", "tools", "admin"},
	}
	if d := cmp.Diff(want, md); d != "" {
		t.Errorf("metadata (-want +got):\n%s", d)
	}
}

// TestAnyOfKeysAndOAuth serves API keys and OAuth tokens on one endpoint
// (AU-2).
func TestAnyOfKeysAndOAuth(t *testing.T) {
	f := newOAuthFixture(t, nil)

	got := f.gw.call(t, "/chain", gatewayKey)
	expect(t, got, http.StatusOK, "")
	if d := cmp.Diff(core.Actor{ID: "gateway", Roles: []string{"SERVICE"}, Tenant: "acme"}, got.actor); d != "" {
		t.Errorf("key actor (-want +got):\n%s", d)
	}

	got = f.gw.call(t, "/chain", f.token(t, "/chain", jwt.MapClaims{"sub": "alice"}))
	expect(t, got, http.StatusOK, "")
	if got.actor.ID != "alice" {
		t.Errorf("OAuth actor = %+v", got.actor)
	}

	// A token OAuth recognises and refuses stops the chain with its error.
	got = f.gw.call(t, "/chain", f.token(t, "/a", nil))
	expect(t, got, http.StatusUnauthorized, f.gw.challengeFor("/chain", invalidTokenParam))
	because(t, got, "not issued for this resource")
}
