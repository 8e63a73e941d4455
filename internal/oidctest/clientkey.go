package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"testing"
)

// PKJWTClient is the provider's client that authenticates with
// private_key_jwt (RFC 7523) under the public keys PKJWTEnv registers, with
// the redirect URIs of PRE_REDIRECTS.
const PKJWTClient = "toolgate-pkjwt"

// ClientKey is a fresh private key for PKJWTClient: PEM is what
// upstreams[].oauth.clientKeyFile holds, JWK its public half.
type ClientKey struct {
	PEM    []byte
	JWK    map[string]any
	Signer crypto.Signer
}

// NewClientKey makes an RSA 2048 ("RSA") or EC P-256 ("EC") key named kid.
func NewClientKey(t testing.TB, kty, kid string) ClientKey {
	t.Helper()
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	var k ClientKey
	switch kty {
	case "RSA":
		rk, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		k.Signer = rk
		k.JWK = map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
			"n": b64(rk.N.Bytes()), "e": b64(big.NewInt(int64(rk.E)).Bytes())}
	case "EC":
		ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k.Signer = ek
		pub, err := ek.PublicKey.Bytes() // 0x04 || X || Y, 32 bytes each
		if err != nil {
			t.Fatal(err)
		}
		k.JWK = map[string]any{"kty": "EC", "kid": kid, "use": "sig", "alg": "ES256", "crv": "P-256",
			"x": b64(pub[1:33]), "y": b64(pub[33:])}
	default:
		t.Fatalf("NewClientKey: kty %q", kty)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k.Signer)
	if err != nil {
		t.Fatal(err)
	}
	k.PEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return k
}

// PKJWTEnv registers PKJWTClient at the provider with the public halves
// of keys.
func PKJWTEnv(keys ...ClientKey) string {
	set := map[string]any{"keys": []map[string]any{}}
	for _, k := range keys {
		set["keys"] = append(set["keys"].([]map[string]any), k.JWK)
	}
	b, _ := json.Marshal(set)
	return "PKJWT_JWKS=" + string(b)
}
