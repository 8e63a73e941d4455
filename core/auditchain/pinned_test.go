package auditchain

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

// OP-10: the hashes of records already written never change: stores
// written by earlier builds must verify. The values are those of the build
// that wrote the stores in the field (53b9ac3); a change to the canonical
// form or the hash input fails here before it fails a verify.
func TestHashPinnedOP10(t *testing.T) {
	full := core.AuditRecord{
		Time: time.Date(2026, 12, 7, 12, 0, 59, 123456789, time.UTC), Endpoint: "/mcp", ActorID: "alice", Tenant: "acme",
		Session: "sess-1", Tool: "github_create_issue", Source: "github", RemoteName: "create_issue",
		ArgsHash: "hmac-sha256:5f2b", Outcome: "ok", Latency: 1234567, ConfirmTokenID: "tok-9", CallID: "0188f00d-call",
		Rule: "big-refunds", Connection: "conn_0123", Via: "call_tool", Findings: `[{"type":"secrets","in":"result"}]`,
	}
	odd := core.AuditRecord{ // escapes, a byte that is not UTF-8, U+2028, and a zone off UTC
		Time: time.Date(2026, 12, 7, 13, 0, 0, 0, time.FixedZone("", 3600+1)), Endpoint: "/mcp", ActorID: "b\"o<b>\x01\xff",
		Tool: "t\u2028", Outcome: "error",
	}
	for _, c := range []struct {
		name string
		seq  int64
		prev string
		r    core.AuditRecord
		want string
	}{
		{"full", 1, "", full, "ef96d223b38642e610ccaaaad675539475ce89ea8f3c014e920b8991a4ca1824"},
		{"odd", 2, "ab", odd, "ec7797b7a954641a1b1286850b37e7a84d229f4fbbc0930dd326037b4276261a"},
	} {
		got, err := Hash("0123456789abcdef01234567", c.seq, c.prev, c.r)
		if err != nil || got != c.want {
			t.Errorf("%s: Hash = %s, %v; want %s", c.name, got, err, c.want)
		}
	}
}
