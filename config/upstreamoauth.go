package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/toolgate/toolgate/core/credentials"
)

// UpstreamOAuth makes toolgate the OAuth 2.1 client of an upstream (UI-1,
// UI-2).
type UpstreamOAuth struct {
	// Credentials is CredentialsShared (one account, connected by an
	// operator) or CredentialsPerActor (each actor's own).
	Credentials string `koanf:"credentials" json:"credentials" yaml:"credentials"`
	// ClientID is a client pre-registered with the upstream's authorization
	// server; empty: a Client ID Metadata Document, else registration.
	ClientID     string `koanf:"clientId" json:"clientId,omitempty" yaml:"clientId,omitempty"`
	ClientSecret Secret `koanf:"clientSecret" json:"clientSecret,omitempty" yaml:"clientSecret,omitempty"`
	// ClientKeyFile, instead of ClientSecret, names the PEM private key
	// (RSA or EC P-256) the pre-registered client signs private_key_jwt
	// assertions with (RFC 7523); relative to the config file.
	// ClientKeyID is the kid its assertions name, when the server wants one.
	ClientKeyFile string `koanf:"clientKeyFile" json:"clientKeyFile,omitempty" yaml:"clientKeyFile,omitempty"`
	ClientKeyID   string `koanf:"clientKeyId" json:"clientKeyId,omitempty" yaml:"clientKeyId,omitempty"`
	// ClientAssertionAudience is what the assertions' aud names: "issuer"
	// (the default) or "endpoint", the URL each is sent to (Okta, Entra ID).
	ClientAssertionAudience string   `koanf:"clientAssertionAudience" json:"clientAssertionAudience,omitempty" yaml:"clientAssertionAudience,omitempty"`
	Scopes                  []string `koanf:"scopes" json:"scopes,omitempty" yaml:"scopes,omitempty"`
	// TokenExchange trades the actor's incoming token for one meant for the
	// upstream (RFC 8693) instead of a browser step.
	TokenExchange bool `koanf:"tokenExchange" json:"tokenExchange,omitempty" yaml:"tokenExchange,omitempty"`
}

// Credential scopes (UI-2).
const (
	CredentialsShared   = "shared"
	CredentialsPerActor = "perActor"
)

// CredentialsKeyBytes is the length of gateway.credentialsKey once decoded:
// an AES-256 key (UI-3).
const CredentialsKeyBytes = 32

// UpstreamOAuthPath is where the gateway serves the routes of upstream
// connections (connect, callback, disconnect, its client metadata
// document); endpoints may not use it when an upstream has oauth.
const UpstreamOAuthPath = "/upstream-oauth"

// ErrCredentialsKey: a credentials key that is not 32 bytes of base64. Its
// message never quotes the value.
var ErrCredentialsKey = errors.New("must be 32 bytes encoded in base64 (e.g. the output of: openssl rand -base64 32)")

// DecodeCredentialsKey decodes a credentials key (UI-3): standard or URL
// base64, padded or not, of exactly CredentialsKeyBytes bytes.
func DecodeCredentialsKey(s Secret) ([]byte, error) {
	v := strings.TrimSpace(s.Reveal())
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil {
			if len(b) != CredentialsKeyBytes {
				return nil, fmt.Errorf("decodes to %d bytes: %w", len(b), ErrCredentialsKey)
			}
			return b, nil
		}
	}
	return nil, ErrCredentialsKey
}

// OAuthUpstreams lists the upstreams that have an oauth block.
func (c *Config) OAuthUpstreams() []Upstream {
	var out []Upstream
	for _, u := range c.Upstreams {
		if u.OAuth != nil {
			out = append(out, u)
		}
	}
	return out
}

// credentials checks the gateway's keys and what oauth upstreams need of
// the gateway (UI-1, UI-3). Messages never quote a key.
func (v *validator) credentials() {
	g := v.c.Gateway
	var first *Upstream
	for i := range v.c.Upstreams {
		if v.c.Upstreams[i].OAuth != nil {
			first = &v.c.Upstreams[i]
			break
		}
	}
	var cur []byte
	if g.CredentialsKey != "" {
		b, err := DecodeCredentialsKey(g.CredentialsKey)
		if err != nil {
			v.fail("gateway.credentialsKey", "%s", err.Error())
		}
		cur = b
	} else if first != nil {
		v.fail("gateway.credentialsKey", "required because upstream %q has oauth: tokens are stored encrypted with it; set it to 32 random bytes in base64, e.g. in the environment as %s", first.Name, envOf("gateway.credentialsKey"))
	}
	if g.CredentialsKeyPrevious != "" {
		b, err := DecodeCredentialsKey(g.CredentialsKeyPrevious)
		switch {
		case err != nil:
			v.fail("gateway.credentialsKeyPrevious", "%s", err.Error())
		case g.CredentialsKey == "":
			v.fail("gateway.credentialsKeyPrevious", "needs gateway.credentialsKey: the previous key only decrypts, the current one encrypts")
		case cur != nil && string(b) == string(cur):
			v.fail("gateway.credentialsKeyPrevious", "is the same key as gateway.credentialsKey")
		}
	}
	if first == nil {
		return
	}
	if g.PublicURL == "" {
		v.fail("gateway.publicUrl", "required because upstream %q has oauth: its redirect URI and client metadata document live under it", first.Name)
	}
	for i, e := range v.c.Endpoints {
		clean := path.Clean(e.Path)
		if clean == UpstreamOAuthPath || strings.HasPrefix(clean, UpstreamOAuthPath+"/") {
			v.fail(fmt.Sprintf("endpoints[%d].path", i), "%q is reserved for upstream connections (%s) while an upstream has oauth", e.Path, UpstreamOAuthPath)
		}
	}
}

// upstreamOAuth checks one upstream's oauth block (UI-1, UI-2).
func (v *validator) upstreamOAuth(p string, u Upstream) {
	o := *u.OAuth
	p += ".oauth"
	if u.URL == "" {
		v.fail(p, "only for url (network) upstreams")
	}
	if u.Authorization != "" {
		v.fail(p, "cannot be combined with authorization: the OAuth token is the upstream's bearer token")
	}
	for k := range u.Headers {
		if strings.EqualFold(k, "Authorization") {
			v.fail(p, "cannot be combined with an Authorization header: the OAuth token is the upstream's bearer token")
		}
	}
	if !oneOf(o.Credentials, []string{CredentialsShared, CredentialsPerActor}) {
		v.fail(p+".credentials", "must be %s or %s (got %q)", CredentialsPerActor, CredentialsShared, o.Credentials)
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		v.fail(p+".clientSecret", "needs clientId: a secret belongs to a pre-registered client")
	}
	if strings.ContainsAny(o.ClientID, " \t\r\n\x00") {
		v.fail(p+".clientId", "must not contain spaces or control characters")
	}
	v.clientKey(p, o)
	for j, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\\x00") {
			v.fail(fmt.Sprintf("%s.scopes[%d]", p, j), "must be a non-empty scope token without spaces, quotes or backslashes")
		}
	}
	if o.TokenExchange && o.Credentials == CredentialsShared {
		v.fail(p+".tokenExchange", "needs credentials: perActor: an exchange acts as the calling actor")
	}
	if o.TokenExchange && o.ClientID == "" {
		v.fail(p+".tokenExchange", "needs clientId (and usually clientSecret): the exchange is made by a client the authorization server lets exchange tokens")
	}
	if o.TokenExchange && !v.anyOAuthEndpoint() {
		v.fail(p+".tokenExchange", "needs an endpoint whose auth is oauth (alone or in anyOf): only an actor's verified OAuth token can be exchanged")
	}
}

// anyOAuthEndpoint: some endpoint authenticates actors with OAuth, whose
// tokens a token exchange trades (UI-2).
func (v *validator) anyOAuthEndpoint() bool {
	for _, e := range v.c.Endpoints {
		if e.Auth == nil {
			continue
		}
		if e.Auth.OAuth != nil {
			return true
		}
		for _, a := range e.Auth.AnyOf {
			if a.OAuth != nil {
				return true
			}
		}
	}
	return false
}

// clientKey checks a private_key_jwt client's key (UI-1): it belongs to a
// pre-registered client without a secret, and its file holds a usable
// private key. Messages name the file, never what is in it.
func (v *validator) clientKey(p string, o UpstreamOAuth) {
	switch o.ClientAssertionAudience {
	case "", "issuer", "endpoint":
	default:
		v.fail(p+".clientAssertionAudience", "must be issuer or endpoint, not %q", o.ClientAssertionAudience)
	}
	if o.ClientKeyFile == "" {
		if o.ClientKeyID != "" {
			v.fail(p+".clientKeyId", "needs clientKeyFile: it names that key")
		}
		if o.ClientAssertionAudience != "" {
			v.fail(p+".clientAssertionAudience", "needs clientKeyFile: only a client key signs assertions")
		}
		return
	}
	if o.ClientID == "" {
		v.fail(p+".clientKeyFile", "needs clientId: a client key belongs to a pre-registered client")
	}
	if o.ClientSecret != "" {
		v.fail(p+".clientKeyFile", "cannot be combined with clientSecret: the client authenticates with one or the other (private_key_jwt or client_secret_basic)")
	}
	if strings.ContainsAny(o.ClientKeyID, "\r\n\x00") {
		v.fail(p+".clientKeyId", "must not contain control characters")
	}
	if _, _, err := ReadClientKey(o.ClientKeyFile); err != nil {
		v.fail(p+".clientKeyFile", "%s", err.Error())
	}
}

// ReadClientKey reads and checks the PEM private key of
// upstreams[].oauth.clientKeyFile (UI-1): the bytes, and the JWS algorithm
// it signs with. The error names the path, never the key.
func ReadClientKey(path string) ([]byte, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, below
		}
		return nil, "", fmt.Errorf("cannot read %s: %v", path, err)
	}
	_, alg, err := credentials.ParseClientKey(data)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %v", path, err)
	}
	return data, alg, nil
}
