package mcp_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/memstore"
	"github.com/toolgate/toolgate/mcp"
)

// spyAuditor records which way each call's record came in.
type spyAuditor struct {
	mu       sync.Mutex
	appended []string // tool names
	queued   []string
	queueErr error
}

func (s *spyAuditor) AppendAudit(_ context.Context, r core.AuditRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appended = append(s.appended, r.Tool)
	return nil
}

func (s *spyAuditor) QueueAudit(_ context.Context, r core.AuditRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queued = append(s.queued, r.Tool)
	return s.queueErr
}

// appendOnly is an Auditor that cannot queue.
type appendOnly struct{ spy *spyAuditor }

func (a appendOnly) AppendAudit(ctx context.Context, r core.AuditRecord) error {
	return a.spy.AppendAudit(ctx, r)
}

// OP-6: a call of an action tool is answered only after its record is
// committed (AppendAudit); the record of any other call is queued when the
// store can queue, and appended when it cannot.
func TestEndpointAuditActionsWaitReadsQueueOP6(t *testing.T) {
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("0123456789abcdef0123456789abcdef!"), Ledger: memstore.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	spy := &spyAuditor{}
	s := serve(t, mcp.EndpointOptions{Gate: gate, Audit: spy})
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	rpc(t, c, "tools/call", map[string]any{"name": "gh_search", "arguments": map[string]any{"q": "x"}})
	<-s.calls
	rpc(t, c, "tools/call", map[string]any{"name": "gh_delete", "arguments": map[string]any{"id": 1}})
	rpc(t, c, "tools/call", map[string]any{"name": "boom", "arguments": map[string]any{}})
	// A queue error is logged, never turned into a failed call.
	spy.mu.Lock()
	spy.queueErr = core.ErrAuditLost
	spy.mu.Unlock()
	_, rpcErr := rpc(t, c, "tools/call", map[string]any{"name": "gh_search", "arguments": map[string]any{"q": "y"}})
	<-s.calls
	if rpcErr != nil {
		t.Fatalf("a queue error failed the call: %s", rpcErr)
	}
	spy.mu.Lock()
	if got, want := spy.queued, []string{"gh_search", "boom", "gh_search"}; !slices.Equal(got, want) {
		t.Errorf("queued %v, want %v", got, want)
	}
	if got, want := spy.appended, []string{"gh_delete"}; !slices.Equal(got, want) {
		t.Errorf("appended %v, want %v", got, want)
	}
	spy.mu.Unlock()

	plain := &spyAuditor{}
	s2 := serve(t, mcp.EndpointOptions{Gate: gate, Audit: appendOnly{plain}})
	c2 := testClient(s2.url, "m", "MEMBER")
	initialize(t, c2)
	rpc(t, c2, "tools/call", map[string]any{"name": "gh_search", "arguments": map[string]any{"q": "x"}})
	<-s2.calls
	plain.mu.Lock()
	defer plain.mu.Unlock()
	if len(plain.queued) != 0 || !slices.Equal(plain.appended, []string{"gh_search"}) {
		t.Errorf("an auditor that cannot queue: queued %v, appended %v", plain.queued, plain.appended)
	}
}
