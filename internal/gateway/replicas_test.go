package gateway_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/store/postgres"
)

// shareWait bounds how long a change on one replica may take to show on
// another. The aim is well under a second; the bound leaves room for a
// loaded machine.
const shareWait = 5 * time.Second

// replica is one gateway of a set sharing a database, with an MCP client.
type replica struct {
	g *gateway.Gateway
	s *session
}

// startReplicas starts n gateways on yaml (one database) and connects a
// client to each, waiting until it serves want.
func startReplicas(t *testing.T, ctx context.Context, yaml string, n int, want []string) []replica {
	t.Helper()
	var out []replica
	for range n {
		g := newGateway(t, loadConfig(t, yaml), nil)
		if err := g.Start(ctx); err != nil {
			t.Fatal(err)
		}
		s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
		waitServed(t, ctx, s, want, nil)
		out = append(out, replica{g, s})
	}
	return out
}

// within runs wait with a context that ends well after shareWait, and
// fails if it took longer than shareWait.
func within(t *testing.T, ctx context.Context, what string, wait func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 4*shareWait)
	defer cancel()
	start := time.Now()
	wait(ctx)
	if d := time.Since(start); d > shareWait {
		t.Errorf("%s took %v, want under %v", what, d, shareWait)
	}
}

// RV-3, OP-5: under review mode require, a tool approved through replica
// A's console is served by replica B too, whose client is told its list
// changed; a rejection on B withdraws it from A.
func TestReviewDecisionSharedAcrossReplicasRV3(t *testing.T) {
	ctx := testCtx(t)
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	yaml := strings.Replace(gatewayYAML(dsn, upstreamYAML("notes", serveDemo(t, "notes"), true)),
		"  listen:", "  review: {mode: require}\n  listen:", 1)
	rs := startReplicas(t, ctx, yaml, 2, nil)
	a, b := rs[0], rs[1]
	for _, r := range rs {
		waitServed(t, ctx, r.s, nil, notesTools)
	}
	if err := a.g.ConsoleAs("ops-a").ApproveTool(ctx, "notes_search", "ops-a"); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "the approval reaching B", func(ctx context.Context) { waitServed(t, ctx, b.s, []string{"notes_search"}, nil) })
	if st := b.g.Reviewer().States(b.g.Registry().Bus().Snapshot().Tools)["notes_search"]; st != core.ReviewApproved {
		t.Errorf("B's review state of notes_search is %q, want approved", st)
	}
	if err := b.g.ConsoleAs("ops-b").RejectTool(ctx, "notes_search", "ops-b"); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "the rejection reaching A", func(ctx context.Context) { waitServed(t, ctx, a.s, nil, []string{"notes_search"}) })
}

// waitBusEvent waits on sub for an event match accepts.
func waitBusEvent(t *testing.T, ctx context.Context, sub *core.BusSubscription, what string, match func(core.EventData) bool) core.EventData {
	t.Helper()
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatalf("bus closed waiting for %s", what)
			}
			if _, resync := ev.Data.(core.Resync); resync {
				sub.Resync()
				continue
			}
			if match(ev.Data) {
				return ev.Data
			}
		case <-ctx.Done():
			t.Fatalf("no %s: %v", what, ctx.Err())
		}
	}
}

// pendingOn starts a confirming call of notes_create_note on s, which
// waits for an operator, and waits until bus (another replica's) shows it
// pending; it returns its id and where the call's result arrives.
func pendingOn(t *testing.T, ctx context.Context, s *session, bus *core.BusSubscription, text string) (string, chan *mcpgo.CallToolResult) {
	t.Helper()
	args := confirmArgs(previewToken(t, ctx, s, text), text)
	answered := make(chan *mcpgo.CallToolResult, 1)
	go func() {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "notes_create_note"
		req.Params.Arguments = args
		res, err := s.CallTool(ctx, req)
		if err != nil {
			res = &mcpgo.CallToolResult{IsError: true, Content: []mcpgo.Content{mcpgo.NewTextContent("transport error: " + err.Error())}}
		}
		answered <- res
	}()
	var id string
	within(t, ctx, "the pending confirmation reaching the other replica", func(ctx context.Context) {
		ev := waitBusEvent(t, ctx, bus, "confirmation.pending for "+text, func(d core.EventData) bool {
			p, ok := d.(core.ConfirmationPending)
			return ok && strings.Contains(string(p.Pending.Arguments), text)
		})
		id = ev.(core.ConfirmationPending).Pending.ID
	})
	return id, answered
}

func decidedBy(t *testing.T, err error, by string) {
	t.Helper()
	var de *confirm.DecidedError
	if !errors.As(err, &de) || de.By != by || de.At.IsZero() {
		t.Errorf("second decision = %v; want a DecidedError naming %s and when", err, by)
	}
}

// CF-5, CO-9, OP-5: a confirmation waiting for an operator on replica A is
// listed by replica B (snapshot and event) and decided from B: approved,
// A's call runs; rejected, A's client gets isError with the reason. A
// second decision on A is told who decided on B. Of A and B deciding at
// once, the database lets exactly one win.
func TestPendingConfirmationSharedAcrossReplicasCF5(t *testing.T) {
	ctx := testCtx(t)
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	yaml := gatewayYAML(dsn, upstreamYAML("notes", serveDemo(t, "notes"), true)+operatorApproval)
	rs := startReplicas(t, ctx, yaml, 2, notesTools)
	a, b := rs[0], rs[1]
	_, busB := b.g.Registry().Bus().Subscribe(0)
	defer busB.Close()

	t.Run("approved on B", func(t *testing.T) {
		id, answered := pendingOn(t, ctx, a.s, busB, "approve-on-b")
		pending := b.g.Registry().Bus().Snapshot().Pending
		if len(pending) != 1 || pending[0].ID != id || pending[0].Tool != "notes_create_note" {
			t.Errorf("B's snapshot lists %+v, want %s", pending, id)
		}
		if err := b.g.ConsoleAs("bob").ApproveConfirmation(ctx, id, "bob"); err != nil {
			t.Fatalf("approve on B: %v", err)
		}
		var res *mcpgo.CallToolResult
		within(t, ctx, "the approval reaching A's call", func(ctx context.Context) { res = result(t, ctx, answered) })
		if res.IsError {
			t.Fatalf("A's call after B approved: %q", resultText(res))
		}
		wantEffects(t, ctx, a.s, "1")
		decidedBy(t, a.g.ConsoleAs("alice-op").RejectConfirmation(ctx, id, "alice-op", "late"), "bob")
		if n := a.g.PendingApprovals(); n != 0 {
			t.Errorf("A still lists %d pending", n)
		}
	})

	t.Run("rejected on B", func(t *testing.T) {
		id, answered := pendingOn(t, ctx, a.s, busB, "reject-on-b")
		if err := b.g.ConsoleAs("bob").RejectConfirmation(ctx, id, "bob", "not today"); err != nil {
			t.Fatalf("reject on B: %v", err)
		}
		res := result(t, ctx, answered)
		if !res.IsError || !strings.Contains(resultText(res), "not today") {
			t.Errorf("A's call after B rejected: %q isError=%v; want isError with the reason", resultText(res), res.IsError)
		}
		wantEffects(t, ctx, a.s, "1")
	})

	t.Run("decided on both at once", func(t *testing.T) {
		id, answered := pendingOn(t, ctx, a.s, busB, "race")
		var wg sync.WaitGroup
		var errA, errB error
		wg.Go(func() { errA = a.g.ConsoleAs("alice-op").ApproveConfirmation(ctx, id, "alice-op") })
		wg.Go(func() { errB = b.g.ConsoleAs("bob").RejectConfirmation(ctx, id, "bob", "race") })
		wg.Wait()
		res := result(t, ctx, answered)
		switch {
		case errA == nil && errB != nil:
			decidedBy(t, errB, "alice-op")
			if res.IsError {
				t.Errorf("A's approval won, but the call answered %q", resultText(res))
			}
		case errB == nil && errA != nil:
			decidedBy(t, errA, "bob")
			if !res.IsError {
				t.Error("B's rejection won, but the call ran")
			}
		default:
			t.Fatalf("A: %v, B: %v; want exactly one to win", errA, errB)
		}
	})
}

// CF-5, OP-5: a replica that dies leaves its waiting confirmation in the
// store; the others list it until its deadline and then settle it as timed
// out, so it does not hang in their consoles.
func TestDeadReplicaPendingExpiresCF5(t *testing.T) {
	ctx := testCtx(t)
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	yaml := gatewayYAML(dsn, upstreamYAML("notes", serveDemo(t, "notes"), true)+operatorApproval)
	b := startReplicas(t, ctx, yaml, 1, notesTools)[0]
	_, bus := b.g.Registry().Bus().Subscribe(0)
	defer bus.Close()

	// The replica that dies: a store handle that records a confirmation,
	// says so, and is gone.
	dead, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	p := core.PendingConfirmation{ID: "dead-replica-call", Tool: "notes_create_note", Source: "notes", RemoteName: "create_note",
		Actor: core.Actor{ID: "alice"}, Arguments: []byte(`{"text":"orphan"}`), Created: now, Deadline: now.Add(time.Second)}
	if err := dead.AddPending(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := dead.Broadcast(ctx, core.SharedEvent{Kind: core.SharedPending, ID: p.ID}); err != nil {
		t.Fatal(err)
	}
	_ = dead.Close()
	waitBusEvent(t, ctx, bus, "the dead replica's confirmation", func(d core.EventData) bool {
		e, ok := d.(core.ConfirmationPending)
		return ok && e.Pending.ID == p.ID
	})
	ev := waitBusEvent(t, ctx, bus, "its expiry", func(d core.EventData) bool {
		e, ok := d.(core.ConfirmationDecided)
		return ok && e.ID == p.ID
	}).(core.ConfirmationDecided)
	if ev.Decision != core.DecisionTimeout {
		t.Errorf("settled as %q, want timed-out", ev.Decision)
	}
	if n := b.g.PendingApprovals(); n != 0 {
		t.Errorf("B still lists %d pending", n)
	}
	err = b.g.ConsoleAs("bob").ApproveConfirmation(ctx, p.ID, "bob")
	var de *confirm.DecidedError
	if !errors.As(err, &de) || de.Decision != core.DecisionTimeout {
		t.Errorf("approving it now = %v, want a DecidedError saying it timed out", err)
	}
}

// serveShifting serves an MCP upstream whose tool list the test changes,
// without telling its clients (no listChanged), so only a refresh sees it.
func serveShifting(t *testing.T) (url string, add func(name string)) {
	t.Helper()
	s := server.NewMCPServer("shifting", "1.0.0", server.WithToolCapabilities(false))
	add = func(name string) {
		s.AddTool(mcpgo.NewTool(name, mcpgo.WithDescription("reads "+name), mcpgo.WithReadOnlyHintAnnotation(true)),
			func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText(name), nil
			})
	}
	add("alpha")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: server.NewStreamableHTTPServer(s), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-served
	})
	return "http://" + ln.Addr().String() + "/mcp", add
}

// IM-20, OP-5: a refresh applied on replica A is applied by replica B too,
// through its own upstream connection: both serve the same tools.
func TestRefreshSharedAcrossReplicasIM20(t *testing.T) {
	ctx := testCtx(t)
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	url, add := serveShifting(t)
	rs := startReplicas(t, ctx, gatewayYAML(dsn, upstreamYAML("shift", url, true)), 2, []string{"shift_alpha"})
	a, b := rs[0], rs[1]
	add("beta")
	con := a.g.ConsoleAs("ops")
	plan, err := con.PlanRefresh(ctx, "shift")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := con.ApplyRefresh(ctx, plan.ID); err != nil {
		t.Fatal(err)
	}
	waitServed(t, ctx, a.s, []string{"shift_alpha", "shift_beta"}, nil)
	within(t, ctx, "the refresh reaching B", func(ctx context.Context) { waitServed(t, ctx, b.s, []string{"shift_alpha", "shift_beta"}, nil) })

	add("gamma")
	if _, err := b.g.ConsoleAs("ops").RefreshAll(ctx); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "refresh all reaching A", func(ctx context.Context) { waitServed(t, ctx, a.s, []string{"shift_gamma"}, nil) })
}

// CO-9, CF-5, OP-5: an operator attached to replica B's admin API sees a
// confirmation waiting on replica A in B's list and event stream, approves
// it there and A's call runs; a second decision through A's admin API is a
// 409 naming B's operator.
func TestPendingDecidedThroughOtherReplicasAdminAPICO9(t *testing.T) {
	ctx := testCtx(t)
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	yaml := withAdmin(gatewayYAML(dsn, upstreamYAML("notes", serveDemo(t, "notes"), true)+operatorApproval))
	rs := startReplicas(t, ctx, yaml, 2, notesTools)
	a, b := rs[0], rs[1]
	envA := &adminEnv{g: a.g, log: &transcript{}}
	envB := &adminEnv{g: b.g, log: &transcript{}}
	aliceOnA, bobOnB := envA.client(t, adminAliceKey), envB.client(t, adminBobKey)
	eventsB := bobOnB.openEvents(ctx)
	eventsB.snapshot(ctx)

	id, answered := pendingCall(t, ctx, a.s, eventsB, "approved through B")
	var pending []core.PendingConfirmation
	bobOnB.ok(ctx, "GET", "/v1/confirmations", nil, http.StatusOK, &pending)
	if len(pending) != 1 || pending[0].ID != id || pending[0].Actor.ID != "alice" {
		t.Fatalf("B's confirmations: %+v, want %s", pending, id)
	}
	bobOnB.ok(ctx, "POST", "/v1/confirmations/"+id+"/approve", nil, http.StatusNoContent, nil)
	if res := result(t, ctx, answered); res.IsError {
		t.Fatalf("A's call after B's operator approved: %q", resultText(res))
	}
	e := aliceOnA.fails(ctx, "POST", "/v1/confirmations/"+id+"/reject", nil, http.StatusConflict, admin.CodeAlreadyDecided)
	if e.DecidedBy != "bob" || e.Decision != core.DecisionApprove || e.DecidedAt.IsZero() {
		t.Errorf("a second decision on A: %+v, want already approved by bob", e)
	}
	wantEffects(t, ctx, a.s, "1")
}

// OP-5, RV-3: after PostgreSQL restarts, the replicas' listeners come back
// by themselves: a decision made on A just after the restart is applied on
// B (by its event, or by the resync that follows B's reconnection).
func TestReplicasShareAfterPostgresRestartOP5(t *testing.T) {
	ctx := testCtx(t)
	srv := pgtest.Start(t, nil)
	dsn := srv.NewDatabase(t)
	yaml := strings.Replace(gatewayYAML(dsn, upstreamYAML("notes", serveDemo(t, "notes"), true)),
		"  listen:", "  review: {mode: require}\n  listen:", 1)
	rs := startReplicas(t, ctx, yaml, 2, nil)
	a, b := rs[0], rs[1]
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := a.g.ConsoleAs("ops-a").ApproveTool(ctx, "notes_search", "ops-a"); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "the approval reaching B after the restart", func(ctx context.Context) { waitServed(t, ctx, b.s, []string{"notes_search"}, nil) })
}
