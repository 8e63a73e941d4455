package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/inspect"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/mcp/serve"
)

// brokenFlows is a store whose flow labels fail to be read or written
// while told so.
type brokenFlows struct {
	*memory.MemStore
	reads, writes atomic.Bool
}

var errFlowsDown = errors.New("flow table unreachable")

func (b *brokenFlows) AddFlowLabels(ctx context.Context, key string, labels []string, now, until time.Time) error {
	if b.writes.Load() {
		return errFlowsDown
	}
	return b.MemStore.AddFlowLabels(ctx, key, labels, now, until)
}

func (b *brokenFlows) FlowLabels(ctx context.Context, key string, now time.Time) ([]string, time.Time, error) {
	if b.reads.Load() {
		return nil, time.Time{}, errFlowsDown
	}
	return b.MemStore.FlowLabels(ctx, key, now)
}

// IN-3: when the store cannot record what a call's result adds to its
// session's labels, the result is withheld (else the labels would live on
// this replica only, and the session's next request elsewhere would
// escape a rule on them); when it cannot read a session's labels, the
// call is refused rather than decided without them. The client reads why
// in plain words, never the store's error, which goes to the log; the
// found value reaches neither. Once the store works again, so do calls.
func TestFlowStoreDownFailsClosedIN3(t *testing.T) {
	det, err := inspect.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	const email = "jane.roe@example.org"
	store := &brokenFlows{MemStore: memory.NewMemStore()}
	var logs bytes.Buffer
	opts := serve.EndpointOptions{FlowLabels: store, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		SessionKey: []byte("0123456789abcdef0123456789abcdef"),
		Inspection: &serve.Inspection{FlowWindow: time.Hour, BySource: map[string]*serve.Inspect{
			"crm": {Policy: &inspect.Policy{Inspector: det, Results: [4]inspect.Action{inspect.ActionOff, inspect.ActionFlag}}}}}}
	s := serveEndpoint(t, opts)
	if err := s.reg.Register(core.Tool{Name: "crm_lookup", Source: "crm", RemoteName: "lookup", Kind: core.KindRead, Description: "Looks up.",
		Handler: func(context.Context, json.RawMessage) (core.Result, error) {
			return core.TextResult("customer: " + email), nil
		}}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	lookup := func(sessionOf string) (result, string) {
		t.Helper()
		c := testClient(s.url, sessionOf, "MEMBER")
		initialize(t, c)
		raw, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "crm_lookup", "arguments": map[string]any{}})
		if rpcErr != nil {
			t.Fatalf("tools/call: %v", rpcErr)
		}
		var r result
		if err := json.Unmarshal(raw, &r); err != nil || len(r.Content) == 0 {
			t.Fatalf("result %s: %v", raw, err)
		}
		return r, string(raw)
	}

	store.writes.Store(true)
	r, raw := lookup("dev")
	if !r.IsError || !strings.Contains(r.Content[0].Text, "withheld") || strings.Contains(raw, email) || strings.Contains(raw, errFlowsDown.Error()) {
		t.Errorf("a result whose labels could not be recorded: %s", raw)
	}
	store.writes.Store(false)
	store.reads.Store(true)
	r, raw = lookup("dev")
	if !r.IsError || !strings.Contains(r.Content[0].Text, "refused") || strings.Contains(raw, email) || strings.Contains(raw, errFlowsDown.Error()) {
		t.Errorf("a call whose session's labels could not be read: %s", raw)
	}
	if l := logs.String(); strings.Count(l, errFlowsDown.Error()) != 2 || strings.Contains(l, email) {
		t.Errorf("the log should hold both store errors and no value:\n%s", l)
	}
	store.reads.Store(false)
	if r, raw := lookup("dev"); r.IsError || !strings.Contains(raw, email) {
		t.Errorf("a call once the store works again: %s", raw)
	}

	// Without sealed session ids no session can continue elsewhere: its
	// flow stays in memory, and a store that is down changes nothing.
	opts.SessionKey = nil
	s = serveEndpoint(t, opts)
	if err := s.reg.Register(core.Tool{Name: "crm_lookup", Source: "crm", RemoteName: "lookup", Kind: core.KindRead, Description: "Looks up.",
		Handler: func(context.Context, json.RawMessage) (core.Result, error) {
			return core.TextResult("customer: " + email), nil
		}}); err != nil {
		t.Fatal(err)
	}
	store.reads.Store(true)
	store.writes.Store(true)
	if r, raw := lookup("dev"); r.IsError || !strings.Contains(raw, email) {
		t.Errorf("a session that cannot be continued elsewhere, the store down: %s", raw)
	}
}
