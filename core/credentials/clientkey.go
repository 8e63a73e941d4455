package credentials

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// MinClientKeyRSABits is the smallest RSA key a private_key_jwt client may
// sign with (RS256).
const MinClientKeyRSABits = 2048

// ErrClientKey: a client key file that is not a usable private key. The
// messages that wrap it name what is wrong, never any part of the key.
var ErrClientKey = errors.New("not a usable private key")

// ParseClientKey reads the PEM private key a pre-registered OAuth client
// signs its client assertions with (RFC 7523, private_key_jwt; UI-1): an
// RSA key of at least MinClientKeyRSABits (RS256) or an EC key on P-256
// (ES256), in PKCS #8, PKCS #1 or SEC 1 form. alg is the JWS algorithm the
// key signs with.
func ParseClientKey(data []byte) (key crypto.Signer, alg string, err error) {
	var b *pem.Block
	for rest := data; ; {
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, "", fmt.Errorf("%w: no PEM private key block in it (want -----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or EC PRIVATE KEY)", ErrClientKey)
		}
		if b.Type == "PRIVATE KEY" || b.Type == "RSA PRIVATE KEY" || b.Type == "EC PRIVATE KEY" {
			break
		}
		if b.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, "", fmt.Errorf("%w: the key is encrypted; give an unencrypted key and protect the file instead", ErrClientKey)
		}
	}
	if _, encrypted := b.Headers["Proc-Type"]; encrypted {
		return nil, "", fmt.Errorf("%w: the key is encrypted; give an unencrypted key and protect the file instead", ErrClientKey)
	}
	var parsed any
	switch b.Type {
	case "RSA PRIVATE KEY":
		parsed, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		parsed, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		parsed, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		// x509's messages describe the structure, never the key's bytes.
		return nil, "", fmt.Errorf("%w: its %s block does not parse (%v)", ErrClientKey, b.Type, err)
	}
	switch k := parsed.(type) {
	case *rsa.PrivateKey:
		if n := k.N.BitLen(); n < MinClientKeyRSABits {
			return nil, "", fmt.Errorf("%w: an RSA key of %d bits; RS256 needs at least %d", ErrClientKey, n, MinClientKeyRSABits)
		}
		return k, "RS256", nil
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, "", fmt.Errorf("%w: an EC key on %s; ES256 needs P-256", ErrClientKey, k.Curve.Params().Name)
		}
		return k, "ES256", nil
	}
	return nil, "", fmt.Errorf("%w: a %T key; use RSA (RS256) or EC P-256 (ES256)", ErrClientKey, parsed)
}
