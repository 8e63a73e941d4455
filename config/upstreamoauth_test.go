package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// goodKey is 32 bytes in base64; its text carries leakMarker so a leak is
// caught by the same check as the other secrets.
const goodKey = Secret("U0VDUkVULWtleS0wMTIzNDU2Nzg5YWJjZGVmZ2hpams=")

func oauthBase() *Config {
	c := base()
	c.Gateway.PublicURL = "https://tools.example.com"
	c.Gateway.CredentialsKey = goodKey
	c.Upstreams[0] = Upstream{Name: "crm", URL: "https://crm.example.com/mcp", DefaultKind: "read", Approval: "client", Timeout: time.Second,
		Health: Health{Interval: time.Second, Timeout: time.Second}, Reconnect: Reconnect{InitialDelay: time.Second, MaxDelay: time.Second},
		OAuth: &UpstreamOAuth{Credentials: CredentialsPerActor, Scopes: []string{"crm.read"}}}
	return c
}

// exchanging turns the upstream's oauth into a token exchange behind an
// endpoint taking OAuth tokens (alone, or first in anyOf).
func exchanging(c *Config, anyOf bool) {
	c.Upstreams[0].OAuth.ClientID, c.Upstreams[0].OAuth.ClientSecret = "toolgate", "s-SECRET-x"
	c.Upstreams[0].OAuth.TokenExchange = true
	oauth := &OAuth{Issuer: "https://as.example.com"}
	if anyOf {
		c.Endpoints[0].Auth = &Auth{AnyOf: []Auth{{OAuth: oauth}, {APIKeys: []APIKey{{Key: "k-SECRET-0123456789abcdef", Actor: Actor{ID: "ci"}}}}}}
	} else {
		c.Endpoints[0].Auth = &Auth{OAuth: oauth}
	}
	c.Endpoints[0].Actor = nil
}

// UI-1, UI-2, UI-3: what an upstream's oauth block and the gateway's keys
// must be, each problem named by its key path, no key ever quoted.
func TestValidateUpstreamOAuth(t *testing.T) {
	short := Secret("c2hvcnQtU0VDUkVULWtleQ==")
	tests := []struct {
		name   string
		change func(c *Config)
		want   []FieldError
	}{
		{"valid", func(c *Config) {}, nil},
		{"shared with a pre-registered client", func(c *Config) {
			c.Upstreams[0].OAuth = &UpstreamOAuth{Credentials: CredentialsShared, ClientID: "toolgate", ClientSecret: "s-SECRET-x"}
		}, nil},
		{"rotation keys", func(c *Config) {
			c.Gateway.CredentialsKeyPrevious = "b3RoZXItU0VDUkVULWtleS0wMTIzNDU2Nzg5YWJjZGU="
		}, nil},
		{"no key", func(c *Config) { c.Gateway.CredentialsKey = "" },
			[]FieldError{{"gateway.credentialsKey", `required because upstream "crm" has oauth: tokens are stored encrypted with it; set it to 32 random bytes in base64, e.g. in the environment as TOOLGATE_GATEWAY_CREDENTIALSKEY`}}},
		{"short key", func(c *Config) { c.Gateway.CredentialsKey = short },
			[]FieldError{{"gateway.credentialsKey", "decodes to 16 bytes: must be 32 bytes encoded in base64 (e.g. the output of: openssl rand -base64 32)"}}},
		{"key not base64", func(c *Config) { c.Gateway.CredentialsKey = "not base64 SECRET-!!" },
			[]FieldError{{"gateway.credentialsKey", "must be 32 bytes encoded in base64 (e.g. the output of: openssl rand -base64 32)"}}},
		{"previous equals current", func(c *Config) { c.Gateway.CredentialsKeyPrevious = goodKey },
			[]FieldError{{"gateway.credentialsKeyPrevious", "is the same key as gateway.credentialsKey"}}},
		{"previous without current", func(c *Config) {
			c.Upstreams[0].OAuth = nil
			c.Gateway.CredentialsKey = ""
			c.Gateway.CredentialsKeyPrevious = goodKey
		}, []FieldError{{"gateway.credentialsKeyPrevious", "needs gateway.credentialsKey: the previous key only decrypts, the current one encrypts"}}},
		{"no public url", func(c *Config) { c.Gateway.PublicURL = "" },
			[]FieldError{{"gateway.publicUrl", `required because upstream "crm" has oauth: its redirect URI and client metadata document live under it`}}},
		{"endpoint on the connection routes", func(c *Config) { c.Endpoints[0].Path = "/upstream-oauth/x" },
			[]FieldError{{"endpoints[0].path", `"/upstream-oauth/x" is reserved for upstream connections (/upstream-oauth) while an upstream has oauth`}}},
		{"bad credentials", func(c *Config) { c.Upstreams[0].OAuth.Credentials = "everyone" },
			[]FieldError{{"upstreams[0].oauth.credentials", `must be perActor or shared (got "everyone")`}}},
		{"missing credentials", func(c *Config) { c.Upstreams[0].OAuth.Credentials = "" },
			[]FieldError{{"upstreams[0].oauth.credentials", `must be perActor or shared (got "")`}}},
		{"secret without id", func(c *Config) { c.Upstreams[0].OAuth.ClientSecret = "s-SECRET-x" },
			[]FieldError{{"upstreams[0].oauth.clientSecret", "needs clientId: a secret belongs to a pre-registered client"}}},
		{"bad scope", func(c *Config) { c.Upstreams[0].OAuth.Scopes = []string{"ok", "two words"} },
			[]FieldError{{"upstreams[0].oauth.scopes[1]", "must be a non-empty scope token without spaces, quotes or backslashes"}}},
		{"with a static bearer", func(c *Config) { c.Upstreams[0].Authorization = "tok-SECRET-x" },
			[]FieldError{{"upstreams[0].oauth", "cannot be combined with authorization: the OAuth token is the upstream's bearer token"}}},
		{"with an Authorization header", func(c *Config) { c.Upstreams[0].Headers = map[string]Secret{"authorization": "Bearer SECRET-x"} },
			[]FieldError{{"upstreams[0].oauth", "cannot be combined with an Authorization header: the OAuth token is the upstream's bearer token"}}},
		{"stdio", func(c *Config) {
			c.Upstreams[0].URL = ""
			c.Upstreams[0].Command = "crm"
		}, []FieldError{{"upstreams[0].oauth", "only for url (network) upstreams"}}},
		{"exchange", func(c *Config) { exchanging(c, false) }, nil},
		{"exchange behind anyOf", func(c *Config) { exchanging(c, true) }, nil},
		{"exchange on a shared upstream", func(c *Config) {
			exchanging(c, false)
			c.Upstreams[0].OAuth.Credentials = CredentialsShared
		}, []FieldError{{"upstreams[0].oauth.tokenExchange", "needs credentials: perActor: an exchange acts as the calling actor"}}},
		{"exchange without a client", func(c *Config) {
			exchanging(c, false)
			c.Upstreams[0].OAuth.ClientID, c.Upstreams[0].OAuth.ClientSecret = "", ""
		}, []FieldError{{"upstreams[0].oauth.tokenExchange", "needs clientId (and usually clientSecret): the exchange is made by a client the authorization server lets exchange tokens"}}},
		{"exchange without an oauth endpoint", func(c *Config) {
			exchanging(c, false)
			c.Endpoints[0].Auth = nil
		}, []FieldError{{"upstreams[0].oauth.tokenExchange", "needs an endpoint whose auth is oauth (alone or in anyOf): only an actor's verified OAuth token can be exchanged"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkOAuthValidation(t, tt.change, tt.want) })
	}
}

// checkOAuthValidation validates oauthBase as change leaves it and
// compares its field errors with want; no error may quote leakMarker (a
// secret or a key file's content).
func checkOAuthValidation(t *testing.T, change func(*Config), want []FieldError) {
	t.Helper()
	c := oauthBase()
	change(c)
	_, err := c.Validate()
	var got []FieldError
	if err != nil {
		var ve *ValidationErrors
		if !errors.As(err, &ve) {
			t.Fatalf("err is %T, want *ValidationErrors", err)
		}
		got = ve.Errors
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if err != nil && strings.Contains(err.Error(), leakMarker) {
		t.Errorf("error leaks a secret: %v", err)
	}
}

// UI-3: the key decodes from every base64 form an operator may paste.
func TestDecodeCredentialsKey(t *testing.T) {
	want, err := DecodeCredentialsKey(goodKey)
	if err != nil || len(want) != CredentialsKeyBytes {
		t.Fatalf("DecodeCredentialsKey = %d bytes, %v", len(want), err)
	}
	for _, s := range []string{strings.TrimRight(string(goodKey), "="), " " + string(goodKey) + "\n"} {
		got, err := DecodeCredentialsKey(Secret(s))
		if err != nil || string(got) != string(want) {
			t.Errorf("DecodeCredentialsKey(%q) = %x, %v", s, got, err)
		}
	}
}

// UI-3: loading a file with an oauth upstream reads every key, and neither
// the key nor the client secret shows in a dump.
func TestLoadUpstreamOAuth(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "toolgate.yaml")
	yaml := `gateway:
  publicUrl: https://tools.example.com
  credentialsKey: ${CREDS_KEY}
endpoints:
  - path: /mcp
    actor: {id: dev}
upstreams:
  - name: crm
    url: https://crm.example.com/mcp
    defaultKind: read
    oauth:
      credentials: perActor
      clientId: toolgate
      clientSecret: client-SECRET-value
      scopes: [crm.read, crm.write]
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CREDS_KEY": string(goodKey)}
	c, _, err := Load(file, optionsFor(env))
	if err != nil {
		t.Fatal(err)
	}
	o := c.Upstreams[0].OAuth
	if o == nil || o.Credentials != CredentialsPerActor || o.ClientID != "toolgate" || o.ClientSecret.Reveal() != "client-SECRET-value" ||
		!cmp.Equal(o.Scopes, []string{"crm.read", "crm.write"}) || c.Gateway.CredentialsKey != goodKey {
		t.Fatalf("loaded %+v, key set %v", o, c.Gateway.CredentialsKey != "")
	}
	dump, err := Dump(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(dump), leakMarker) || strings.Contains(string(dump), string(goodKey)) {
		t.Errorf("dump leaks a secret:\n%s", dump)
	}
}
