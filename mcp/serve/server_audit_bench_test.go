package serve

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
)

// discardAudit takes every record and keeps none: the call's side of the
// audit without a store's.
type discardAudit struct{}

func (discardAudit) AppendAudit(context.Context, core.AuditRecord) error { return nil }
func (discardAudit) QueueAudit(context.Context, core.AuditRecord) error  { return nil }

// BenchmarkAuditCall is the audit's share of one served call, up to the
// store (OP-6): the record, the argument hash, the outcome, the
// CallFinished event. A call answered, and one refused by the confirm gate.
func BenchmarkAuditCall(b *testing.B) {
	reg := core.NewRegistry(nil)
	e := &Endpoint{opts: EndpointOptions{
		Path: "/mcp", Registry: reg, Audit: discardAudit{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AuditKey: []byte("bench-audit-key-0123456789abcdef"),
	}}
	tool := core.Tool{Name: "gh_search", Source: "gh", RemoteName: "search", Kind: core.KindRead}
	call := core.Call{Session: "sess-1", CallID: "call-0123456789abcdef"}
	actor := core.Actor{ID: "alice", Tenant: "acme"}
	res := core.TextResult("found 3 issues")
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"ok", nil},
		{"refused", &confirm.RefusedError{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := &core.ToolCall{Tool: tool, Raw: benchAuditArgs, Args: benchAuditArgs}
				e.audit(context.Background(), call, actor, c, res, tc.err, time.Millisecond, nil)
			}
		})
	}
}
