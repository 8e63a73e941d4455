package auth_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// TestMetadataDocument serves the RFC 9728 document without auth and with
// CORS (AU-5).
func TestMetadataDocument(t *testing.T) {
	f := newOAuthFixture(t, nil)
	gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: f.oauth, ResourceName: "Acme tools"})

	resp, err := gw.Client().Get(gw.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin = %q", got)
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"resource":                 gw.URL + "/mcp",
		"authorization_servers":    []any{f.idp.Issuer()},
		"scopes_supported":         []any{"openid", "tools"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "Acme tools",
	}
	if d := cmp.Diff(want, doc); d != "" {
		t.Errorf("document (-want +got):\n%s", d)
	}

	for method, status := range map[string]int{
		http.MethodHead:    http.StatusOK,
		http.MethodOptions: http.StatusNoContent,
		http.MethodPost:    http.StatusMethodNotAllowed,
		http.MethodDelete:  http.StatusMethodNotAllowed,
	} {
		req, _ := http.NewRequestWithContext(t.Context(), method, gw.URL+auth.MetadataPath("/mcp"), nil)
		resp, err := gw.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("%s: status %d, want %d", method, resp.StatusCode, status)
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: no CORS header", method)
		}
	}
}

// TestMetadataPublicURL builds the resource from publicUrl (AU-6).
func TestMetadataPublicURL(t *testing.T) {
	h := auth.MetadataHandler(auth.EndpointAuth{
		Path: "/mcp", PublicURL: "https://tools.example.com",
		Strategy: withMetadata{auth.APIKeys(nil)},
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://10.0.0.5:7331/.well-known/oauth-protected-resource/mcp", nil))
	var doc struct {
		Resource string `json:"resource"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.Resource != "https://tools.example.com/mcp" {
		t.Fatalf("resource %q (%v), body %s", doc.Resource, err, rec.Body)
	}
}

// TestMetadataNotMounted has no handler without OAuth metadata (AU-5).
func TestMetadataNotMounted(t *testing.T) {
	keys := auth.APIKeys([]auth.APIKey{{Key: "k", Actor: core.Actor{ID: "a"}}})
	for name, ep := range map[string]auth.EndpointAuth{
		"api keys":    {Path: "/mcp", Strategy: keys},
		"anyOf keys":  {Path: "/mcp", Strategy: auth.AnyOf(keys)},
		"fail closed": {Path: "/mcp"},
	} {
		if auth.MetadataHandler(ep) != nil {
			t.Errorf("%s: metadata handler returned", name)
		}
	}
}

func TestMetadataPath(t *testing.T) {
	for in, want := range map[string]string{
		"/mcp":        "/.well-known/oauth-protected-resource/mcp",
		"/team/a/mcp": "/.well-known/oauth-protected-resource/team/a/mcp",
		"/":           "/.well-known/oauth-protected-resource",
		"":            "/.well-known/oauth-protected-resource",
	} {
		if got := auth.MetadataPath(in); got != want {
			t.Errorf("MetadataPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestResourceURL uses publicUrl, else the request's scheme (TLS only) and
// Host (AU-6).
func TestResourceURL(t *testing.T) {
	plain := httptest.NewRequest(http.MethodGet, "http://Gateway.Local:7331/mcp", nil)
	forwarded := httptest.NewRequest(http.MethodGet, "http://gateway.local/mcp", nil)
	forwarded.Header.Set("X-Forwarded-Proto", "https")
	forwarded.Header.Set("X-Forwarded-Host", "evil.example")
	overTLS := httptest.NewRequest(http.MethodGet, "https://gateway.local/mcp", nil)
	overTLS.TLS = &tls.ConnectionState{}

	tests := []struct {
		name      string
		r         *http.Request
		publicURL string
		want      string
	}{
		{"request origin", plain, "", "http://gateway.local:7331/mcp"},
		{"forwarding headers ignored", forwarded, "", "http://gateway.local/mcp"},
		{"TLS", overTLS, "", "https://gateway.local/mcp"},
		{"publicUrl wins", plain, "https://tools.example.com", "https://tools.example.com/mcp"},
		{"publicUrl with port", overTLS, "http://127.0.0.1:9000", "http://127.0.0.1:9000/mcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := auth.ResourceURL(tt.r, tt.publicURL, "/mcp"); got != tt.want {
				t.Errorf("ResourceURL = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestValidatePublicURL accepts origins only (AU-6).
func TestValidatePublicURL(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"https://tools.example.com", true},
		{"http://127.0.0.1:7331", true},
		{"https://[::1]:8443", true},
		{"https://tools.example.com/", false},
		{"https://tools.example.com/mcp", false},
		{"https://tools.example.com?x=1", false},
		{"https://tools.example.com?", false},
		{"https://tools.example.com#top", false},
		{"https://tools.example.com#", false},
		{"https://user:pw@tools.example.com", false},
		{"ftp://tools.example.com", false},
		{"tools.example.com", false},
		{"https://", false},
		{"https://tools.example.com:", false},
		{"https://tools.example.com:x", false},
		{"", false},
	}
	for _, tt := range tests {
		err := auth.ValidatePublicURL(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ValidatePublicURL(%q) = %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
}
