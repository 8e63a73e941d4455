package session

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// Resumable sessions (SV-2, OP-5). A session id is sealed (AES-GCM) under a
// key every replica shares, and carries what a replica needs to continue the
// session it did not open: the endpoint, the actor, the protocol revision and
// the client's info and capabilities. A replica that does not know an id,
// but can open its seal and serves the actor it names, adopts the session as
// if the client had initialized there. This was chosen over session records
// in the database: it costs no round trip per request, and it works on a
// single replica over SQLite too (a restarted gateway continues its
// sessions). What a seal cannot carry is the end of a session: ended ids are
// remembered (bounded, tombstones.go) and, over a shared store, broadcast to
// the other replicas; an id older than the adoption window (a day, or the
// idle timeout if longer) is not continued elsewhere, so an ended one stays
// ended once its tombstone is forgotten.
//
// The seal holds the actor, not a hash of the credential: OAuth access
// tokens are replaced within a session's life, and the actor is re-derived
// from the credential on every request anyway (AU-3).

// Sealed is what a resumable id carries.
type Sealed struct {
	Path          string          `json:"p"`
	Actor         string          `json:"a"`
	Tenant        string          `json:"t,omitempty"`
	Protocol      string          `json:"v,omitempty"`
	ClientName    string          `json:"cn,omitempty"`
	ClientVersion string          `json:"cv,omitempty"`
	Capabilities  json.RawMessage `json:"c,omitempty"`
	Issued        int64           `json:"iat"`
}

// maxSealedCapabilities bounds the client capabilities an id carries, so
// the id stays a reasonable header; larger ones are left out (the adopted
// session then has none, as for a client that declared none).
const maxSealedCapabilities = 1024

// maxSealedText bounds each of the client's name, version and protocol
// revision an id carries: they are the client's to choose, and the id
// goes back and forth in a header on every request. Longer ones are cut.
const maxSealedText = 128

// sealAD binds seals to their use: the same key sealing anything else
// cannot produce a session id.
var sealAD = []byte("toolgate session id v1")

// Seal seals and opens session ids under a key every replica shares.
type Seal struct{ aead cipher.AEAD }

// NewSeal is a seal under key (16, 24 or 32 bytes).
func NewSeal(key []byte) (*Seal, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Seal{aead: aead}, nil
}

// Seal is the id that carries c.
func (s *Seal) Seal(c Sealed) string {
	if len(c.Capabilities) > maxSealedCapabilities {
		c.Capabilities = nil
	}
	c.Protocol, c.ClientName, c.ClientVersion = cutText(c.Protocol), cutText(c.ClientName), cutText(c.ClientVersion)
	plain, _ := json.Marshal(c)
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, sealAD))
}

// cutText is s cut to maxSealedText bytes, at a rune boundary.
func cutText(s string) string {
	if len(s) <= maxSealedText {
		return s
	}
	n := maxSealedText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Open reads what id carries; false when it is not an id this key sealed.
func (s *Seal) Open(id string) (Sealed, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return Sealed{}, false
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], sealAD)
	if err != nil {
		return Sealed{}, false
	}
	var c Sealed
	if json.Unmarshal(plain, &c) != nil {
		return Sealed{}, false
	}
	return c, true
}
