package core

// Benchmarks of the per-call hot paths in core (QB-2). CI runs them once
// (-benchtime=1x) so they keep compiling; `go test -run xxx -bench . ./core`
// measures them.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// benchSchema is a typical tool input schema: strings with limits and a
// pattern, an enum, an integer range, an array and a nested object.
const benchSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 200},
    "repo": {"type": "string", "pattern": "^[a-z0-9-]{1,40}/[a-z0-9._-]{1,100}$"},
    "state": {"enum": ["open", "closed", "all"]},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "labels": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
    "options": {"type": "object", "properties": {"exact": {"type": "boolean"}}, "additionalProperties": false}
  },
  "required": ["query"],
  "additionalProperties": false
}`

// benchArgs satisfy benchSchema.
var benchArgs = json.RawMessage(`{"query":"gateway latency","repo":"toolgate/toolgate","state":"open","limit":20,"labels":["perf","bench"],"options":{"exact":true}}`)

const benchTools = 5000

var benchActor = Actor{ID: "bench-client", Roles: []string{"viewer", "bench", "dev"}, Tenant: "acme"}

// benchRegistry holds benchTools imported read tools of 50 upstreams, each
// needing one of two roles, all sharing one compiled schema (compiling 5,000
// is not what these benchmarks measure) and answering a fixed result.
func benchRegistry(b *testing.B) (*Registry, []string) {
	b.Helper()
	schema, err := CompileSchema(json.RawMessage(benchSchema))
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
		if err := r.register(t, schema); err != nil {
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

func BenchmarkSchemaValidate(b *testing.B) {
	s, err := CompileSchema(json.RawMessage(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate(benchArgs); err != nil {
				b.Fatal(err)
			}
		}
	})
	bad := json.RawMessage(`{"query":"","repo":"No Such Repo","limit":1000,"extra":1}`)
	b.Run("invalid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s.Validate(bad) == nil {
				b.Fatal("accepted")
			}
		}
	})
}

func BenchmarkCompileSchema(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileSchema(json.RawMessage(benchSchema)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchGate(b *testing.B) *Gate {
	b.Helper()
	g, err := NewGate(GateOptions{Secret: []byte("bench-confirm-secret-0123456789abcdef"), Ledger: NewMemStore()})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkGateIssue(b *testing.B) {
	g := benchGate(b)
	canon, err := CanonicalJSON(benchArgs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if tok, _ := g.Issue("gh_create_issue", benchActor, canon); tok == "" {
			b.Fatal("no token")
		}
	}
}

func BenchmarkGateVerify(b *testing.B) {
	g := benchGate(b)
	canon, err := CanonicalJSON(benchArgs)
	if err != nil {
		b.Fatal(err)
	}
	tok, _ := g.Issue("gh_create_issue", benchActor, canon)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Verify("gh_create_issue", benchActor, canon, tok); err != nil {
			b.Fatal(err)
		}
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
		if _, err := r.Invoke(ctx, benchActor, names[i%len(names)], benchArgs); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// The audit of every served call hashes its canonical arguments after
// taking out the confirm fields.
func BenchmarkConfirmArgs(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := ConfirmArgs(benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonicalJSON(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CanonicalJSON(benchArgs); err != nil {
			b.Fatal(err)
		}
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
