package upstreamoauth

import (
	"crypto"
	"crypto/sha256"
	"fmt"
	"net/url"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgate/toolgate/core/credentials"
)

// private_key_jwt (RFC 7523 §2.2, OpenID Connect Core §9): a pre-registered
// client with a key proves itself at the token and revocation endpoints
// with a short-lived JWT it signs, instead of a secret.

// ClientAssertionType is the client_assertion_type of a JWT assertion.
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionTTL bounds how long a client assertion can be replayed; the
// server also refuses a jti it has seen.
const assertionTTL = time.Minute

// ClientKey is the private key of a pre-registered client that
// authenticates with private_key_jwt. It prints as its algorithm and kid,
// never as key material.
type ClientKey struct {
	signer crypto.Signer
	method jwt.SigningMethod
	kid    string
	sum    [32]byte // of the PEM, to tell keys apart on reload
	// endpointAudience: the assertion's aud is the URL of the endpoint it
	// is sent to, not the server's issuer (see AudienceEndpoint).
	endpointAudience bool
}

// Assertion audiences: which value a client assertion's aud carries.
const (
	// AudienceIssuer is the authorization server's issuer identifier,
	// which RFC 7523bis prefers and servers such as oidc-provider accept
	// at every endpoint.
	AudienceIssuer = "issuer"
	// AudienceEndpoint is the URL of the endpoint the assertion is sent
	// to (token, revocation), which servers such as Okta and Microsoft
	// Entra ID require.
	AudienceEndpoint = "endpoint"
)

// NewClientKey parses a PEM private key (RSA: RS256, EC P-256: ES256) and
// the key id to name in the assertion's header ("" for none).
func NewClientKey(pemBytes []byte, kid string) (*ClientKey, error) {
	signer, alg, err := credentials.ParseClientKey(pemBytes)
	if err != nil {
		return nil, err
	}
	return &ClientKey{signer: signer, method: jwt.GetSigningMethod(alg), kid: kid, sum: sha256.Sum256(pemBytes)}, nil
}

// WithAudience returns k signing assertions for audience: AudienceIssuer
// ("" too) or AudienceEndpoint.
func (k *ClientKey) WithAudience(audience string) (*ClientKey, error) {
	switch audience {
	case "", AudienceIssuer:
		c := *k
		c.endpointAudience = false
		return &c, nil
	case AudienceEndpoint:
		c := *k
		c.endpointAudience = true
		return &c, nil
	}
	return nil, fmt.Errorf("unknown client assertion audience %q: %s or %s", audience, AudienceIssuer, AudienceEndpoint)
}

// Alg is the JWS algorithm the key signs with.
func (k *ClientKey) Alg() string { return k.method.Alg() }

func (k *ClientKey) String() string {
	if k.kid == "" {
		return "private_key_jwt " + k.Alg()
	}
	return "private_key_jwt " + k.Alg() + " kid " + k.kid
}

// Equal reports whether k and o are the same key with the same key id.
func (k *ClientKey) Equal(o *ClientKey) bool {
	if k == nil || o == nil {
		return k == o
	}
	return k.sum == o.sum && k.kid == o.kid && k.endpointAudience == o.endpointAudience
}

// assertion signs a client assertion for clientID to present at endpoint
// of the authorization server issuer: its aud is the issuer, or the
// endpoint's URL where the key says so. It is timed by the wall clock, as
// the server that checks it is.
func (k *ClientKey) assertion(clientID, issuer, endpoint string) (string, error) {
	aud := issuer
	if k.endpointAudience && endpoint != "" {
		aud = endpoint
	}
	now := time.Now()
	claims := jwt.RegisteredClaims{
		Issuer: clientID, Subject: clientID, Audience: jwt.ClaimStrings{aud}, ID: newID(),
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-5 * time.Second)),
		ExpiresAt: jwt.NewNumericDate(now.Add(assertionTTL)),
	}
	t := jwt.NewWithClaims(k.method, claims)
	if k.kid != "" {
		t.Header["kid"] = k.kid
	}
	s, err := t.SignedString(k.signer)
	if err != nil {
		return "", fmt.Errorf("signing the client assertion (%s): %w", k.Alg(), err)
	}
	return s, nil
}

// authenticate adds the client's authentication to a form posted to a token,
// revocation or exchange endpoint, and reports whether a secret goes in the Basic
// header instead (client_secret_basic). A public client (registered
// without a secret, or a metadata document) sends its client_id alone.
func (id clientIdentity) authenticate(form url.Values, endpoint string) (basic bool, err error) {
	switch {
	case id.key != nil:
		a, err := id.key.assertion(id.ID, id.audience, endpoint)
		if err != nil {
			return false, err
		}
		form.Set("client_id", id.ID)
		form.Set("client_assertion_type", ClientAssertionType)
		form.Set("client_assertion", a)
		return false, nil
	case id.Secret != "":
		return true, nil
	}
	form.Set("client_id", id.ID)
	return false, nil
}
