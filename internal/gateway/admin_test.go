package gateway_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
)

// startAdminGateway starts a gateway over the notes demo with gateway.admin
// and returns it with alice's client.
func startAdminGateway(t *testing.T, opts *gateway.Options, extra string) (*gateway.Gateway, *adminClient) {
	t.Helper()
	ctx := testCtx(t)
	yaml := withAdmin(gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), upstreamYAML("notes", serveDemo(t, "notes"), true)+extra))
	g := newGateway(t, loadConfig(t, yaml), opts)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return g, newAdminClient(t, g, aliceKey)
}

// CO-9: every read route answers its body; the operator is the key's.
func TestAdminReads(t *testing.T) {
	ctx := testCtx(t)
	g, alice := startAdminGateway(t, nil, "")
	if g.AdminAddr() == g.Addr() {
		t.Fatalf("the admin API shares the MCP listener %s", g.Addr())
	}

	var who admin.Whoami
	alice.ok(ctx, "GET", "/v1/whoami", nil, http.StatusOK, &who)
	bob := newAdminClient(t, g, bobKey)
	var whoBob admin.Whoami
	bob.ok(ctx, "GET", "/v1/whoami", nil, http.StatusOK, &whoBob)
	if who.Operator != "alice" || whoBob.Operator != "bob" {
		t.Errorf("whoami: %q and %q, want alice and bob", who.Operator, whoBob.Operator)
	}

	var info core.ConsoleInfo
	alice.ok(ctx, "GET", "/v1/info", nil, http.StatusOK, &info)
	if !slices.Equal(info.Endpoints, []string{"http://" + g.Addr() + "/mcp"}) || info.ReviewMode != core.ReviewPin {
		t.Errorf("info: %+v", info)
	}

	var snap core.Snapshot
	alice.ok(ctx, "GET", "/v1/snapshot", nil, http.StatusOK, &snap)
	if len(snap.Tools) != len(notesTools) || len(snap.Upstreams) != 1 || snap.Upstreams[0].State != core.StateConnected || snap.Seq == 0 {
		t.Errorf("snapshot: %d tools, upstreams %+v, seq %d", len(snap.Tools), snap.Upstreams, snap.Seq)
	}

	var reviews map[string]core.ReviewState
	alice.ok(ctx, "GET", "/v1/reviews", nil, http.StatusOK, &reviews)
	if reviews["notes_search"] != core.ReviewNew {
		t.Errorf("reviews: %v", reviews)
	}
	var flags []core.Flag
	alice.ok(ctx, "GET", "/v1/tools/"+url.PathEscape("notes_search")+"/flags", nil, http.StatusOK, &flags)
	if flags == nil {
		t.Error("flags: null, want a list")
	}
	var pending []core.PendingConfirmation
	alice.ok(ctx, "GET", "/v1/confirmations", nil, http.StatusOK, &pending)
	if pending == nil || len(pending) != 0 {
		t.Errorf("confirmations: %v, want []", pending)
	}
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	var sessions []core.Session
	alice.ok(ctx, "GET", "/v1/sessions", nil, http.StatusOK, &sessions)
	if len(sessions) != 1 || sessions[0].ID != s.GetSessionId() || sessions[0].Actor.ID != "alice" {
		t.Errorf("sessions: %+v, client session %s", sessions, s.GetSessionId())
	}
	var recs []core.AuditRecord
	alice.ok(ctx, "GET", "/v1/audit?since=1h&limit=10", nil, http.StatusOK, &recs)
	if recs == nil {
		t.Error("audit: null, want a list")
	}

	es := alice.openEvents(ctx)
	first := es.snapshot(ctx)
	if len(first.Tools) != len(notesTools) {
		t.Errorf("stream snapshot: %d tools", len(first.Tools))
	}
}

// CO-9, AU-1: no key, a wrong key or a malformed header is 401 with
// WWW-Authenticate: Bearer on every route, unknown ones included.
func TestAdminAuth(t *testing.T) {
	ctx := testCtx(t)
	g, _ := startAdminGateway(t, nil, "")
	for _, key := range []string{"", "wrong-key-0123456789abcdef", aliceKey + "x", aliceKey[:len(aliceKey)-1], testKey} {
		c := newAdminClient(t, g, key)
		for _, rt := range [][2]string{{"GET", "/v1/whoami"}, {"GET", "/v1/events"}, {"POST", "/v1/confirmations/x/approve"}, {"GET", "/v1/nope"}} {
			req, _ := http.NewRequestWithContext(ctx, rt[0], c.base+rt[1], nil)
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			resp, err := c.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("%s %s with key %q: %d, WWW-Authenticate %q", rt[0], rt[1], key, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
		c.fails(ctx, "GET", "/v1/whoami", nil, http.StatusUnauthorized, admin.CodeUnauthorized)
	}
}
