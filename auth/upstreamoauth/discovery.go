// Package upstreamoauth makes toolgate the OAuth 2.1 client of its
// upstreams (UI-1, UI-2, UI-3): it discovers an upstream's authorization
// server, identifies the gateway to it, runs the authorization code flow
// with PKCE for a person in their browser, keeps each connection's tokens
// sealed in the store and refreshes them before they expire.
package upstreamoauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// maxMetadataBytes bounds what is read of a metadata or token answer: a
// server answering an endless body must not hold the gateway.
const maxMetadataBytes = 1 << 20

// ErrDiscovery: the upstream's authorization server could not be found or
// its metadata is unfit (UI-1).
var ErrDiscovery = errors.New("discovering the upstream's authorization server failed")

// Metadata is what discovery learned about an upstream (UI-1).
type Metadata struct {
	// Resource is the upstream's resource identifier (RFC 8707, RFC 9728).
	Resource string
	// ScopesSupported are the protected resource's, for when the config
	// names none.
	ScopesSupported []string
	Server          ServerMetadata
}

// ServerMetadata is the part of RFC 8414 authorization server metadata the
// client uses.
type ServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint,omitempty"`
	RevocationEndpoint                string   `json:"revocation_endpoint,omitempty"`
	ScopesSupported                   []string `json:"scopes_supported,omitempty"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported,omitempty"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	GrantTypesSupported               []string `json:"grant_types_supported,omitempty"`
	// RFC 9207: the server puts iss on its authorization responses.
	AuthorizationResponseIssParameterSupported bool `json:"authorization_response_iss_parameter_supported,omitempty"`
	// draft-ietf-oauth-client-id-metadata-document: a URL may be the
	// client id.
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported,omitempty"`
}

type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported,omitempty"`
}

// Discover finds the authorization server of the MCP server at resource
// (UI-1): its 401 WWW-Authenticate names the protected-resource metadata
// (RFC 9728; else the well-known URL is tried), whose resource must be the
// upstream's URL; the first authorization server listed is then read by
// RFC 8414, else OpenID Connect discovery, and its issuer must be the one
// listed. The server must support PKCE with S256.
func Discover(ctx context.Context, hc *http.Client, resource string) (Metadata, error) {
	var md Metadata
	prmURL, err := probe(ctx, hc, resource)
	if err != nil {
		return md, err
	}
	var candidates []string
	if prmURL != "" {
		candidates = []string{prmURL}
	} else {
		candidates = wellKnown(resource, "oauth-protected-resource", true)
	}
	var prm resourceMetadata
	var lastErr error
	for _, u := range candidates {
		if lastErr = firstTelling(lastErr, getJSON(ctx, hc, u, &prm)); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		return md, fmt.Errorf("%w: protected-resource metadata (RFC 9728): %w", ErrDiscovery, lastErr)
	}
	if !sameResource(prm.Resource, resource) {
		return md, fmt.Errorf("%w: the protected-resource metadata names resource %q, not the upstream's URL %q (RFC 9728 §3.3)", ErrDiscovery, prm.Resource, resource)
	}
	if len(prm.AuthorizationServers) == 0 {
		return md, fmt.Errorf("%w: the protected-resource metadata lists no authorization_servers", ErrDiscovery)
	}
	issuer := prm.AuthorizationServers[0]
	if _, err := httpURL(issuer); err != nil {
		return md, fmt.Errorf("%w: authorization server %q: %w", ErrDiscovery, issuer, err)
	}
	var as ServerMetadata
	lastErr = nil
	for _, u := range append(wellKnown(issuer, "oauth-authorization-server", false), wellKnown(issuer, "openid-configuration", false)...) {
		as = ServerMetadata{}
		err := getJSON(ctx, hc, u, &as)
		if err == nil {
			lastErr = nil
			break
		}
		lastErr = firstTelling(lastErr, err)
	}
	if lastErr != nil {
		return md, fmt.Errorf("%w: authorization server metadata of %s (RFC 8414): %w", ErrDiscovery, issuer, lastErr)
	}
	if err := as.check(issuer); err != nil {
		return md, fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	return Metadata{Resource: prm.Resource, ScopesSupported: prm.ScopesSupported, Server: as}, nil
}

// check holds the server's metadata to RFC 8414 §3.3 (the issuer it names
// is the one asked for: a mix-up defence) and to what the flow needs.
func (as ServerMetadata) check(issuer string) error {
	if as.Issuer != issuer {
		return fmt.Errorf("the authorization server metadata names issuer %q, not %q (RFC 8414 §3.3)", as.Issuer, issuer)
	}
	for _, f := range []struct{ name, v string }{{"authorization_endpoint", as.AuthorizationEndpoint}, {"token_endpoint", as.TokenEndpoint}} {
		if _, err := httpURL(f.v); err != nil {
			return fmt.Errorf("authorization server metadata %s: %w", f.name, err)
		}
	}
	if as.RegistrationEndpoint != "" {
		if _, err := httpURL(as.RegistrationEndpoint); err != nil {
			return fmt.Errorf("authorization server metadata registration_endpoint: %w", err)
		}
	}
	if !slices.Contains(as.CodeChallengeMethodsSupported, "S256") {
		return errors.New("the authorization server does not advertise PKCE with S256 (code_challenge_methods_supported); toolgate will not run the flow without it")
	}
	return nil
}

// probe asks the upstream without a token and returns the
// resource_metadata its 401 names ("" if it names none).
func probe(ctx context.Context, hc *http.Client, resource string) (string, error) {
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"toolgate","version":"discovery"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, resource, strings.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: asking the upstream: %w", ErrDiscovery, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
	if resp.StatusCode != http.StatusUnauthorized {
		return "", nil
	}
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		if v := authParam(h, "resource_metadata"); v != "" {
			if _, err := httpURL(v); err != nil {
				return "", fmt.Errorf("%w: the upstream's resource_metadata: %w", ErrDiscovery, err)
			}
			return v, nil
		}
	}
	return "", nil
}

// authParam reads one parameter of a Bearer challenge (RFC 6750 §3),
// quoted or not.
func authParam(h, name string) string {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	for rest != "" {
		rest = strings.TrimLeft(rest, " ,")
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			return ""
		}
		k = strings.TrimSpace(k)
		var val string
		if strings.HasPrefix(v, `"`) {
			end := strings.Index(v[1:], `"`)
			if end < 0 {
				return ""
			}
			val, rest = v[1:1+end], v[2+end:]
		} else {
			val, rest, _ = strings.Cut(v, ",")
			val = strings.TrimSpace(val)
		}
		if strings.EqualFold(k, name) {
			return val
		}
	}
	return ""
}

// wellKnown lists the well-known URLs of a metadata suffix for base: with
// the path inserted after the suffix (RFC 8414 §3.1, RFC 9728 §3.1), then
// for OpenID also the path-appended form, and for a resource at the root.
func wellKnown(base, suffix string, rootFallback bool) []string {
	u, err := url.Parse(base)
	if err != nil {
		return nil
	}
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	origin := u.Scheme + "://" + u.Host
	out := []string{origin + "/.well-known/" + suffix + p}
	if suffix == "openid-configuration" && p != "" {
		out = append(out, origin+p+"/.well-known/openid-configuration")
	}
	if rootFallback && p != "" {
		out = append(out, origin+"/.well-known/"+suffix)
	}
	return out
}

// sameResource compares resource identifiers as RFC 9728 asks, forgiving a
// trailing slash only.
func sameResource(a, b string) bool {
	return a != "" && strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// httpURL accepts an absolute https URL, or http on a loopback host.
func httpURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "":
		return nil, fmt.Errorf("%q is not an absolute URL", s)
	case u.Scheme == "https":
		return u, nil
	case u.Scheme == "http" && loopback(u.Hostname()):
		return u, nil
	}
	return nil, fmt.Errorf("%q must be https (http only on loopback)", s)
}

func loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1" || strings.HasPrefix(host, "127.")
}

// notFound is a well-known URL that is not there: the next one is tried,
// and it is reported only when nothing else went wrong.
type notFound struct{ url string }

func (e *notFound) Error() string { return "GET " + e.url + " answered HTTP 404" }

// firstTelling keeps the first error that says more than "not there".
func firstTelling(prev, err error) error {
	var nf *notFound
	if prev != nil && !errors.As(prev, &nf) {
		return prev
	}
	return err
}

// getJSON reads a JSON object from u into v, refusing what is not one.
func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return &notFound{u}
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s answered HTTP %d", u, resp.StatusCode)
	}
	return decodeJSON(resp, u, v)
}

func decodeJSON(resp *http.Response, u string, v any) error {
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("%s answered %q, not JSON", u, mt)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", u, err)
	}
	if len(b) > maxMetadataBytes {
		return fmt.Errorf("%s answered more than %d bytes", u, maxMetadataBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s answered JSON that is not the expected object: %w", u, err)
	}
	return nil
}
