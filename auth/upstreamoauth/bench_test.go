package upstreamoauth

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/internal/store/sqlite"
)

// BenchmarkToken is what a perActor call pays to find its actor's token:
// a store read and an AES-GCM open, per request sent upstream (UI-3).
func BenchmarkToken(b *testing.B) {
	for _, tc := range []struct {
		name string
		open func(b *testing.B) Store
	}{
		{"memory", func(*testing.B) Store { return memory.NewMemStore() }},
		{"sqlite", func(b *testing.B) Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "t.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st := tc.open(b)
			m, err := New(Options{PublicURL: "https://tools.example.com", Key: bytes.Repeat([]byte("k"), 32), Store: st},
				[]Upstream{{Name: "crm", URL: "https://crm.example.com/mcp", Credentials: PerActor}})
			if err != nil {
				b.Fatal(err)
			}
			c := core.Connection{ID: "conn_1", Upstream: "crm", ActorID: "alice", CreatedAt: time.Now(), LastUsed: time.Now()}
			ts := tokenSet{AccessToken: string(bytes.Repeat([]byte("a"), 800)), RefreshToken: "r", Expiry: time.Now().Add(time.Hour),
				Issuer: "https://as.example.com", TokenEndpoint: "https://as.example.com/token", Resource: "https://crm.example.com/mcp"}
			if err := m.seal(&c, ts); err != nil {
				b.Fatal(err)
			}
			if _, err := st.PutConnection(context.Background(), c); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := m.Token(ctx, "crm", "alice"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
