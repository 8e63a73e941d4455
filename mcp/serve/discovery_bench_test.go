package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/mcp/serve"
)

// benignRegistry registers the real definitions of testdata/review/benign
// and, to reach 1,000, linear's and cloudflare's again under two more
// upstreams; every fourth upstream's tools need a role the benchmark's
// actor lacks, so searches filter as they rank.
func benignRegistry(b *testing.B) *core.Registry {
	files, err := filepath.Glob("../../testdata/review/benign/*.json")
	if err != nil || len(files) == 0 {
		b.Fatalf("no benign definitions: %v", err)
	}
	files = append(files, "linear2", "cloudflare2")
	reg := core.NewRegistry(nil)
	run := func(context.Context, json.RawMessage) (core.Result, error) { return core.TextResult("ok"), nil }
	for i, f := range files {
		up := strings.TrimSuffix(filepath.Base(f), ".json")
		if !strings.HasSuffix(f, ".json") {
			up, f = f, "../../testdata/review/benign/"+strings.TrimSuffix(f, "2")+".json"
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var file struct {
			Tools []struct {
				Name        string          `json:"name"`
				Title       string          `json:"title"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(raw, &file); err != nil {
			b.Fatal(err)
		}
		var roles []string
		if i%4 == 3 {
			roles = []string{"ADMIN"}
		}
		for _, t := range file.Tools {
			if err := reg.Register(core.Tool{Name: core.ToolName(up, t.Name), Source: up, RemoteName: t.Name, Kind: core.KindRead,
				Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, Roles: roles, Handler: run}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return reg
}

// BenchmarkDiscoverySearch is search_tools at an endpoint over 1,000 real
// tools, per request over loopback: the JSON-RPC request read, the
// actor's filter (roles, and a policy of ten rules one of which hides a
// tool whatever the arguments) applied while ranking, the answer written
// (DS-1, DS-3). It prints p50 and p95 besides ns/op; nothing is asserted.
func BenchmarkDiscoverySearch(b *testing.B) {
	reg := benignRegistry(b)
	var rules []policy.Rule
	for i := range 9 {
		rules = append(rules, policy.Rule{ID: fmt.Sprint("r", i), When: fmt.Sprintf(`tool.name == "nothing_%d" && args.x == 1`, i), Effect: policy.Deny, Reason: "no"})
	}
	rules = append(rules, policy.Rule{ID: "hide", When: `tool.name == "github_create_issue"`, Effect: policy.Deny, Reason: "no"})
	pol, err := policy.New(policy.Layer{Path: "policies", Default: policy.Allow, Rules: rules})
	if err != nil {
		b.Fatal(err)
	}
	ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: "/mcp", Registry: reg, Actor: testActor, Policy: pol, Discovery: &serve.Discovery{}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(testAuth(ep))
	b.Cleanup(func() {
		_ = ep.Close(context.Background())
		srv.Close()
	})
	c := testClient(srv.URL+"/mcp", "m", "MEMBER")
	if _, err := c.Initialize(b.Context()); err != nil {
		b.Fatal(err)
	}
	queries := []string{"open a new bug report in our GitHub project", "post a message to a Slack channel",
		"scale the web deployment in the cluster", "create a storage bucket on Cloudflare R2", "list my open pull requests",
		"refund a customer's payment", "take a screenshot of the page", "read the logs of a pod"}
	search := func(q string) {
		_, rpcErr, err := c.Call(b.Context(), "tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": q}})
		if err != nil || rpcErr != nil {
			b.Fatalf("search %q: %v %v", q, err, rpcErr)
		}
	}
	search(queries[0]) // the index is built at the first search
	var lat []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		search(queries[i%len(queries)])
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*95/100].Nanoseconds()), "p95-ns")
}
