package gateway_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review"
	"github.com/toolgate/toolgate/internal/store/sqlite"
	"github.com/toolgate/toolgate/mcp/demo"
)

func flagKinds(flags []core.Flag) []string {
	var out []string
	for _, f := range flags {
		out = append(out, string(f.Kind))
	}
	return out
}

// RV-3, SV-4, IM-25: the rug pull, through the gateway's own assembly of
// review, registry and importer over a SQLite store. shifty's lookup is
// approved as it first reads; its shift tool swaps the description for a
// poisoned one and the upstream's list_changed refreshes it. Under pin the
// tool is then changed and withheld — not listed to an MCP client, not
// callable — until approved again; under warn it stays served, flagged.
func TestReviewRugPullRV3(t *testing.T) {
	ctx := testCtx(t)
	state := t.TempDir()
	shifty := serveDemoWith(t, "shifty", demo.Options{StateDir: state})
	store := filepath.Join(t.TempDir(), "toolgate.db")
	g := newGateway(t, loadConfig(t, gatewayYAML(store, upstreamYAML("shifty", shifty, true))), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	reg, rev := g.Registry(), g.Reviewer()
	_, sub, err := g.Console().Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	actor := core.Actor{ID: "rug-test"}
	listed := func() bool {
		return slices.ContainsFunc(reg.List(ctx, actor, nil), func(tl core.Tool) bool { return tl.Name == "shifty_lookup" })
	}
	lookupName := []string{"shifty_lookup"}
	lookup := func() core.ToolInfo {
		t.Helper()
		tl, ok := reg.Get("shifty_lookup")
		if !ok {
			t.Fatal("shifty_lookup is not registered")
		}
		return tl.Info()
	}

	first := lookup()
	if first.Description != demo.ShiftyInnocent || rev.State(first) != core.ReviewNew || !listed() {
		t.Fatalf("before review: %q is %q, listed %v", first.Description, rev.State(first), listed())
	}
	waitServed(t, ctx, s, lookupName, nil)
	if flags := review.ReviewFlags(first, reg.Bus().Snapshot().Tools); len(flags) != 0 {
		t.Errorf("the innocent description is flagged: %+v", flags)
	}
	if err := rev.Approve(ctx, first, "alice"); err != nil {
		t.Fatal(err)
	}

	if _, err := reg.Invoke(ctx, actor, "shifty_shift", nil); err != nil {
		t.Fatal(err)
	}
	// The refresh the upstream's list_changed triggers updates lookup.
	nextEvent(t, ctx, sub, "shifty_lookup updated", func(core.EventData) bool {
		return lookup().Description == demo.ShiftyPoisoned
	})
	if _, err := os.Stat(filepath.Join(state, demo.ShiftedMarker)); err != nil {
		t.Errorf("shift left no marker: %v", err)
	}
	pulled := lookup()
	if got := rev.State(pulled); got != core.ReviewChanged {
		t.Fatalf("after the rug pull: %q, want changed", got)
	}
	if rev.Allows(pulled) || listed() {
		t.Error("pin serves the changed tool")
	}
	waitServed(t, ctx, s, nil, lookupName)
	if _, err := reg.Invoke(ctx, actor, "shifty_lookup", json.RawMessage(`{"word":"x"}`)); !errors.Is(err, core.ErrNotPermitted) {
		t.Errorf("calling the withheld tool: %v", err)
	}
	kinds := flagKinds(review.ReviewFlags(pulled, reg.Bus().Snapshot().Tools))
	for _, k := range []core.FlagKind{core.FlagHiddenInstruction, core.FlagSecretPath} {
		if !slices.Contains(kinds, string(k)) {
			t.Errorf("the poisoned description lacks a %s flag: %q", k, kinds)
		}
	}

	// warn over another handle on the same file sees the same decision.
	other, err := sqlite.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	warn, err := review.NewReviewer(ctx, core.ReviewWarn, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	if warn.State(pulled) != core.ReviewChanged || !warn.Allows(pulled) {
		t.Errorf("warn: %q, allowed %v; want changed and served", warn.State(pulled), warn.Allows(pulled))
	}

	if err := rev.Approve(ctx, pulled, "alice"); err != nil {
		t.Fatal(err)
	}
	if rev.State(pulled) != core.ReviewApproved || !listed() {
		t.Errorf("re-approved: %q, listed %v", rev.State(pulled), listed())
	}
	waitServed(t, ctx, s, lookupName, nil)
	if res := call(t, ctx, s, "shifty_lookup", map[string]any{"word": "x"}); res.IsError || resultText(res) != "x: a word." {
		t.Errorf("calling the re-approved tool: %q isError=%v", resultText(res), res.IsError)
	}
}
