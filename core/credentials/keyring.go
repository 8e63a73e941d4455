// Package credentials seals upstream OAuth tokens for the store (UI-3):
// AES-256-GCM under the gateway's credentials key, each sealed record
// bound to its connection, and the rotation from a previous key.
package credentials

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/core"
)

// KeyBytes is the length of a credentials key.
const KeyBytes = 32

var (
	// ErrUnsealable: a sealed record that no key held opens: sealed with
	// another key, altered, or moved to another connection.
	ErrUnsealable = errors.New("stored upstream tokens cannot be decrypted with gateway.credentialsKey or credentialsKeyPrevious (another key, or the record was altered)")
	// ErrKeyLength: a key that is not KeyBytes long.
	ErrKeyLength = fmt.Errorf("a credentials key must be %d bytes", KeyBytes)
)

// Keyring seals with the current key and opens with it or the previous one
// (UI-3). It is safe for concurrent use. Its keys never leave it: KeyID is a
// one-way tag of a key, not the key.
type Keyring struct {
	cur, prev     cipher.AEAD
	curID, prevID string
}

// NewKeyring makes a keyring; previous is nil when no rotation is under way.
func NewKeyring(current, previous []byte) (*Keyring, error) {
	k := &Keyring{}
	var err error
	if k.cur, k.curID, err = aead(current); err != nil {
		return nil, err
	}
	if previous != nil {
		if k.prev, k.prevID, err = aead(previous); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func aead(key []byte) (cipher.AEAD, string, error) {
	if len(key) != KeyBytes {
		return nil, "", ErrKeyLength
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, "", err
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return nil, "", err
	}
	return g, KeyID(key), nil
}

// KeyID is a short one-way tag of a key, stored beside what it sealed so a
// rotation finds the records still sealed with the previous key.
func KeyID(key []byte) string {
	h := sha256.Sum256(append([]byte("toolgate credentials key id\x00"), key...))
	return hex.EncodeToString(h[:8])
}

// CurrentID is the KeyID of the current key.
func (k *Keyring) CurrentID() string { return k.curID }

// associated binds a sealed record to its connection: a record copied onto
// another connection's row (another actor's, another upstream's) does not
// open.
func associated(c core.Connection) []byte {
	return []byte("toolgate/upstream-connection/v1\x00" + c.ID + "\x00" + c.Upstream + "\x00" + c.ActorID)
}

// Seal encrypts plaintext for c with the current key, setting c.Sealed and
// c.KeyID.
func (k *Keyring) Seal(c *core.Connection, plaintext []byte) {
	nonce := make([]byte, k.cur.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand never fails (Go 1.24+)
	c.Sealed = k.cur.Seal(nonce, nonce, plaintext, associated(*c))
	c.KeyID = k.curID
}

// Open decrypts c's tokens. stale reports that they were sealed with the
// previous key: the caller re-seals them with Seal and writes them back.
func (k *Keyring) Open(c core.Connection) (plaintext []byte, stale bool, err error) {
	try := func(g cipher.AEAD) ([]byte, error) {
		n := g.NonceSize()
		if len(c.Sealed) < n+g.Overhead() {
			return nil, ErrUnsealable
		}
		return g.Open(nil, c.Sealed[:n], c.Sealed[n:], associated(c))
	}
	if c.KeyID != k.prevID || k.prev == nil {
		if p, err := try(k.cur); err == nil {
			return p, false, nil
		}
	}
	if k.prev != nil {
		if p, err := try(k.prev); err == nil {
			return p, true, nil
		}
	}
	return nil, false, fmt.Errorf("connection %s: %w", c.ID, ErrUnsealable)
}

// RekeyReport is what Rekey did.
type RekeyReport struct {
	Resealed, Current int
	// Unsealable lists the ids of connections no key held opens.
	Unsealable []string
}

// Rekey re-seals with the current key every stored connection still sealed
// with the previous one (UI-3), so the previous key can then be dropped. A
// connection another writer updated meanwhile is left to that writer, who
// sealed it with its current key.
func (k *Keyring) Rekey(ctx context.Context, s core.ConnectionStore) (RekeyReport, error) {
	var r RekeyReport
	all, err := s.Connections(ctx)
	if err != nil {
		return r, err
	}
	for _, c := range all {
		p, stale, err := k.Open(c)
		switch {
		case err != nil:
			r.Unsealable = append(r.Unsealable, c.ID)
			continue
		case !stale:
			r.Current++
			continue
		}
		next := c
		k.Seal(&next, p)
		ok, err := s.UpdateConnection(ctx, next, c.Version)
		if err != nil {
			return r, err
		}
		if ok {
			r.Resealed++
		}
	}
	return r, nil
}
