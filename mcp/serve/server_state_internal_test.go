package serve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

// stateCall resolves a call of the action tool "act" with args.
func stateCall(t *testing.T, reg *core.Registry, actor core.Actor, args string) *core.ToolCall {
	t.Helper()
	c, err := reg.Resolve(context.Background(), actor, nil, "act", json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// CF-6: a requestState is good for its actor, tool and arguments, once,
// until it expires; anything else is refused with its reason, and only a
// confirming answer confirms.
func TestRequestStates(t *testing.T) {
	reg := core.NewRegistry(nil)
	if err := reg.Register(core.Tool{Name: "act", Kind: core.KindAction, InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, json.RawMessage) (core.Result, error) { return core.Result{}, nil }}); err != nil {
		t.Fatal(err)
	}
	alice, bob := core.Actor{ID: "alice"}, core.Actor{ID: "bob"}
	yes := map[string]json.RawMessage{confirmInputKey: json.RawMessage(`{"action":"accept","content":{"confirm":true}}`)}
	no := map[string]json.RawMessage{confirmInputKey: json.RawMessage(`{"action":"decline"}`)}
	s := newRequestStates([]byte("a key of the endpoint, 32 bytes!"))
	c := stateCall(t, reg, alice, `{"text":"x"}`)

	state, err := s.seal(alice, c, "token-1")
	if err != nil || len(state) > 600 {
		t.Fatalf("seal: %d bytes, %v", len(state), err)
	}
	refusals := []struct {
		name, state string
		actor       core.Actor
		args        string
		answers     map[string]json.RawMessage
		want        string
	}{
		{"another actor", state, bob, `{"text":"x"}`, yes, "another caller"},
		{"other arguments", state, alice, `{"text":"y"}`, yes, "another caller"},
		{"forged", strings.Replace(state, ".", ".x", 1), alice, `{"text":"x"}`, yes, "not one this gateway handed out"},
		{"another gateway's", mustSeal(t, newRequestStates([]byte("another key of 32 bytes, at last")), alice, c), alice, `{"text":"x"}`, yes, "not one this gateway handed out"},
		{"oversized", strings.Repeat("a", maxRequestState+1), alice, `{"text":"x"}`, yes, "at most"},
	}
	for _, r := range refusals {
		if _, _, err := s.open(r.state, r.actor, stateCall(t, reg, r.actor, r.args), r.answers); err == nil || !strings.Contains(err.Error(), r.want) || !strings.Contains(err.Error(), "nothing ran") {
			t.Errorf("%s: %v", r.name, err)
		}
	}
	confirmed, token, err := s.open(state, alice, c, yes)
	if err != nil || !confirmed || token != "token-1" {
		t.Fatalf("the genuine answer: %v %q %v", confirmed, token, err)
	}
	if _, _, err := s.open(state, alice, c, yes); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Errorf("replayed: %v", err)
	}

	declined := mustSeal(t, s, alice, c)
	if confirmed, _, err := s.open(declined, alice, c, no); err != nil || confirmed {
		t.Errorf("a declining answer: %v %v", confirmed, err)
	}
	missing := mustSeal(t, s, alice, c)
	if _, _, err := s.open(missing, alice, c, nil); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("no answer: %v", err)
	}

	s.ttl = -time.Minute
	expired := mustSeal(t, s, alice, c)
	if _, _, err := s.open(expired, alice, c, yes); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: %v", err)
	}
}

func mustSeal(t *testing.T, s *requestStates, actor core.Actor, c *core.ToolCall) string {
	t.Helper()
	state, err := s.seal(actor, c, "token-1")
	if err != nil {
		t.Fatal(err)
	}
	return state
}
