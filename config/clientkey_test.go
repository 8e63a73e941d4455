package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyFiles writes one PEM file per kind of key into a temporary directory
// and returns their paths by name.
func keyFiles(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	rsa2048, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	pkcs8 := func(k any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	sec1, _ := x509.MarshalECPrivateKey(p256)
	pub, _ := x509.MarshalPKIXPublicKey(&rsa2048.PublicKey)
	files := map[string][]byte{
		"rsa":       pkcs8(rsa2048),
		"rsa-pkcs1": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsa2048)}),
		"ec":        pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}),
		"ec-pkcs8":  pkcs8(p256),
		"rsa-small": pkcs8(rsa1024),
		"ec-p384":   pkcs8(p384),
		"public":    pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"encrypted": pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte("SECRET-encrypted-bytes")}),
		"garbled":   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("SECRET-not-der")}),
		"text":      []byte("SECRET-not-a-key\n"),
	}
	out := map[string]string{"missing": filepath.Join(dir, "missing.pem")}
	for name, data := range files {
		p := filepath.Join(dir, name+".pem")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

// UI-1: a pre-registered client's private_key_jwt key is checked at load:
// RSA (2048 bits or more) and EC P-256 keys in every PEM form pass; any
// other file is an error on clientKeyFile naming the file and what is
// wrong, never the file's content; the key goes with clientId and not with
// clientSecret, and clientKeyId and clientAssertionAudience (issuer or
// endpoint) with a key.
func TestValidateUpstreamClientKey(t *testing.T) {
	f := keyFiles(t)
	key := func(name string) func(c *Config) {
		return func(c *Config) {
			c.Upstreams[0].OAuth.ClientID = "toolgate"
			c.Upstreams[0].OAuth.ClientKeyFile = f[name]
			c.Upstreams[0].OAuth.ClientKeyID = "k1"
		}
	}
	const p = "upstreams[0].oauth.clientKeyFile"
	tests := []struct {
		name   string
		change func(c *Config)
		want   []FieldError
	}{
		{"rsa pkcs8", key("rsa"), nil},
		{"rsa pkcs1", key("rsa-pkcs1"), nil},
		{"ec sec1", key("ec"), nil},
		{"ec pkcs8", key("ec-pkcs8"), nil},
		{"small rsa", key("rsa-small"), []FieldError{{p, f["rsa-small"] + ": not a usable private key: an RSA key of 1024 bits; RS256 needs at least 2048"}}},
		{"p-384", key("ec-p384"), []FieldError{{p, f["ec-p384"] + ": not a usable private key: an EC key on P-384; ES256 needs P-256"}}},
		{"public key", key("public"), []FieldError{{p, f["public"] + ": not a usable private key: no PEM private key block in it (want -----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or EC PRIVATE KEY)"}}},
		{"encrypted", key("encrypted"), []FieldError{{p, f["encrypted"] + ": not a usable private key: the key is encrypted; give an unencrypted key and protect the file instead"}}},
		{"not a key", key("text"), []FieldError{{p, f["text"] + ": not a usable private key: no PEM private key block in it (want -----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or EC PRIVATE KEY)"}}},
		{"missing file", key("missing"), []FieldError{{p, "cannot read " + f["missing"] + ": no such file or directory"}}},
		{"with a secret", func(c *Config) {
			key("rsa")(c)
			c.Upstreams[0].OAuth.ClientSecret = "s-SECRET-x"
		}, []FieldError{{p, "cannot be combined with clientSecret: the client authenticates with one or the other (private_key_jwt or client_secret_basic)"}}},
		{"without a client id", func(c *Config) {
			key("rsa")(c)
			c.Upstreams[0].OAuth.ClientID = ""
		}, []FieldError{{p, "needs clientId: a client key belongs to a pre-registered client"}}},
		{"key id without a key", func(c *Config) { c.Upstreams[0].OAuth.ClientKeyID = "k1" },
			[]FieldError{{"upstreams[0].oauth.clientKeyId", "needs clientKeyFile: it names that key"}}},
		{"endpoint audience", func(c *Config) {
			key("ec")(c)
			c.Upstreams[0].OAuth.ClientAssertionAudience = "endpoint"
		}, nil},
		{"unknown audience", func(c *Config) {
			key("ec")(c)
			c.Upstreams[0].OAuth.ClientAssertionAudience = "tokenEndpoint"
		}, []FieldError{{"upstreams[0].oauth.clientAssertionAudience", `must be issuer or endpoint, not "tokenEndpoint"`}}},
		{"audience without a key", func(c *Config) { c.Upstreams[0].OAuth.ClientAssertionAudience = "issuer" },
			[]FieldError{{"upstreams[0].oauth.clientAssertionAudience", "needs clientKeyFile: only a client key signs assertions"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkOAuthValidation(t, tt.change, tt.want) })
	}
	// A garbled DER block: named as not parsing, its bytes not quoted.
	c := oauthBase()
	key("garbled")(c)
	_, err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), f["garbled"]+": not a usable private key: its PRIVATE KEY block does not parse") || strings.Contains(err.Error(), leakMarker) {
		t.Fatalf("a garbled key: %v", err)
	}
}

// UI-1: clientKeyFile is relative to the config file, like every path.
func TestLoadClientKeyFileRelative(t *testing.T) {
	f := keyFiles(t)
	dir := filepath.Dir(f["ec"])
	file := filepath.Join(dir, "toolgate.yaml")
	yaml := `gateway:
  publicUrl: https://tools.example.com
  credentialsKey: ` + string(goodKey) + `
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
      clientKeyFile: ec.pem
      clientKeyId: ec-1
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(file, LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }, Environ: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.Upstreams[0].OAuth; o.ClientKeyFile != f["ec"] || o.ClientKeyID != "ec-1" {
		t.Fatalf("clientKeyFile = %q, clientKeyId = %q", o.ClientKeyFile, o.ClientKeyID)
	}
}
