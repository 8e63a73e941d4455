package credentials

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/store/memory"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, KeyBytes) }

func mustKeyring(t *testing.T, cur, prev []byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(cur, prev)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// UI-3: a sealed record opens only with its key and only on its own
// connection; its bytes do not hold the plaintext.
func TestSealBindsRecordToConnection(t *testing.T) {
	k := mustKeyring(t, key(1), nil)
	secret := []byte(`{"access_token":"at-SECRET-1"}`)
	c := core.Connection{ID: "c1", Upstream: "crm", ActorID: "alice"}
	k.Seal(&c, secret)
	if bytes.Contains(c.Sealed, []byte("SECRET")) || c.KeyID != k.CurrentID() {
		t.Fatalf("sealed %q key %q", c.Sealed, c.KeyID)
	}
	if p, stale, err := k.Open(c); err != nil || stale || !bytes.Equal(p, secret) {
		t.Fatalf("Open = %q, %v, %v", p, stale, err)
	}
	moved := []func(*core.Connection){
		func(c *core.Connection) { c.ActorID = "bob" },
		func(c *core.Connection) { c.Upstream = "other" },
		func(c *core.Connection) { c.ID = "c2" },
		func(c *core.Connection) {
			c.Sealed = append(bytes.Clone(c.Sealed[:len(c.Sealed)-1]), c.Sealed[len(c.Sealed)-1]^1)
		},
		func(c *core.Connection) { c.Sealed = c.Sealed[:5] },
	}
	for i, change := range moved {
		m := c
		change(&m)
		if _, _, err := k.Open(m); !errors.Is(err, ErrUnsealable) {
			t.Errorf("case %d: Open of a moved or altered record = %v, want ErrUnsealable", i, err)
		}
	}
	if _, _, err := mustKeyring(t, key(2), nil).Open(c); !errors.Is(err, ErrUnsealable) {
		t.Errorf("another key opened the record: %v", err)
	}
	if _, err := NewKeyring(key(1)[:31], nil); !errors.Is(err, ErrKeyLength) {
		t.Errorf("a 31-byte key: %v", err)
	}
}

// UI-3: rotating the key: with the old key as previous, old records open
// (stale), Rekey re-seals them, and after it the old key can go.
func TestRotation(t *testing.T) {
	ctx := context.Background()
	s := memory.NewMemStore()
	defer s.Close()
	old := mustKeyring(t, key(1), nil)
	for _, actor := range []string{"alice", "bob", core.SharedActor} {
		c := core.Connection{ID: "c-" + actor, Upstream: "crm", ActorID: actor}
		old.Seal(&c, []byte("tokens of "+actor))
		if _, err := s.PutConnection(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// A record sealed with a key that is neither.
	stray := core.Connection{ID: "c-stray", Upstream: "docs", ActorID: "carol"}
	mustKeyring(t, key(9), nil).Seal(&stray, []byte("x"))
	if _, err := s.PutConnection(ctx, stray); err != nil {
		t.Fatal(err)
	}

	next := mustKeyring(t, key(2), key(1))
	c, _ := s.ConnectionFor(ctx, "crm", "alice")
	if p, stale, err := next.Open(c); err != nil || !stale || string(p) != "tokens of alice" {
		t.Fatalf("Open with the previous key = %q, %v, %v", p, stale, err)
	}
	r, err := next.Rekey(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if r.Resealed != 3 || r.Current != 0 || len(r.Unsealable) != 1 || r.Unsealable[0] != "c-stray" {
		t.Fatalf("Rekey = %+v", r)
	}
	if r, _ := next.Rekey(ctx, s); r.Resealed != 0 || r.Current != 3 {
		t.Fatalf("second Rekey = %+v", r)
	}
	only := mustKeyring(t, key(2), nil)
	for _, actor := range []string{"alice", "bob", core.SharedActor} {
		c, _ := s.ConnectionFor(ctx, "crm", actor)
		if p, stale, err := only.Open(c); err != nil || stale || string(p) != "tokens of "+actor {
			t.Errorf("%s after rekey: %q, %v, %v", actor, p, stale, err)
		}
	}
}
