package serve_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/internal/store/sqlite"
	"github.com/toolgate/toolgate/mcp/serve"
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
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("0123456789abcdef0123456789abcdef!"), Ledger: memory.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	spy := &spyAuditor{}
	s := serveEndpoint(t, serve.EndpointOptions{Gate: gate, Audit: spy})
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
	s2 := serveEndpoint(t, serve.EndpointOptions{Gate: gate, Audit: appendOnly{plain}})
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

// CF-3, OP-6: a confirmed action runs only once its audit intent is
// committed to the store: the handler itself finds the record (its call
// id, its confirm token id, outcome "intent"). The outcome follows as a
// second record with the same call id. Only the outcome is published to
// the activity feed.
func TestEndpointActionIntentBeforeRunCF3(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "toolgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("0123456789abcdef0123456789abcdef!"), Ledger: store})
	if err != nil {
		t.Fatal(err)
	}
	s := serveEndpoint(t, serve.EndpointOptions{Gate: gate, Audit: store})
	seen := make(chan []core.AuditRecord, 1)
	if err := s.reg.Register(core.Tool{Name: "db_write", Kind: core.KindAction, Description: "Writes.",
		Handler: func(ctx context.Context, _ json.RawMessage) (core.Result, error) {
			call, _ := core.CallFromContext(ctx)
			recs, err := store.Audit(ctx, core.AuditQuery{})
			if err != nil {
				return core.Result{}, err
			}
			seen <- callRecords(recs, call.CallID)
			return core.TextResult("written"), nil
		}}); err != nil {
		t.Fatal(err)
	}
	_, sub := s.reg.Bus().Subscribe(0)
	defer sub.Close()
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	res, _ := rpc(t, c, "tools/call", map[string]any{"name": "db_write", "arguments": map[string]any{"n": 1}})
	var preview struct {
		StructuredContent struct{ ConfirmToken string } `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &preview); err != nil || preview.StructuredContent.ConfirmToken == "" {
		t.Fatalf("preview: %s", res)
	}
	token := preview.StructuredContent.ConfirmToken
	res, _ = rpc(t, c, "tools/call", map[string]any{"name": "db_write", "arguments": map[string]any{"n": 1, "confirm": true, "confirmToken": token}})
	if !strings.Contains(string(res), "written") {
		t.Fatalf("confirm: %s", res)
	}
	var before []core.AuditRecord
	select {
	case before = <-seen:
	default:
		t.Fatal("the action did not run")
	}
	if len(before) != 1 || before[0].Outcome != core.AuditIntent || before[0].ConfirmTokenID != confirm.TokenID(token) ||
		before[0].Tool != "db_write" || before[0].ActorID != "m" || before[0].ArgsHash == "" {
		t.Fatalf("what the store held of the call as it ran: %+v; want its intent record", before)
	}
	recs, err := store.Audit(ctx, core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	after := callRecords(recs, before[0].CallID)
	if len(after) != 2 || after[0].Outcome != core.AuditIntent || after[1].Outcome != "ok" || after[1].ConfirmTokenID != confirm.TokenID(token) {
		t.Fatalf("records of the call: %+v; want its intent, then its outcome", after)
	}
	var published []string
	for len(sub.C()) > 0 {
		if f, ok := (<-sub.C()).Data.(core.CallFinished); ok {
			published = append(published, f.Record.Outcome)
		}
	}
	if !slices.Equal(published, []string{"preview", "ok"}) {
		t.Errorf("published %v; want the preview and the outcome only", published)
	}
}

// callRecords are the records of one call, in order.
func callRecords(recs []core.AuditRecord, callID string) []core.AuditRecord {
	var out []core.AuditRecord
	for _, r := range recs {
		if r.CallID == callID {
			out = append(out, r)
		}
	}
	return out
}
