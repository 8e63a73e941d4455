package gateway_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
)

// nextEvent reads sub until an event's data satisfies match, bounded by
// ctx; the events before it are skipped.
func nextEvent(t *testing.T, ctx context.Context, sub core.Subscription, what string, match func(core.EventData) bool) core.EventData {
	t.Helper()
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatalf("subscription ended waiting for %s", what)
			}
			if match(ev.Data) {
				return ev.Data
			}
		case <-ctx.Done():
			t.Fatalf("no %s: %v", what, ctx.Err())
		}
	}
}

// CO-1, CO-2, CO-4, CO-5, RV-3, IM-20: the console of a started gateway.
// Subscribe gives a snapshot with the upstream's tools and state; a
// refresh is planned, then applied once — a plan is spent by applying it
// and forgotten by cancelling it; Info names the endpoints on the bound
// address, open ones apart (AU-7); review and session commands reach the
// gateway's parts.
func TestConsole(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	yaml := gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), upstreamYAML("notes", notes, true))
	yaml = strings.Replace(yaml, "upstreams:\n", "  - path: /open\n    actor: {id: dev, roles: [MEMBER]}\nupstreams:\n", 1)
	cfg := loadConfig(t, yaml)
	g := newGateway(t, cfg, nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	con := g.Console()

	info, err := con.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + g.Addr()
	if !slices.Equal(info.Endpoints, []string{base + "/mcp", base + "/open"}) || !slices.Equal(info.OpenEndpoints, []string{base + "/open"}) {
		t.Errorf("Info: endpoints %q, open %q", info.Endpoints, info.OpenEndpoints)
	}
	if info.ReviewMode != core.ReviewPin || info.Demo {
		t.Errorf("Info: %+v", info)
	}

	snap, sub, err := con.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var names []string
	for _, tl := range snap.Tools {
		if tl.Source != "notes" {
			t.Errorf("snapshot tool %s has source %q", tl.Name, tl.Source)
		}
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, notesTools) {
		t.Errorf("snapshot tools %q, want %q", names, notesTools)
	}
	if len(snap.Upstreams) != 1 || snap.Upstreams[0].Name != "notes" || snap.Upstreams[0].State != core.StateConnected || snap.Upstreams[0].Tools != 4 {
		t.Errorf("snapshot upstreams %+v", snap.Upstreams)
	}
	if snap.Reviews["notes_search"] != core.ReviewNew {
		t.Errorf("snapshot reviews %v", snap.Reviews)
	}

	// CO-4: plan, apply once; the plan is spent.
	plan, err := con.PlanRefresh(ctx, "notes")
	if err != nil {
		t.Fatalf("PlanRefresh: %v", err)
	}
	if plan.ID == "" || plan.Diff.Upstream != "notes" || !plan.Diff.Empty() {
		t.Errorf("plan of an unchanged upstream: %+v", plan)
	}
	diff, err := con.ApplyRefresh(ctx, plan.ID)
	if err != nil || diff.Upstream != "notes" {
		t.Fatalf("ApplyRefresh: %+v, %v", diff, err)
	}
	nextEvent(t, ctx, sub, "refresh.applied", func(d core.EventData) bool {
		ra, ok := d.(core.RefreshApplied)
		return ok && ra.Diff.Upstream == "notes"
	})
	if _, err := con.ApplyRefresh(ctx, plan.ID); !errors.Is(err, core.ErrUnknownPlan) {
		t.Errorf("second ApplyRefresh of %s: %v, want ErrUnknownPlan", plan.ID, err)
	}
	// A cancelled plan is forgotten: neither applied nor cancelled again.
	plan, err = con.PlanRefresh(ctx, "notes")
	if err != nil {
		t.Fatal(err)
	}
	if err := con.CancelRefresh(ctx, plan.ID); err != nil {
		t.Errorf("CancelRefresh: %v", err)
	}
	if _, err := con.ApplyRefresh(ctx, plan.ID); !errors.Is(err, core.ErrUnknownPlan) {
		t.Errorf("ApplyRefresh of a cancelled plan: %v, want ErrUnknownPlan", err)
	}
	if err := con.CancelRefresh(ctx, plan.ID); !errors.Is(err, core.ErrUnknownPlan) {
		t.Errorf("CancelRefresh twice: %v, want ErrUnknownPlan", err)
	}
	if _, err := con.PlanRefresh(ctx, "nope"); !errors.Is(err, core.ErrUnknownUpstream) {
		t.Errorf("PlanRefresh of an unknown upstream: %v (IM-24)", err)
	}
	if d, err := con.Ping(ctx, "notes"); err != nil || d <= 0 {
		t.Errorf("Ping: %v, %v (IM-9)", d, err)
	}

	// RV-3, SV-4: a rejection from the console withholds the tool from
	// the next tools/list.
	s := connect(t, ctx, base+"/mcp", testKey)
	started := nextEvent(t, ctx, sub, "session.started", func(d core.EventData) bool {
		_, ok := d.(core.SessionStarted)
		return ok
	}).(core.SessionStarted)
	if started.Session.ID != s.GetSessionId() || started.Session.Actor.ID != "alice" || started.Session.Endpoint != "/mcp" {
		t.Errorf("session.started: %+v, client session %q", started.Session, s.GetSessionId())
	}
	waitServed(t, ctx, s, notesTools, nil)
	if err := con.RejectTool(ctx, "notes_search", "operator"); err != nil {
		t.Fatal(err)
	}
	if states, _ := con.ReviewStates(ctx); states["notes_search"] != core.ReviewRejected {
		t.Errorf("review states after RejectTool: %v", states)
	}
	waitServed(t, ctx, s, []string{"notes_list_notes"}, []string{"notes_search"})
	if err := con.ApproveTool(ctx, "no_such_tool", "operator"); !errors.Is(err, core.ErrUnknownTool) {
		t.Errorf("ApproveTool of an unknown tool: %v", err)
	}

	// CO-5, SV-2: the operator ends the session; the client's id is gone.
	if err := con.EndSession(ctx, s.GetSessionId()); err != nil {
		t.Fatalf("EndSession: %v", err)
	}
	ended := nextEvent(t, ctx, sub, "session.ended", func(d core.EventData) bool {
		_, ok := d.(core.SessionEnded)
		return ok
	}).(core.SessionEnded)
	if ended.Session.ID != s.GetSessionId() {
		t.Errorf("session.ended: %+v", ended)
	}
	if _, err := s.ListTools(ctx, mcpgo.ListToolsRequest{}); err == nil {
		t.Error("tools/list on the ended session succeeded")
	}
	if err := con.EndSession(ctx, s.GetSessionId()); !errors.Is(err, core.ErrUnknownSession) {
		t.Errorf("EndSession twice: %v", err)
	}
}
