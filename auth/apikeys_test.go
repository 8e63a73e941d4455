package auth_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// TestAPIKeys maps each key to its actor and nothing else (AU-1).
func TestAPIKeys(t *testing.T) {
	keys := []auth.APIKey{
		{Key: "key-alpha", Actor: core.Actor{ID: "alpha", Roles: []string{"SERVICE"}, Tenant: "acme"}},
		{Key: "", Actor: core.Actor{ID: "empty"}},
		{Key: "key-beta", Actor: core.Actor{ID: "beta"}},
		{Key: "key-alpha", Actor: core.Actor{ID: "shadowed"}},
	}
	s := auth.APIKeys(keys)
	keys[0].Actor.Roles[0] = "MUTATED" // the strategy keeps its own copy
	r := httptest.NewRequest(http.MethodGet, "/", nil)

	tests := []struct {
		token string
		want  core.Actor
		ok    bool
	}{
		{"key-alpha", core.Actor{ID: "alpha", Roles: []string{"SERVICE"}, Tenant: "acme"}, true},
		{"key-beta", core.Actor{ID: "beta"}, true},
		{"", core.Actor{}, false},
		{"key-alph", core.Actor{}, false},
		{"key-alphaa", core.Actor{}, false},
		{"KEY-ALPHA", core.Actor{}, false},
	}
	for _, tt := range tests {
		got, err := s.Authenticate(r, tt.token)
		if tt.ok != (err == nil) {
			t.Errorf("%q: err = %v, want ok=%v", tt.token, err, tt.ok)
		}
		if err != nil && !errors.Is(err, auth.ErrNotMine) {
			t.Errorf("%q: err = %v, want ErrNotMine", tt.token, err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%q: actor (-want +got):\n%s", tt.token, d)
		}
	}

	// A caller mutating a returned actor changes nothing for the next.
	a, _ := s.Authenticate(r, "key-alpha")
	a.Roles[0] = "ADMIN"
	if b, _ := s.Authenticate(r, "key-alpha"); b.Roles[0] != "SERVICE" {
		t.Errorf("roles leaked between requests: %v", b.Roles)
	}
	if _, ok := s.(auth.MetadataProvider); ok {
		t.Error("APIKeys exposes OAuth metadata")
	}
}
