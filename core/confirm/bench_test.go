package confirm

import (
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/canonjson"
	"github.com/toolgate/toolgate/core/schema/schematest"
	"github.com/toolgate/toolgate/internal/store/memory"
)

func benchGate(b *testing.B) *Gate {
	b.Helper()
	g, err := NewGate(GateOptions{Secret: []byte("bench-confirm-secret-0123456789abcdef"), Ledger: memory.NewMemStore()})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkGateIssue(b *testing.B) {
	g := benchGate(b)
	canon, err := canonjson.CanonicalJSON(schematest.BenchArgs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if tok, _ := g.Issue("gh_create_issue", benchActor, benchStore, canon); tok == "" {
			b.Fatal("no token")
		}
	}
}

func BenchmarkGateVerify(b *testing.B) {
	g := benchGate(b)
	canon, err := canonjson.CanonicalJSON(schematest.BenchArgs)
	if err != nil {
		b.Fatal(err)
	}
	tok, _ := g.Issue("gh_create_issue", benchActor, benchStore, canon)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Verify("gh_create_issue", benchActor, benchStore, canon, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// The audit of every served call hashes its canonical arguments after
// taking out the confirm fields.
func BenchmarkConfirmArgs(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := ConfirmArgs(schematest.BenchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

const benchStore = "0123456789abcdef0123456789abcdef"

var benchActor = core.Actor{ID: "bench-client", Roles: []string{"viewer", "bench", "dev"}, Tenant: "acme"}
