package core

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/core/schema"
	"github.com/toolgate/toolgate/core/schema/schematest"
)

const benchTools = 5000

var benchActor = Actor{ID: "bench-client", Roles: []string{"viewer", "bench", "dev"}, Tenant: "acme"}

// benchRegistry holds benchTools imported read tools of 50 upstreams, each
// needing one of two roles, all sharing one compiled schema (compiling 5,000
// is not what these benchmarks measure) and answering a fixed result.
func benchRegistry(b *testing.B) (*Registry, []string) {
	b.Helper()
	compiled, err := schema.CompileSchema(json.RawMessage(schematest.BenchSchema))
	if err != nil {
		b.Fatal(err)
	}
	res := TextResult("ok")
	handler := func(context.Context, json.RawMessage) (Result, error) { return res, nil }
	r := NewRegistry(nil)
	names := make([]string, 0, benchTools)
	for i := range benchTools {
		up := fmt.Sprintf("up%02d", i%50)
		remote := fmt.Sprintf("tool_%04d", i)
		t := Tool{
			Name: ToolName(up, remote), Source: up, RemoteName: remote, Kind: KindRead,
			Description: "Bench tool.", Roles: []string{"admin", "bench"}, Handler: handler,
		}
		if err := r.RegisterCompiled(t, compiled); err != nil {
			b.Fatal(err)
		}
		names = append(names, t.Name)
	}
	return r, names
}

func BenchmarkRegistryGet(b *testing.B) {
	r, names := benchRegistry(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := r.Get(names[i%len(names)]); !ok {
			b.Fatal("missing")
		}
		i++
	}
}

func BenchmarkRegistryAllowed(b *testing.B) {
	r, names := benchRegistry(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name  string
		allow []string
	}{{"allow=all", nil}, {"allow=glob", []string{"up0*", "up1*", "up2*", "up3*", "up4*"}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := r.Allowed(ctx, benchActor, bc.allow, names[i%len(names)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkRolePolicyAllows(b *testing.B) {
	t := &Tool{Name: "gh_search", Roles: []string{"admin", "bench"}}
	b.ReportAllocs()
	for b.Loop() {
		if !(RolePolicy{}).Allows(benchActor, t) {
			b.Fatal("refused")
		}
	}
}

func BenchmarkToolName(b *testing.B) {
	for _, bc := range []struct{ name, prefix, remote string }{
		{"plain", "github", "search_issues"},
		{"reshaped", "files", "read file.v2/utf8"},
		{"truncated", "enterprise_search", "find_documents_by_owner_and_modification_date_and_tag_set"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ToolName(bc.prefix, bc.remote) == "" {
					b.Fatal("empty")
				}
			}
		})
	}
}

// BenchmarkRegistryInvoke is one call through every registry gate (lookup,
// enabled, role policy, schema validation) to a handler answering a fixed
// result: the JSON passes through untouched.
func BenchmarkRegistryInvoke(b *testing.B) {
	r, names := benchRegistry(b)
	ctx := WithCall(context.Background(), Call{Endpoint: "/mcp", Channel: "mcp", CallID: "c1", IdempotencyKey: "k1"})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := r.Invoke(ctx, benchActor, names[i%len(names)], schematest.BenchArgs); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkBusPublish is the CallFinished event every served call
// publishes, with one subscriber draining it.
func BenchmarkBusPublish(b *testing.B) {
	bus := NewBus()
	_, sub := bus.Subscribe(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range sub.C() {
			if _, ok := ev.Data.(Resync); ok {
				sub.Resync()
			}
		}
	}()
	rec := AuditRecord{Endpoint: "/mcp", ActorID: "bench-client", Tool: "gh_search", Source: "gh", RemoteName: "search", Outcome: "ok"}
	b.ReportAllocs()
	for b.Loop() {
		bus.Publish(CallFinished{Record: rec})
	}
	sub.Close()
	<-done
}
