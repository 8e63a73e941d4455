package serve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/inspect"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/mcp/serve"
)

// OP-8: a call reads one set of rules from start to end. Rules are swapped
// while a call waits in its upstream; the call's result is inspected, and
// its policy decision audited, by the set it started under; the next call
// reads the new set.
func TestOP8CallKeepsItsRulesAcrossASwap(t *testing.T) {
	det, err := inspect.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	blockSecrets := &serve.Inspection{BySource: map[string]*serve.Inspect{
		"up": {Policy: &inspect.Policy{Inspector: det, Results: [4]inspect.Action{inspect.ActionBlock}}}}}
	rulesOf := func(id string, effect policy.Effect, tools []string, in *serve.Inspection) *serve.Rules {
		p, err := policy.New(policy.Layer{Path: "policies", Default: policy.Allow,
			Rules: []policy.Rule{{ID: id, When: `tool.name == "slow"`, Effect: effect, Reason: id}}})
		if err != nil {
			t.Fatal(err)
		}
		return &serve.Rules{Tools: tools, Policy: p, Inspection: in}
	}
	key := "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" // built here: no credential-shaped literal in the source

	for _, tc := range []struct {
		name          string
		first, second *serve.Rules
		// blocked: the first call's result is withheld for the key it
		// holds, as its own set says.
		blocked bool
	}{
		{"inspected-then-not", rulesOf("first", policy.Allow, []string{"slow"}, blockSecrets),
			rulesOf("second", policy.Deny, []string{"other"}, nil), true},
		{"not-then-inspected", rulesOf("first", policy.Allow, []string{"slow"}, nil),
			rulesOf("second", policy.Deny, []string{"other"}, blockSecrets), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memory.NewMemStore()
			s := serveEndpoint(t, serve.EndpointOptions{Audit: store})
			started, release := make(chan struct{}), make(chan struct{})
			if err := s.reg.Register(core.Tool{Name: "slow", Source: "up", RemoteName: "slow", Kind: core.KindRead, Description: "Waits.",
				Handler: func(ctx context.Context, _ json.RawMessage) (core.Result, error) {
					close(started)
					select {
					case <-release:
					case <-ctx.Done():
						return core.Result{}, ctx.Err()
					}
					return core.TextResult("token " + key), nil
				}}); err != nil {
				t.Fatal(err)
			}
			s.ep.SetRules(tc.first)
			c := testClient(s.url, "dev", "MEMBER")
			initialize(t, c)

			type answer struct {
				res json.RawMessage
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, rpcErr, err := c.Call(t.Context(), "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{}})
				if err == nil && rpcErr != nil {
					err = rpcErr
				}
				done <- answer{res, err}
			}()
			<-started
			s.ep.SetRules(tc.second)
			close(release)
			a := <-done
			if a.err != nil {
				t.Fatalf("the call: %v", a.err)
			}
			var res struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			if err := json.Unmarshal(a.res, &res); err != nil || len(res.Content) == 0 {
				t.Fatalf("result %s: %v", a.res, err)
			}
			if held := strings.Contains(res.Content[0].Text, key); res.IsError != tc.blocked || held == tc.blocked {
				t.Errorf("result (isError %v) %q: want blocked %v, as the rules the call started under say", res.IsError, res.Content[0].Text, tc.blocked)
			}
			recs, err := store.Audit(context.Background(), core.AuditQuery{})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].Tool != "slow" || recs[0].Rule != "first" {
				t.Fatalf("audit %+v: want one call of slow decided by rule first", recs)
			}

			// The next call reads the new set: slow is off its allow-list.
			res2, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{}})
			if rpcErr == nil && !strings.Contains(string(res2), `"isError":true`) {
				t.Errorf("a call after the swap ran under the old rules: %s", res2)
			}
		})
	}
}
