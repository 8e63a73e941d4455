package upstreams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
	"github.com/toolgate/toolgate/core/eventbustest"
)

func noBackoff(int) time.Duration { return 0 }

func spec(name string, up core.Upstream) UpstreamSpec {
	return UpstreamSpec{Name: name, Prefix: name, Transport: "fake", Upstream: up}
}

func newImporter(t *testing.T, reg *core.Registry, specs ...UpstreamSpec) *Importer {
	t.Helper()
	im := NewImporter(reg, specs, &ImporterOptions{Backoff: noBackoff, Debounce: 20 * time.Millisecond})
	t.Cleanup(func() { _ = im.Close() })
	return im
}

func toolNames(reg *core.Registry) []string {
	var out []string
	for _, t := range reg.Bus().Snapshot().Tools {
		out = append(out, t.Name)
	}
	return out
}

// gatedUpstream blocks its first ListTools until release is closed, so a
// test can make one upstream answer after another.
type gatedUpstream struct {
	*coretest.FakeUpstream
	release chan struct{}
	listed  chan struct{}
}

// IM-7: listing is parallel, registration replays in configuration order:
// the first-configured upstream wins a contested name although it answered
// last.
func TestStartParallelListConfigOrder(t *testing.T) {
	reg := core.NewRegistry(nil)
	secondDone := make(chan struct{})
	first := &gatedUpstream{FakeUpstream: coretest.NewFakeUpstream("first", coretest.FakeTool("search", "first's search", "")), release: secondDone}
	second := &gatedUpstream{FakeUpstream: coretest.NewFakeUpstream("second", coretest.FakeTool("search", "second's search", "")), listed: secondDone}
	a, b := spec("first", first), spec("second", second)
	a.Prefix, b.Prefix = "", ""
	im := newImporter(t, reg, a, b)
	if err := im.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, ok := reg.Get("search")
	if !ok || got.Source != "first" {
		t.Fatalf("search held by %q, want first", got.Source)
	}
	want := []core.Collision{{Name: "search", Kept: core.Claimant{Source: "first", RemoteName: "search"}, Refused: core.Claimant{Source: "second", RemoteName: "search"}}}
	if diff := cmp.Diff(want, reg.Collisions()); diff != "" {
		t.Fatalf("collisions (-want +got):\n%s", diff)
	}
}

// IM-8, IM-9: an unreachable upstream is reported and skipped; a required
// one fails start-up with its name and error.
func TestStartUnreachable(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("ok", coretest.FakeTool("a", "a", ""))
	down := coretest.NewFakeUpstream("down")
	refused := fmt.Errorf("dial tcp 127.0.0.1:1: %w", syscall.ECONNREFUSED)
	down.FailConnect(refused, refused, refused)
	im := newImporter(t, reg, spec("ok", up), spec("down", down))
	if err := im.Start(context.Background()); err != nil {
		t.Fatalf("optional upstream failing must not fail start: %v", err)
	}
	if diff := cmp.Diff([]string{"ok_a"}, toolNames(reg)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	st := im.Statuses()
	if st[0].State != core.StateConnected || st[0].Tools != 1 || st[0].Server.Name != "ok" {
		t.Fatalf("ok status: %+v", st[0])
	}
	if st[1].State != core.StateFailed || !strings.Contains(st[1].LastError, "connection refused") || st[1].LastErrorAt.IsZero() {
		t.Fatalf("down status: %+v", st[1])
	}

	reg2 := core.NewRegistry(nil)
	down2 := coretest.NewFakeUpstream("db")
	down2.FailConnect(refused, refused, refused)
	s := spec("db", down2)
	s.Required = true
	err := newImporter(t, reg2, s).Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), `required upstream "db"`) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("required failure: %v", err)
	}
}

// IM-7: connecting retries (3 attempts) before giving up.
func TestStartRetriesConnect(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("flaky", coretest.FakeTool("a", "a", ""))
	up.FailConnect(io.EOF, io.EOF)
	im := newImporter(t, reg, spec("flaky", up))
	if err := im.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Get("flaky_a"); !ok {
		t.Fatal("third attempt should have imported")
	}
}

// IM-14, IM-15, IM-16, IM-36: filters, kinds, provenance and defaults.
func TestImportShapes(t *testing.T) {
	ro := `{"readOnlyHint":true}`
	destructive := `{"destructiveHint":true}`
	tools := []core.RemoteTool{
		{Name: "get_item", Annotations: json.RawMessage(ro)},
		{Name: "list_items"},
		{Name: "create_item", Annotations: json.RawMessage(ro)}, // config list beats the hint
		{Name: "delete_item", Annotations: json.RawMessage(destructive)},
		{Name: "both_listed"},
		{Name: "secret_dump"},
		coretest.FakeTool("described", "Says what it does.", `{"type":"object","properties":{"q":{"type":"string"}}}`),
	}
	reg := core.NewRegistry(nil)
	s := spec("svc", coretest.NewFakeUpstream("svc", tools...))
	s.Include = []string{"*_item*", "both_listed", "described", "secret_*"}
	s.Exclude = []string{"secret_*", "both_*"}
	s.Reads = []string{"list_*"}
	s.Actions = []string{"create_*"}
	s.Roles = []string{"MEMBER"}
	im := newImporter(t, reg, s)
	coretest.Must(t, im.Start(context.Background()))

	type view struct {
		Name, Source, Remote string
		Kind                 core.Kind
		Desc, Schema         string
	}
	var got []view
	for _, tl := range reg.Bus().Snapshot().Tools {
		got = append(got, view{tl.Name, tl.Source, tl.RemoteName, tl.Kind, tl.Description, string(tl.InputSchema)})
	}
	want := []view{
		{"svc_create_item", "svc", "create_item", core.KindAction, "MCP tool: create_item", `{"type":"object"}`},
		{"svc_delete_item", "svc", "delete_item", core.KindAction, "MCP tool: delete_item", `{"type":"object"}`},
		{"svc_described", "svc", "described", core.KindAction, "Says what it does.", `{"type":"object","properties":{"q":{"type":"string"}}}`},
		{"svc_get_item", "svc", "get_item", core.KindRead, "MCP tool: get_item", `{"type":"object"}`},
		{"svc_list_items", "svc", "list_items", core.KindRead, "MCP tool: list_items", `{"type":"object"}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("imported (-want +got):\n%s", diff)
	}
	if tl, _ := reg.Get("svc_get_item"); len(tl.Roles) != 1 || tl.Roles[0] != "MEMBER" {
		t.Fatalf("upstream roles not applied: %v", tl.Roles)
	}
	var filtered []string
	for _, d := range im.Drops() {
		if d.Kind == core.DropFilter {
			filtered = append(filtered, d.RemoteName)
		}
	}
	if diff := cmp.Diff([]string{"both_listed", "secret_dump"}, filtered); diff != "" {
		t.Fatalf("filter drops (-want +got):\n%s", diff)
	}

	s2 := spec("r", coretest.NewFakeUpstream("r", core.RemoteTool{Name: "x"}))
	s2.DefaultKind = core.KindRead
	reg2 := core.NewRegistry(nil)
	coretest.Must(t, newImporter(t, reg2, s2).Start(context.Background()))
	if tl, _ := reg2.Get("r_x"); tl.Kind != core.KindRead {
		t.Fatalf("defaultKind read not applied: %s", tl.Kind)
	}
}

// IM-18, IM-19: a schema that does not compile, or carries a catastrophic
// pattern, drops the tool with a warning naming upstream, tool and reason.
func TestImportDropsHostileSchemas(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("sneaky",
		coretest.FakeTool("ok", "fine", `{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z0-9-]{1,40}$"}}}`),
		coretest.FakeTool("broken", "bad schema", `{"type":"object","properties":{"n":{"type":"integr"}}}`),
		coretest.FakeTool("redos", "evil", `{"type":"object","properties":{"s":{"type":"string","pattern":"(a+)+$"}}}`),
	)
	im := newImporter(t, reg, spec("sneaky", up))
	coretest.Must(t, im.Start(context.Background()))
	if diff := cmp.Diff([]string{"sneaky_ok"}, toolNames(reg)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	drops := im.Drops()
	if len(drops) != 2 {
		t.Fatalf("drops: %+v", drops)
	}
	if drops[0].RemoteName != "broken" || drops[0].Kind != core.DropSchema || drops[0].Source != "sneaky" || drops[0].Reason == "" {
		t.Fatalf("schema drop: %+v", drops[0])
	}
	if drops[1].RemoteName != "redos" || drops[1].Kind != core.DropPattern || !strings.Contains(drops[1].Reason, "/properties/s/pattern") {
		t.Fatalf("pattern drop: %+v", drops[1])
	}
	if snap := reg.Bus().Snapshot(); len(snap.Dropped) != 2 {
		t.Fatalf("snapshot drops: %+v", snap.Dropped)
	}
}

// IM-17, IM-18: valid ECMA-262 patterns RE2 cannot run (lookarounds,
// backreferences) no longer drop the tool, and calls are checked against
// them.
func TestImportKeepsECMAPatterns(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("ecma",
		coretest.FakeTool("slug", "reads", `{"type":"object","properties":{"s":{"type":"string","pattern":"^(?!-)[a-z0-9-]+(?<!-)$"}}}`),
		coretest.FakeTool("quoted", "reads", `{"type":"object","properties":{"q":{"type":"string","pattern":"^(['\"])[^'\"]*\\1$"}}}`),
	)
	im := newImporter(t, reg, spec("ecma", up))
	coretest.Must(t, im.Start(context.Background()))
	if diff := cmp.Diff([]string{"ecma_quoted", "ecma_slug"}, toolNames(reg)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s (drops %+v)", diff, im.Drops())
	}
	actor := core.Actor{ID: "x"}
	for _, tt := range []struct {
		tool, args string
		ok         bool
	}{
		{"ecma_slug", `{"s":"a-b"}`, true},
		{"ecma_slug", `{"s":"-ab"}`, false},
		{"ecma_slug", `{"s":"ab-"}`, false},
		{"ecma_quoted", `{"q":"'x'"}`, true},
		{"ecma_quoted", `{"q":"'x\""}`, false},
	} {
		_, err := reg.Check(context.Background(), actor, tt.tool, json.RawMessage(tt.args))
		if (err == nil) != tt.ok {
			t.Errorf("%s %s: err %v, want ok %v", tt.tool, tt.args, err, tt.ok)
		}
	}
}

// IM-19: a catastrophic pattern in a tool's output schema, which is served
// as sent and checked by clients, drops the tool like one in its input
// schema, and the reason says which schema.
func TestImportDropsHostileOutputSchemas(t *testing.T) {
	withOutput := func(name, out string) core.RemoteTool {
		rt := coretest.FakeTool(name, "reads", `{"type":"object"}`)
		rt.OutputSchema = json.RawMessage(out)
		return rt
	}
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("sneaky",
		withOutput("ok", `{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z0-9-]{1,40}$"}}}`),
		withOutput("nested", `{"type":"object","properties":{"rows":{"type":"array","items":{"$ref":"#/$defs/row"}}},"$defs":{"row":{"properties":{"v":{"pattern":"^(\\d+)*$"}}}}}`),
		withOutput("key", `{"type":"object","patternProperties":{"^(a|aa)+$":{}}}`),
		withOutput("loose", `{"type":"objekt","properties":{"v":{"pattern":"(a+)+$"}}}`),
	)
	im := newImporter(t, reg, spec("sneaky", up))
	coretest.Must(t, im.Start(context.Background()))
	if diff := cmp.Diff([]string{"sneaky_ok"}, toolNames(reg)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	want := map[string]string{
		"nested": "/$defs/row/properties/v/pattern",
		"key":    "/patternProperties/^(a|aa)+$",
		"loose":  "/properties/v/pattern",
	}
	drops := im.Drops()
	if len(drops) != len(want) {
		t.Fatalf("drops: %+v", drops)
	}
	for _, d := range drops {
		ptr, ok := want[d.RemoteName]
		if !ok || d.Kind != core.DropPattern || !strings.HasPrefix(d.Reason, "outputSchema: pattern ") || !strings.Contains(d.Reason, " at "+ptr+" ") {
			t.Errorf("drop %+v; want a pattern drop in the outputSchema at %s", d, ptr)
		}
	}
}

// IM-20, IM-21, IM-26: a refresh is the upstream's current answer: added,
// removed and changed tools, native tools untouched, no self-collision; a
// removed tool is then unknown here.
func TestRefreshDiff(t *testing.T) {
	reg := core.NewRegistry(nil)
	coretest.Must(t, reg.Register(coretest.NativeTool("notes_keep"))) // native tool sharing the prefix
	up := coretest.NewFakeUpstream("notes", coretest.FakeTool("a", "A", ""), coretest.FakeTool("b", "B", ""), coretest.FakeTool("c", "C", ""))
	im := newImporter(t, reg, spec("notes", up))
	coretest.Must(t, im.Start(context.Background()))

	up.SetTools(coretest.FakeTool("a", "A", ""), coretest.FakeTool("b", "B changed", ""), coretest.FakeTool("d", "D", ""), coretest.FakeTool("keep", "clash", ""))
	diff, err := im.Refresh(context.Background(), "notes")
	coretest.Must(t, err)
	names := func(ts []core.ToolInfo) (out []string) {
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	if got := names(diff.Added); !cmp.Equal(got, []string{"notes_d"}) {
		t.Fatalf("added %v", got)
	}
	if got := names(diff.Removed); !cmp.Equal(got, []string{"notes_c"}) {
		t.Fatalf("removed %v", got)
	}
	if len(diff.Changed) != 1 || diff.Changed[0].New.Name != "notes_b" || !cmp.Equal(diff.Changed[0].Fields, []string{"description"}) {
		t.Fatalf("changed %+v", diff.Changed)
	}
	if len(diff.Collisions) != 1 || diff.Collisions[0].Kept.Source != core.NativeSource {
		t.Fatalf("collisions %+v", diff.Collisions)
	}
	if diff := cmp.Diff([]string{"notes_a", "notes_b", "notes_d", "notes_keep"}, toolNames(reg)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	if tl, _ := reg.Get("notes_keep"); !tl.Native() {
		t.Fatal("native tool replaced by refresh")
	}
	if _, err := reg.Invoke(context.Background(), core.Actor{ID: "x"}, "notes_c", nil); !errors.Is(err, core.ErrUnknownTool) {
		t.Fatalf("removed tool: %v", err)
	}
	// Refreshing the same answer again changes nothing.
	again, err := im.Refresh(context.Background(), "notes")
	coretest.Must(t, err)
	if !again.Empty() {
		t.Fatalf("second refresh not empty: %+v", again)
	}
}

// CO-4 groundwork: planning shows the diff and changes nothing until applied.
func TestPlanThenApply(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("n", coretest.FakeTool("a", "A", ""))
	im := newImporter(t, reg, spec("n", up))
	coretest.Must(t, im.Start(context.Background()))
	up.SetTools(coretest.FakeTool("b", "B", ""))
	plan, err := im.PlanRefresh(context.Background(), "n")
	coretest.Must(t, err)
	if len(plan.Diff.Added) != 1 || len(plan.Diff.Removed) != 1 {
		t.Fatalf("plan %+v", plan.Diff)
	}
	if diff := cmp.Diff([]string{"n_a"}, toolNames(reg)); diff != "" {
		t.Fatalf("planning changed the registry (-want +got):\n%s", diff)
	}
	applied, err := im.ApplyRefresh(plan.ID)
	coretest.Must(t, err)
	if !cmp.Equal(plan.Diff, applied) {
		t.Fatalf("applied diff differs from plan:\n%s", cmp.Diff(plan.Diff, applied))
	}
	if diff := cmp.Diff([]string{"n_b"}, toolNames(reg)); diff != "" {
		t.Fatalf("after apply (-want +got):\n%s", diff)
	}
}

// IM-22: a name freed by one upstream goes to the next upstream in
// configuration order within the same refresh.
func TestRefreshAllFreedNameClaimedInOrder(t *testing.T) {
	reg := core.NewRegistry(nil)
	first := coretest.NewFakeUpstream("first", coretest.FakeTool("search", "1", ""))
	second := coretest.NewFakeUpstream("second", coretest.FakeTool("search", "2", ""))
	a, b := spec("first", first), spec("second", second)
	a.Prefix, b.Prefix = "", ""
	im := newImporter(t, reg, a, b)
	coretest.Must(t, im.Start(context.Background()))
	if tl, _ := reg.Get("search"); tl.Source != "first" {
		t.Fatalf("held by %s", tl.Source)
	}
	first.SetTools()
	_, err := im.RefreshAll(context.Background())
	coretest.Must(t, err)
	if tl, _ := reg.Get("search"); tl.Source != "second" || tl.Description != "2" {
		t.Fatalf("after refresh held by %q (%q), want second", tl.Source, tl.Description)
	}
	if len(reg.Collisions()) != 0 {
		t.Fatalf("stale collision: %+v", reg.Collisions())
	}
	// Single-upstream refresh frees it too.
	first.SetTools(coretest.FakeTool("search", "1", ""))
	_, err = im.RefreshAll(context.Background())
	coretest.Must(t, err)
	if tl, _ := reg.Get("search"); tl.Source != "second" {
		t.Fatalf("a live handler was replaced: held by %s", tl.Source)
	}
	if len(reg.Collisions()) != 1 || reg.Collisions()[0].Refused.Source != "first" {
		t.Fatalf("collision: %+v", reg.Collisions())
	}
}

// IM-23: an upstream unreachable during a refresh prunes nothing.
// IM-24: an unknown name is an error distinct from "0 tools".
func TestRefreshUnreachableAndUnknown(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("n", coretest.FakeTool("a", "A", ""))
	im := newImporter(t, reg, spec("n", up))
	coretest.Must(t, im.Start(context.Background()))
	up.FailList(io.EOF, io.EOF, io.EOF)
	if _, err := im.Refresh(context.Background(), "n"); err == nil {
		t.Fatal("refresh of a failing upstream succeeded")
	}
	if _, ok := reg.Get("n_a"); !ok {
		t.Fatal("unreachable upstream's tools were pruned")
	}
	if st := im.Statuses()[0]; st.State != core.StateFailed {
		t.Fatalf("state %s", st.State)
	}

	_, err := im.Refresh(context.Background(), "nope")
	if !errors.Is(err, core.ErrUnknownUpstream) {
		t.Fatalf("unknown upstream: %v", err)
	}
	empty := coretest.NewFakeUpstream("empty")
	reg2 := core.NewRegistry(nil)
	im2 := newImporter(t, reg2, spec("empty", empty))
	coretest.Must(t, im2.Start(context.Background()))
	d, err := im2.Refresh(context.Background(), "empty")
	if err != nil || !d.Empty() {
		t.Fatalf("0 tools must be a success: %v %+v", err, d)
	}
}

// IM-25: bursts of list_changed become one debounced refresh. In a bubble
// the debounce timer runs on the bubble's clock, so no real time passes.
func TestToolsChangedDebounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := core.NewRegistry(nil)
		up := coretest.NewFakeUpstream("n", coretest.FakeTool("a", "A", ""))
		im := newImporter(t, reg, spec("n", up))
		coretest.Must(t, im.Start(context.Background()))
		_, sub := reg.Bus().Subscribe(0)
		defer sub.Close()
		before := up.Lists()
		up.SetTools(coretest.FakeTool("a", "A", ""), coretest.FakeTool("b", "B", ""))
		for range 5 {
			up.NotifyToolsChanged()
		}
		var ra core.RefreshApplied
		eventbustest.Expect(t, sub, func(e core.RefreshApplied) { ra = e })
		if len(ra.Diff.Added) != 1 {
			t.Fatalf("diff %+v", ra.Diff)
		}
		if n := up.Lists() - before; n != 1 {
			t.Fatalf("%d refreshes for one burst, want 1", n)
		}
	})
}

// IM-27, IM-28: a transient failure drops the connection and a read is
// retried in place on a fresh one.
func TestReadRetriedOnTransient(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("n", core.RemoteTool{Name: "get", Annotations: json.RawMessage(`{"readOnlyHint":true}`)})
	im := newImporter(t, reg, spec("n", up))
	coretest.Must(t, im.Start(context.Background()))
	up.FailCall(fmt.Errorf("read: %w", syscall.ECONNRESET))
	if _, err := reg.Invoke(context.Background(), core.Actor{ID: "x"}, "n_get", nil); err != nil {
		t.Fatal(err)
	}
	if up.Calls("get") != 2 || up.Connects() != 2 {
		t.Fatalf("calls=%d connects=%d, want 2 and 2", up.Calls("get"), up.Connects())
	}
}

// IM-29: an action whose reply was lost is never re-issued; the caller is
// told the outcome is unknown. Only a request that never left is retried.
func TestActionNeverReissued(t *testing.T) {
	ambiguous := []error{
		io.EOF,
		fmt.Errorf("read: %w", syscall.ECONNRESET),
		&core.StatusError{Code: 502},
		context.DeadlineExceeded,
	}
	for _, failure := range ambiguous {
		t.Run(failure.Error(), func(t *testing.T) {
			reg := core.NewRegistry(nil)
			up := coretest.NewFakeUpstream("n", core.RemoteTool{Name: "send"})
			im := newImporter(t, reg, spec("n", up))
			coretest.Must(t, im.Start(context.Background()))
			up.FailCall(failure)
			_, err := reg.Invoke(context.Background(), core.Actor{ID: "x"}, "n_send", nil)
			if !errors.Is(err, core.ErrOutcomeUnknown) {
				t.Fatalf("got %v, want outcome unknown", err)
			}
			if up.Calls("send") != 1 {
				t.Fatalf("action ran %d times", up.Calls("send"))
			}
		})
	}

	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("n", core.RemoteTool{Name: "send"})
	im := newImporter(t, reg, spec("n", up))
	coretest.Must(t, im.Start(context.Background()))
	up.FailCall(fmt.Errorf("dial: %w: %w", core.ErrNotSent, syscall.ECONNREFUSED))
	if _, err := reg.Invoke(context.Background(), core.Actor{ID: "x"}, "n_send", nil); err != nil {
		t.Fatalf("a request that never left may be retried: %v", err)
	}

	up.FailCall(&core.RPCError{Code: -32602, Message: "bad params"})
	_, err := reg.Invoke(context.Background(), core.Actor{ID: "x"}, "n_send", nil)
	if err == nil || errors.Is(err, core.ErrOutcomeUnknown) {
		t.Fatalf("a JSON-RPC error is a definite failure: %v", err)
	}
}

// IM-29, IM-27: a reconnect the server answered with a status is that
// status, not "not sent"; the action it was for never ran, so its outcome
// is known. A transient answer is connected again (nothing is re-issued
// by that), a definite one is not.
func TestConnectAnsweredIsNotNotSentIM29(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("n", core.RemoteTool{Name: "send"})
	im := newImporter(t, reg, spec("n", up))
	coretest.Must(t, im.Start(context.Background()))
	invoke := func() error {
		_, err := reg.Invoke(context.Background(), core.Actor{ID: "x"}, "n_send", nil)
		return err
	}
	// A lost reply drops the connection: the next call reconnects.
	up.FailCall(io.ErrUnexpectedEOF)
	if err := invoke(); !errors.Is(err, core.ErrOutcomeUnknown) {
		t.Fatalf("lost reply: %v", err)
	}

	up.FailConnect(&core.StatusError{Code: 403})
	err := invoke()
	var se *core.StatusError
	if !errors.As(err, &se) || se.Code != 403 || errors.Is(err, core.ErrNotSent) || errors.Is(err, core.ErrOutcomeUnknown) {
		t.Fatalf("reconnect answered 403: %v", err)
	}
	st := im.Statuses()[0]
	if st.State != core.StateFailed || strings.Contains(st.LastError, core.ErrNotSent.Error()) || !strings.Contains(st.LastError, "HTTP 403") {
		t.Fatalf("status after a 403 on connect: %s %q", st.State, st.LastError)
	}
	if up.Calls("send") != 1 || up.Connects() != 1 {
		t.Fatalf("calls=%d connects=%d after a refused reconnect, want 1 and 1", up.Calls("send"), up.Connects())
	}

	up.FailConnect(&core.StatusError{Code: 502})
	if err := invoke(); err != nil {
		t.Fatalf("reconnect answered 502 once: %v", err)
	}
	if up.Calls("send") != 2 || up.Connects() != 2 {
		t.Fatalf("calls=%d connects=%d, want 2 and 2", up.Calls("send"), up.Connects())
	}
}

// IM-30: an isError result is the tool's own failure, never retried.
func TestIsErrorNotRetried(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("n", core.RemoteTool{Name: "get", Annotations: json.RawMessage(`{"readOnlyHint":true}`)})
	up.SetHandler("get", func(json.RawMessage) (core.Result, error) {
		return core.ErrorResult("connection reset by peer (timeout, 503)"), nil
	})
	im := newImporter(t, reg, spec("n", up))
	coretest.Must(t, im.Start(context.Background()))
	res, err := reg.Invoke(context.Background(), core.Actor{ID: "x"}, "n_get", nil)
	if err != nil || !res.IsError || up.Calls("get") != 1 {
		t.Fatalf("err=%v isError=%v calls=%d", err, res.IsError, up.Calls("get"))
	}
}

// IM-31: one replaceable classifier decides for every kind.
func TestCustomClassifier(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("n", core.RemoteTool{Name: "send"})
	var asked []core.Kind
	im := NewImporter(reg, []UpstreamSpec{spec("n", up)}, &ImporterOptions{
		Backoff: noBackoff,
		Retry:   func(k core.Kind, err error) bool { asked = append(asked, k); return true },
	})
	defer im.Close()
	coretest.Must(t, im.Start(context.Background()))
	up.FailCall(io.EOF)
	if _, err := reg.Invoke(context.Background(), core.Actor{ID: "x"}, "n_send", nil); err != nil {
		t.Fatal(err)
	}
	if up.Calls("send") != 2 || !cmp.Equal(asked, []core.Kind{core.KindAction}) {
		t.Fatalf("calls=%d asked=%v", up.Calls("send"), asked)
	}
}

// IM-33: the review-facing list of imported tools.
func TestImportedTools(t *testing.T) {
	reg := core.NewRegistry(nil)
	coretest.Must(t, reg.Register(coretest.NativeTool("own")))
	im := newImporter(t, reg, spec("gh", coretest.NewFakeUpstream("gh", coretest.FakeTool("x", "third-party text", ""))))
	coretest.Must(t, im.Start(context.Background()))
	want := []core.ImportedTool{{Name: "gh_x", Source: "gh", RemoteName: "x", Kind: core.KindAction, Description: "third-party text"}}
	if diff := cmp.Diff(want, im.ImportedTools()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestPingAndClose(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("n")
	im := NewImporter(reg, []UpstreamSpec{spec("n", up)}, &ImporterOptions{Backoff: noBackoff})
	coretest.Must(t, im.Start(context.Background()))
	if _, err := im.Ping(context.Background(), "n"); err != nil {
		t.Fatal(err)
	}
	if _, err := im.Ping(context.Background(), "zz"); !errors.Is(err, core.ErrUnknownUpstream) {
		t.Fatalf("ping unknown: %v", err)
	}
	coretest.Must(t, im.Close())
	if up.Connected() {
		t.Fatal("upstream still connected after Close")
	}
	if st := im.Statuses()[0]; st.State != core.StateDisconnected {
		t.Fatalf("state after close: %s", st.State)
	}
}

// IM-35: the fake upstream is a real Upstream for the importer: its tools
// are stamped with the spec's name as source, as a real one's are.
func TestFakeUpstreamStampsSource(t *testing.T) {
	reg := core.NewRegistry(nil)
	f := coretest.NewFakeUpstream("memory-fake", coretest.FakeTool("lookup", "Looks up.", `{"type":"object"}`))
	im := newImporter(t, reg, spec("fake1", f))
	coretest.Must(t, im.Start(context.Background()))
	tool, ok := reg.Get("fake1_lookup")
	if !ok || tool.Source != "fake1" || tool.RemoteName != "lookup" || tool.Native() {
		t.Fatalf("fake-imported tool: %+v", tool)
	}
	if st := im.Statuses()[0]; st.Server.Name != "memory-fake" || st.Transport != "fake" {
		t.Fatalf("status: %+v", st)
	}
	var _ core.Upstream = f
}

func (g *gatedUpstream) ListTools(ctx context.Context) ([]core.RemoteTool, error) {
	if g.release != nil {
		select {
		case <-g.release:
		case <-time.After(5 * time.Second):
			return nil, errors.New("never released: listing is not parallel")
		}
	}
	defer func() {
		if g.listed != nil {
			close(g.listed)
			g.listed = nil
		}
	}()
	return g.FakeUpstream.ListTools(ctx)
}
