package gateway_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

// PO-3, OP-5: a gateway counts a quota in leases: the store counts what it
// leased, its console what ran; a reload that replaces the limits and a
// gateway that closes give the unused lease back, so the store (read by
// a second gateway on the same file) then counts the calls that ran.
func TestQuotaLeasesReturned(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	limits := "limits:\n  - {id: lists, per: actor, match: tool.name == \"notes_list_notes\", quota: 640/day}\n"
	yaml := gatewayYAML(store, upstreamYAML("notes", notes, true)) + limits
	a := newGateway(t, loadConfig(t, yaml), nil)
	b := newGateway(t, loadConfig(t, yaml), nil)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sa := connect(t, ctx, "http://"+a.Addr()+"/mcp", testKey)
	waitServed(t, ctx, sa, []string{"notes_list_notes"}, nil)
	counter, ok := b.Store().(core.QuotaCounter)
	if !ok {
		t.Fatal("the store counts no quota")
	}
	stored := func() int64 {
		t.Helper()
		u, err := counter.QuotaUsage(ctx, "lists ", time.Now().UTC().Truncate(24*time.Hour), 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(u) == 0 {
			return 0
		}
		return u[0].Count
	}
	shown := func() int64 {
		t.Helper()
		rep, err := a.Console().Policies(ctx)
		if err != nil || len(rep.Quotas) != 1 {
			t.Fatalf("the quotas' use: %+v, %v", rep.Quotas, err)
		}
		if len(rep.Quotas[0].Top) == 0 {
			return 0
		}
		return rep.Quotas[0].Top[0].Count
	}
	run := func(n int) {
		t.Helper()
		for range n {
			if res := call(t, ctx, sa, "notes_list_notes", map[string]any{}); res.IsError {
				t.Fatalf("a list within the quota: %+v", res)
			}
		}
	}
	// Leases of 1, 2, 4, 8 and 10 (a 64th of 640): 25 leased, 20 run.
	run(20)
	if s, c := stored(), shown(); s != 25 || c != 20 {
		t.Fatalf("after 20 calls the store counts %d and the console shows %d; want 25 leased and 20 run", s, c)
	}
	if _, err := a.Reload(ctx, loadConfig(t, yaml+"  - {id: extra, per: endpoint, rate: 100/s}\n")); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if s := stored(); s != 20 {
		t.Fatalf("after a reload replaced the limits the store counts %d, want the 20 run", s)
	}
	run(3) // leases of 1 and 2 on the new limits
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s := stored(); s != 23 {
		t.Fatalf("after the gateway closed the store counts %d, want the 23 run", s)
	}
}
