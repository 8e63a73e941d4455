package auditchain

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

func benchRecord() core.AuditRecord {
	return core.AuditRecord{
		Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Endpoint: "/mcp", ActorID: "alice", Tenant: "acme",
		Session: "sess-1", Tool: "github_create_issue", Source: "github", RemoteName: "create_issue",
		ArgsHash: "hmac-sha256:5f2b", Outcome: "ok", Latency: 1234567, ConfirmTokenID: "tok-9", CallID: "call-1",
	}
}

// BenchmarkLink is the chain's cost per record in the store's flusher.
func BenchmarkLink(b *testing.B) {
	w := NewWriter()
	recs := make([]core.AuditRecord, 16)
	for i := range recs {
		recs[i] = benchRecord()
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := w.Link(recs); err != nil {
			b.Fatal(err)
		}
		w.Committed(recs, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}
