package gateway_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
)

const operatorApproval = "    approval: operator\n"

// CO-9: every read route answers its body; the operator is the key's.
func TestAdminReads(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, "", nil)
	g, alice := env.g, env.alice
	if g.AdminAddr() == g.Addr() || g.AdminAddr() == "" {
		t.Fatalf("admin address %q, MCP address %q", g.AdminAddr(), g.Addr())
	}

	var who, whoBob admin.Whoami
	alice.ok(ctx, "GET", "/v1/whoami", nil, http.StatusOK, &who)
	env.bob.ok(ctx, "GET", "/v1/whoami", nil, http.StatusOK, &whoBob)
	if who.Operator != "alice" || whoBob.Operator != "bob" {
		t.Errorf("whoami: %q and %q, want alice and bob", who.Operator, whoBob.Operator)
	}

	var info core.ConsoleInfo
	alice.ok(ctx, "GET", "/v1/info", nil, http.StatusOK, &info)
	if !slices.Equal(info.Endpoints, []string{env.mcpURL()}) || info.ReviewMode != core.ReviewPin {
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
	s := connect(t, ctx, env.mcpURL(), testKey)
	var sessions []core.Session
	alice.ok(ctx, "GET", "/v1/sessions", nil, http.StatusOK, &sessions)
	if len(sessions) != 1 || sessions[0].ID != s.GetSessionId() || sessions[0].Actor.ID != "alice" || sessions[0].Endpoint != "/mcp" {
		t.Errorf("sessions: %+v, client session %s", sessions, s.GetSessionId())
	}
	// A call of a read tool is audited (OP-6); the API reads the log.
	call(t, ctx, s, "notes_list_notes", map[string]any{})
	var recs []core.AuditRecord
	alice.ok(ctx, "GET", "/v1/audit?since=1h", nil, http.StatusOK, &recs)
	if !slices.ContainsFunc(recs, func(r core.AuditRecord) bool { return r.Tool == "notes_list_notes" && r.ActorID == "alice" }) {
		t.Errorf("audit: %+v, want the call of notes_list_notes", recs)
	}
	alice.ok(ctx, "GET", "/v1/audit?since="+url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339)), nil, http.StatusOK, &recs)
	if recs == nil || len(recs) != 0 {
		t.Errorf("audit since an hour ahead: %+v, want []", recs)
	}

	es := alice.openEvents(ctx)
	first := es.snapshot(ctx)
	if len(first.Tools) != len(notesTools) || len(first.Sessions) != 1 {
		t.Errorf("stream snapshot: %d tools, %d sessions", len(first.Tools), len(first.Sessions))
	}
	// An event after the snapshot arrives as an event frame.
	env.bob.ok(ctx, "POST", "/v1/upstreams/notes/ping", nil, http.StatusOK, nil)
	es.waitAction(ctx, "bob", core.ActionPing, "notes")
}

// CO-9, AU-1: no key, a wrong key, a client's key, a key one character
// off: 401 with WWW-Authenticate: Bearer on every route, unknown ones too.
func TestAdminAuth(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, "", nil)
	for _, key := range []string{"", "wrong-key-0123456789abcdef", adminAliceKey + "x", adminAliceKey[:len(adminAliceKey)-1], testKey} {
		c := env.client(t, key)
		for _, rt := range [][2]string{{"GET", "/v1/whoami"}, {"GET", "/v1/events"}, {"POST", "/v1/confirmations/x/approve"}, {"DELETE", "/v1/sessions/x"}, {"GET", "/v1/nope"}} {
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

// CO-4, IM-9, RV-3: the refresh, ping and review commands
// over the API, with their unknown targets; each action, failed ones too,
// is an OperatorAction on another operator's stream and an audit record
// naming the operator.
func TestAdminActions(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, "", nil)
	alice := env.alice
	watch := env.bob.openEvents(ctx)
	watch.snapshot(ctx)

	var plan, cancelled core.RefreshPlan
	alice.ok(ctx, "POST", "/v1/refresh/plans", admin.PlanRequest{Upstream: "notes"}, http.StatusOK, &plan)
	if plan.ID == "" || plan.Diff.Upstream != "notes" || !plan.Diff.Empty() {
		t.Fatalf("plan: %+v", plan)
	}
	watch.waitAction(ctx, "alice", core.ActionRefreshPlan, "notes")
	var diff core.Diff
	alice.ok(ctx, "POST", "/v1/refresh/plans/"+url.PathEscape(plan.ID)+"/apply", nil, http.StatusOK, &diff)
	if diff.Upstream != "notes" {
		t.Errorf("apply: %+v", diff)
	}
	watch.waitEvent(ctx, "refresh.applied", func(d core.EventData) bool { _, ok := d.(core.RefreshApplied); return ok })
	watch.waitAction(ctx, "alice", core.ActionRefreshApply, "notes")
	alice.fails(ctx, "POST", "/v1/refresh/plans/"+url.PathEscape(plan.ID)+"/apply", nil, http.StatusNotFound, admin.CodeUnknownPlan)
	if a := watch.waitAction(ctx, "alice", core.ActionRefreshApply, plan.ID); a.Error == "" {
		t.Errorf("a failed apply's action carries no error: %+v", a)
	}
	alice.ok(ctx, "POST", "/v1/refresh/plans", admin.PlanRequest{Upstream: "notes"}, http.StatusOK, &cancelled)
	alice.ok(ctx, "DELETE", "/v1/refresh/plans/"+url.PathEscape(cancelled.ID), nil, http.StatusNoContent, nil)
	alice.fails(ctx, "DELETE", "/v1/refresh/plans/"+url.PathEscape(cancelled.ID), nil, http.StatusNotFound, admin.CodeUnknownPlan)
	alice.fails(ctx, "POST", "/v1/refresh/plans", admin.PlanRequest{Upstream: "nope"}, http.StatusNotFound, admin.CodeUnknownUpstream)

	var diffs []core.Diff
	alice.ok(ctx, "POST", "/v1/refresh/all", nil, http.StatusOK, &diffs)
	if len(diffs) != 1 || diffs[0].Upstream != "notes" {
		t.Errorf("refresh all: %+v", diffs)
	}
	watch.waitAction(ctx, "alice", core.ActionRefreshAll, "")

	var ping admin.PingResult
	alice.ok(ctx, "POST", "/v1/upstreams/notes/ping", nil, http.StatusOK, &ping)
	if ping.Latency <= 0 {
		t.Errorf("ping: %+v", ping)
	}
	alice.fails(ctx, "POST", "/v1/upstreams/nope/ping", nil, http.StatusNotFound, admin.CodeUnknownUpstream)

	// RV-3: the review decision is the key's operator's.
	alice.ok(ctx, "POST", "/v1/tools/notes_search/reject", nil, http.StatusNoContent, nil)
	rev := watch.waitEvent(ctx, "tool.reviewed", func(d core.EventData) bool { _, ok := d.(core.ToolReviewed); return ok }).Data.(core.ToolReviewed)
	if rev.Name != "notes_search" || rev.State != core.ReviewRejected || rev.By != "alice" {
		t.Errorf("tool.reviewed: %+v", rev)
	}
	var reviews map[string]core.ReviewState
	alice.ok(ctx, "GET", "/v1/reviews", nil, http.StatusOK, &reviews)
	if reviews["notes_search"] != core.ReviewRejected {
		t.Errorf("reviews after reject: %v", reviews)
	}
	env.bob.ok(ctx, "POST", "/v1/tools/notes_search/approve", nil, http.StatusNoContent, nil)
	watch.waitAction(ctx, "bob", core.ActionApproveTool, "notes_search")
	alice.ok(ctx, "GET", "/v1/reviews", nil, http.StatusOK, &reviews)
	if reviews["notes_search"] != core.ReviewApproved {
		t.Errorf("reviews after approve: %v", reviews)
	}
	for _, p := range []string{"/v1/tools/nope/approve", "/v1/tools/nope/reject"} {
		alice.fails(ctx, "POST", p, nil, http.StatusNotFound, admin.CodeUnknownTool)
	}
	alice.fails(ctx, "GET", "/v1/tools/nope/flags", nil, http.StatusNotFound, admin.CodeUnknownTool)
	alice.fails(ctx, "POST", "/v1/confirmations/nope/approve", nil, http.StatusNotFound, admin.CodeUnknownConfirmation)
	alice.fails(ctx, "POST", "/v1/confirmations/nope/reject", admin.RejectRequest{Reason: "x"}, http.StatusNotFound, admin.CodeUnknownConfirmation)
	alice.fails(ctx, "DELETE", "/v1/sessions/nope", nil, http.StatusNotFound, admin.CodeUnknownSession)
	watch.waitAction(ctx, "alice", core.ActionEndSession, "nope")

	// OP-6: every action is in the audit log as its operator's.
	var recs []core.AuditRecord
	alice.ok(ctx, "GET", "/v1/audit", nil, http.StatusOK, &recs)
	want := []struct{ actor, tool, target, outcome string }{
		{"alice", core.ActionRefreshPlan, "notes", "ok"},
		{"alice", core.ActionRefreshApply, "notes", "ok"},
		{"alice", core.ActionRefreshApply, plan.ID, "error"},
		{"alice", core.ActionRefreshCancel, cancelled.ID, "ok"},
		{"alice", core.ActionRefreshCancel, cancelled.ID, "error"},
		{"alice", core.ActionRefreshPlan, "nope", "error"},
		{"alice", core.ActionRefreshAll, "", "ok"},
		{"alice", core.ActionPing, "notes", "ok"},
		{"alice", core.ActionPing, "nope", "error"},
		{"alice", core.ActionRejectTool, "notes_search", "ok"},
		{"bob", core.ActionApproveTool, "notes_search", "ok"},
		{"alice", core.ActionApproveConfirmation, "nope", "error"},
		{"alice", core.ActionRejectConfirmation, "nope", "error"},
		{"alice", core.ActionEndSession, "nope", "error"},
	}
	for _, w := range want {
		if !slices.ContainsFunc(recs, func(r core.AuditRecord) bool {
			return r.Endpoint == gateway.AdminEndpoint && r.ActorID == w.actor && r.Tool == w.tool && r.RemoteName == w.target && r.Outcome == w.outcome && !r.Time.IsZero()
		}) {
			t.Errorf("no audit record %+v in\n%+v", w, recs)
		}
	}
}

// CF-5, CO-6: a confirmation approved over the API lets
// the waiting MCP call complete; one rejected gives the client isError with
// the reason; a second decision is 409 naming the first; both operators'
// streams show each decision and who made it.
func TestAdminConfirmations(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, operatorApproval, nil)
	alice, bob := env.alice, env.bob
	aliceEvents, bobEvents := alice.openEvents(ctx), bob.openEvents(ctx)
	aliceEvents.snapshot(ctx)
	bobEvents.snapshot(ctx)
	s := connect(t, ctx, env.mcpURL(), testKey)

	id, answered := pendingCall(t, ctx, s, aliceEvents, "approved over the API")
	var pending []core.PendingConfirmation
	bob.ok(ctx, "GET", "/v1/confirmations", nil, http.StatusOK, &pending)
	if len(pending) != 1 || pending[0].ID != id || pending[0].Tool != "notes_create_note" || pending[0].Actor.ID != "alice" {
		t.Fatalf("confirmations: %+v, want %s", pending, id)
	}
	// The body cannot name another operator.
	alice.ok(ctx, "POST", "/v1/confirmations/"+url.PathEscape(id)+"/approve", `{"by":"mallory"}`, http.StatusNoContent, nil)
	if res := result(t, ctx, answered); res.IsError {
		t.Fatalf("the approved call failed: %s", resultText(res))
	}
	dec := bobEvents.waitEvent(ctx, "confirmation.decided", func(d core.EventData) bool {
		e, ok := d.(core.ConfirmationDecided)
		return ok && e.ID == id
	}).Data.(core.ConfirmationDecided)
	if dec.Decision != core.DecisionApprove || dec.By != "alice" {
		t.Errorf("bob saw %+v, want approved by alice", dec)
	}
	if a := bobEvents.waitAction(ctx, "alice", core.ActionApproveConfirmation, id); a.Error != "" || a.Detail != "notes_create_note" {
		t.Errorf("bob saw the action %+v", a)
	}
	e := bob.fails(ctx, "POST", "/v1/confirmations/"+url.PathEscape(id)+"/approve", nil, http.StatusConflict, admin.CodeAlreadyDecided)
	if e.DecidedBy != "alice" || e.Decision != core.DecisionApprove || e.ID != id || e.DecidedAt.IsZero() || !strings.Contains(e.Message, "alice") {
		t.Errorf("a second approval: %+v, want already decided by alice", e)
	}
	if a := aliceEvents.waitAction(ctx, "bob", core.ActionApproveConfirmation, id); !strings.Contains(a.Error, "already decided") {
		t.Errorf("alice saw bob's failed approval as %+v", a)
	}
	bob.ok(ctx, "GET", "/v1/confirmations", nil, http.StatusOK, &pending)
	if len(pending) != 0 {
		t.Errorf("confirmations after the decision: %+v", pending)
	}

	id, answered = pendingCall(t, ctx, s, aliceEvents, "rejected over the API")
	bob.ok(ctx, "POST", "/v1/confirmations/"+url.PathEscape(id)+"/reject", admin.RejectRequest{Reason: "not on a Friday"}, http.StatusNoContent, nil)
	res := result(t, ctx, answered)
	if !res.IsError || !strings.Contains(resultText(res), "not on a Friday") {
		t.Fatalf("the rejected call: isError %v, %q; want the reason", res.IsError, resultText(res))
	}
	if a := aliceEvents.waitAction(ctx, "bob", core.ActionRejectConfirmation, id); !strings.Contains(a.Detail, "not on a Friday") {
		t.Errorf("alice saw the rejection as %+v", a)
	}
	e = alice.fails(ctx, "POST", "/v1/confirmations/"+url.PathEscape(id)+"/reject", nil, http.StatusConflict, admin.CodeAlreadyDecided)
	if e.DecidedBy != "bob" || e.Decision != core.DecisionReject {
		t.Errorf("a second decision on a rejected one: %+v", e)
	}

	// Two operators decide at once: exactly one wins, the other is told the
	// winner's decision.
	id, answered = pendingCall(t, ctx, s, aliceEvents, "decided twice at once")
	type answer struct {
		op   string
		code int
		body []byte
	}
	answers := make(chan answer, 2)
	for _, c := range []*adminClient{alice, bob} {
		op := "alice"
		if c == bob {
			op = "bob"
		}
		go func() {
			code, body := c.do(ctx, "POST", "/v1/confirmations/"+url.PathEscape(id)+"/approve", nil)
			answers <- answer{op, code, body}
		}()
	}
	a1, a2 := <-answers, <-answers
	if a1.code == http.StatusConflict {
		a1, a2 = a2, a1
	}
	if a1.code != http.StatusNoContent || a2.code != http.StatusConflict || !strings.Contains(string(a2.body), `"decidedBy":"`+a1.op+`"`) {
		t.Errorf("concurrent approvals: %s got %d, %s got %d %s; want one 204 and a 409 naming the winner", a1.op, a1.code, a2.op, a2.code, a2.body)
	}
	if res := result(t, ctx, answered); res.IsError {
		t.Errorf("the call approved twice at once: %s", resultText(res))
	}
	// The MCP endpoint still serves.
	call(t, ctx, s, "notes_list_notes", map[string]any{})
}

// CO-9: the in-process console's actions are accounted too —
// to Options.Operator, else to the name its caller passes — and ConsoleAs
// ignores the caller's name.
func TestLocalConsoleAccounted(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, "", nil)
	es := env.bob.openEvents(ctx)
	es.snapshot(ctx)

	con := env.g.Console()
	if err := con.RejectTool(ctx, "notes_search", "console:dave"); err != nil {
		t.Fatal(err)
	}
	if rev := es.waitEvent(ctx, "tool.reviewed", func(d core.EventData) bool { _, ok := d.(core.ToolReviewed); return ok }).Data.(core.ToolReviewed); rev.By != "console:dave" {
		t.Errorf("the local console's rejection is by %q, want the caller's name", rev.By)
	}
	es.waitAction(ctx, "console:dave", core.ActionRejectTool, "notes_search")
	if _, err := con.Ping(ctx, "notes"); err != nil {
		t.Fatal(err)
	}
	es.waitAction(ctx, "console", core.ActionPing, "notes")

	if err := env.g.ConsoleAs("carol").ApproveTool(ctx, "notes_search", "mallory"); err != nil {
		t.Fatal(err)
	}
	if rev := es.waitEvent(ctx, "tool.reviewed", func(d core.EventData) bool { _, ok := d.(core.ToolReviewed); return ok }).Data.(core.ToolReviewed); rev.By != "carol" {
		t.Errorf("ConsoleAs(carol)'s approval is by %q", rev.By)
	}
	es.waitAction(ctx, "carol", core.ActionApproveTool, "notes_search")

	named := newGateway(t, loadConfig(t, gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"))), &gateway.Options{Operator: "erin"})
	_, sub, err := named.Console().Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := named.Console().EndSession(ctx, "nope"); err == nil {
		t.Fatal("EndSession of an unknown session succeeded")
	}
	a := nextEvent(t, ctx, sub, "operator.action", func(d core.EventData) bool { _, ok := d.(core.OperatorAction); return ok }).(core.OperatorAction)
	if a.Operator != "erin" || a.Action != core.ActionEndSession || a.Target != "nope" || a.Error == "" {
		t.Errorf("Options.Operator's action: %+v", a)
	}
	recs, err := named.Store().Audit(ctx, core.AuditQuery{})
	if err != nil || len(recs) != 1 || recs[0].ActorID != "erin" || recs[0].Outcome != "error" || recs[0].Endpoint != gateway.AdminEndpoint {
		t.Errorf("audit of the local console's action: %+v %v", recs, err)
	}
}

// CF-5: a decision on an expired confirmation is refused with a clear
// error: it expired, nobody decided.
func TestAdminExpiredConfirmation(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, operatorApproval, func(y string) string {
		return strings.Replace(y, "    secret: ${SECRET}\n", "    secret: ${SECRET}\n    approvalWait: 1s\n", 1)
	})
	es := env.alice.openEvents(ctx)
	es.snapshot(ctx)
	s := connect(t, ctx, env.mcpURL(), testKey)
	id, answered := pendingCall(t, ctx, s, es, "left to expire")
	es.waitEvent(ctx, "timed-out", func(d core.EventData) bool {
		e, ok := d.(core.ConfirmationDecided)
		return ok && e.ID == id && e.Decision == core.DecisionTimeout
	})
	if res := result(t, ctx, answered); !res.IsError {
		t.Fatalf("the expired call succeeded: %s", resultText(res))
	}
	e := env.alice.fails(ctx, "POST", "/v1/confirmations/"+url.PathEscape(id)+"/approve", nil, http.StatusConflict, admin.CodeAlreadyDecided)
	if e.Decision != core.DecisionTimeout || !strings.Contains(e.Message, "expired") {
		t.Errorf("approving an expired confirmation: %+v", e)
	}
}

// CO-5, SV-2: ending a session over the API; its client's next request
// fails; the stream shows the end by the operator.
func TestAdminEndSession(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, "", nil)
	es := env.bob.openEvents(ctx)
	es.snapshot(ctx)
	s := connect(t, ctx, env.mcpURL(), testKey)
	waitServed(t, ctx, s, notesTools, nil)
	id := s.GetSessionId()
	env.alice.ok(ctx, "DELETE", "/v1/sessions/"+url.PathEscape(id), nil, http.StatusNoContent, nil)
	es.waitEvent(ctx, "session.ended", func(d core.EventData) bool {
		e, ok := d.(core.SessionEnded)
		return ok && e.Session.ID == id
	})
	// The action names the session by its key: the id continues it (SV-2).
	if a := es.waitAction(ctx, "alice", core.ActionEndSession, core.SessionKey(id)); !strings.Contains(a.Detail, "alice") || a.Error != "" || strings.Contains(a.Detail, id) {
		t.Errorf("the action %+v does not name the session's actor, or names its id", a)
	}
	if _, err := s.ListTools(ctx, mcpgo.ListToolsRequest{}); err == nil {
		t.Error("tools/list on the ended session succeeded")
	}
	env.alice.fails(ctx, "DELETE", "/v1/sessions/"+url.PathEscape(id), nil, http.StatusNotFound, admin.CodeUnknownSession)
}

// QB-3: bad input on the admin API — no key, wrong keys,
// malformed JSON, an oversized body, unknown ids, unknown routes, a client
// that never reads its event stream while thousands of events pass — each
// gets a clear error, and the MCP endpoint keeps serving all along. No admin
// key is in any log line, answer, event or audit record.
func TestAdminAbuse(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	baseline := goroutineBaseline()
	env := startAdminGatewayOn(t, notes, &gateway.Options{Admin: gateway.AdminOptions{WriteTimeout: time.Second, MaxStreams: 2}}, operatorApproval, nil)
	g, alice := env.g, env.alice
	s := connect(t, ctx, env.mcpURL(), testKey)
	serving := func() {
		t.Helper()
		if res := call(t, ctx, s, "notes_list_notes", map[string]any{}); res.IsError {
			t.Fatalf("the MCP endpoint failed during the abuse: %s", resultText(res))
		}
	}

	// A client that never reads: raw TCP, its receive window small.
	conn, err := net.Dial("tcp", g.AdminAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /v1/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", g.AdminAddr(), adminAliceKey)
	stuckEnded := env.log.when("admin event stream ended")

	for _, key := range []string{"", "not-a-key-but-long-enough", adminBobKey + adminAliceKey} {
		env.client(t, key).fails(ctx, "GET", "/v1/snapshot", nil, http.StatusUnauthorized, admin.CodeUnauthorized)
	}
	serving()
	alice.fails(ctx, "POST", "/v1/refresh/plans", `{"upstream":`, http.StatusBadRequest, admin.CodeBadRequest)
	alice.fails(ctx, "POST", "/v1/confirmations/x/reject", `{"reason": 42}`, http.StatusBadRequest, admin.CodeBadRequest)
	alice.fails(ctx, "POST", "/v1/refresh/plans", `{"upstream":"`+strings.Repeat("a", admin.MaxBodyBytes)+`"}`, http.StatusRequestEntityTooLarge, admin.CodeTooLarge)
	alice.fails(ctx, "GET", "/v1/nope", nil, http.StatusNotFound, admin.CodeNotFound)
	alice.fails(ctx, "PUT", "/v1/sessions", nil, http.StatusMethodNotAllowed, admin.CodeMethodNotAllowed)
	alice.fails(ctx, "GET", "/v1/audit?limit=lots", nil, http.StatusBadRequest, admin.CodeBadRequest)
	for _, p := range []string{"/v1/refresh/plans/nope/apply", "/v1/upstreams/nope/ping", "/v1/tools/nope/approve", "/v1/confirmations/nope/approve"} {
		c, _ := alice.do(ctx, "POST", p, nil)
		if c != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", p, c)
		}
	}
	serving()

	// Thousands of events while the stuck stream holds its frame: the bus
	// drops them for it, the frame's deadline ends it, and the gateway and
	// the other streams carry on.
	reader := env.bob.openEvents(ctx)
	reader.snapshot(ctx)
	// bob's console keeps reading all along.
	afterSeen := make(chan struct{})
	go func() {
		defer close(afterSeen)
		for f := range reader.frames {
			if f.Event == admin.FrameEvent && strings.Contains(f.Data, `"message":"after"`) {
				return
			}
		}
	}()
	// The stream ends when one frame's write has been stuck for the write
	// timeout (1 s): publishing can outrun that on an idle machine, so each
	// batch waits a moment for the end, within an overall bound.
	published := 0
	giveUp := time.After(30 * time.Second)
	for done := false; !done; {
		for range 500 {
			g.Registry().Bus().Publish(core.Warning{Source: "abuse", Message: abuseFill})
			published++
		}
		serving()
		select {
		case <-stuckEnded:
			done = true
		case <-giveUp:
			t.Fatalf("the stuck stream did not end within 30 s (%d events of 4 KiB published)", published)
		case <-time.After(50 * time.Millisecond):
		}
	}
	// The slot is free again (MaxStreams 2: bob's reader and this one).
	again := alice.openEvents(ctx)
	again.snapshot(ctx)
	// bob's reader kept up or resynced, and gets new events. One published
	// while it was behind is dropped for it (a resync's snapshot replaces
	// the events), so the marker is published until it arrives.
	for i := 0; ; i++ {
		g.Registry().Bus().Publish(core.Warning{Source: "abuse", Message: "after"})
		select {
		case <-afterSeen:
		case <-time.After(100 * time.Millisecond):
			if i < 300 {
				continue
			}
			t.Fatal("the reading stream did not get an event after the abuse")
		}
		break
	}
	if _, open := <-reader.frames; !open {
		t.Fatal("the reading stream ended during the abuse")
	}
	serving()

	// A decision on a pending confirmation, to put admin actions in the
	// audit log and the events too.
	id, answered := pendingCall(t, ctx, s, again, "audited")
	alice.ok(ctx, "POST", "/v1/confirmations/"+url.PathEscape(id)+"/approve", nil, http.StatusNoContent, nil)
	result(t, ctx, answered)
	var recs []core.AuditRecord
	alice.ok(ctx, "GET", "/v1/audit", nil, http.StatusOK, &recs)

	s.end()
	closeGateway(t, g)
	assertGoroutinesSettle(t, baseline)
	all := env.log.String()
	for _, key := range []string{adminAliceKey, adminBobKey} {
		if strings.Contains(all, key) {
			i := strings.Index(all, key)
			t.Errorf("admin key %q appears in the transcript: …%s…", key, all[max(0, i-200):min(len(all), i+200)])
		}
	}
	if !strings.Contains(all, `"operator":"alice"`) {
		t.Error("the transcript has no operator action: the test saw too little to mean anything")
	}
}

// CO-9: A unix socket listen: the socket is 0600, a stale one is replaced, a live
// one fails New, and Close removes it.
func TestAdminUnixSocket(t *testing.T) {
	ctx := testCtx(t)
	// Socket paths are short (108 bytes): t.TempDir()'s may be too long.
	dir, err := os.MkdirTemp("", "tg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := dir + "/admin.sock"
	// A stale socket: bound, then left behind by a listener that is gone.
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	unix := func(y string) string {
		return strings.Replace(withAdmin(y), "    listen: 127.0.0.1:0\n    keys:", "    listen: unix:"+sock+"\n    keys:", 1)
	}
	yaml := unix(gatewayYAML(t.TempDir()+"/toolgate.db", upstreamYAML("notes", serveDemo(t, "notes"), true)))
	cfg := loadConfig(t, yaml)
	g, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("New over a stale socket: %v", err)
	}
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if g.AdminAddr() != "unix:"+sock {
		t.Errorf("AdminAddr %q", g.AdminAddr())
	}
	st, err := os.Stat(sock)
	if err != nil || st.Mode().Perm() != 0o600 || st.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %v %v, want a 0600 socket", st.Mode(), err)
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://admin/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+adminBobKey)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("whoami over the socket: %d", resp.StatusCode)
	}
	// A second gateway on the live socket fails, naming it.
	cfg2 := loadConfig(t, unix(gatewayYAML(t.TempDir()+"/toolgate.db")))
	if g2, err := gateway.New(ctx, cfg2, nil); err == nil || !strings.Contains(err.Error(), sock) {
		if g2 != nil {
			closeGateway(t, g2)
		}
		t.Errorf("New on a live socket: %v, want an error naming it", err)
	}
	tr.CloseIdleConnections()
	closeGateway(t, g)
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after Close: %v", err)
	}
}

// SV-9: Close ends the admin streams, after the shutdown's rejections, and
// does not wait on them.
func TestAdminCloseEndsStreams(t *testing.T) {
	ctx := testCtx(t)
	env := startAdminGateway(t, nil, operatorApproval, nil)
	es := env.alice.openEvents(ctx)
	es.snapshot(ctx)
	s := connect(t, ctx, env.mcpURL(), testKey)
	id, answered := pendingCall(t, ctx, s, es, "pending at close")
	start := time.Now()
	closeGateway(t, env.g)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v with a stream open", d)
	}
	if res := result(t, ctx, answered); !res.IsError || !strings.Contains(resultText(res), "shutting down") {
		t.Errorf("the pending call at close: %v %s", res.IsError, resultText(res))
	}
	sawRejection := false
	for {
		f, ok := es.next(ctx)
		if !ok {
			break
		}
		if f.Event == admin.FrameEvent && strings.Contains(f.Data, id) && strings.Contains(f.Data, "confirmation.decided") {
			sawRejection = true
		}
	}
	if !sawRejection {
		t.Error("the stream ended without the shutdown's rejection")
	}
}
