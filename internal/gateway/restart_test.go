package gateway_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review"
	"github.com/toolgate/toolgate/internal/store/sqlite"
)

// CF-4, RV-4, OP-5: used confirm tokens and review decisions live in the
// store file, so a gateway restarted on the same file still refuses a
// replayed token and still withholds a rejected tool. The rejection is made
// through a second store on the file while the first gateway runs, as
// `toolgate review reject` does.
func TestRestartKeepsLedgerAndApprovals(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	store := filepath.Join(t.TempDir(), "toolgate.db")
	yaml := strings.Replace(gatewayYAML(store, upstreamYAML("notes", notes, true)),
		"endpoints:\n", "  review:\n    mode: pin\nendpoints:\n", 1)

	g1 := newGateway(t, loadConfig(t, yaml), nil)
	if err := g1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s := connect(t, ctx, "http://"+g1.Addr()+"/mcp", testKey)
	waitServed(t, ctx, s, notesTools, nil)
	preview := call(t, ctx, s, "notes_create_note", map[string]any{"text": "kept"})
	sc, _ := preview.StructuredContent.(map[string]any)
	token, _ := sc["confirmToken"].(string)
	if token == "" {
		t.Fatalf("no confirm token: %+v", preview)
	}
	confirm := map[string]any{"text": "kept", "confirm": true, "confirmToken": token}
	if res := call(t, ctx, s, "notes_create_note", confirm); res.IsError || !strings.Contains(resultText(res), "note created") {
		t.Fatalf("confirm: %q isError=%v", resultText(res), res.IsError)
	}

	other, err := sqlite.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := review.NewReviewer(ctx, core.ReviewPin, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	search, ok := g1.Registry().Get("notes_search")
	if !ok {
		t.Fatal("notes_search is not registered")
	}
	if err := rev.Reject(ctx, search.Info(), "cli"); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	s.end()
	closeGateway(t, g1)

	g2 := newGateway(t, loadConfig(t, yaml), nil)
	if err := g2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s = connect(t, ctx, "http://"+g2.Addr()+"/mcp", testKey)
	// Once the tool registered after notes_search is served, notes_search
	// would be too, were it not withheld.
	names := waitServed(t, ctx, s, []string{"notes_create_note", "notes_list_notes", "notes_side_effects"}, nil)
	if slices.Contains(names, "notes_search") {
		t.Fatalf("after restart the rejected tool is listed: %v", names)
	}
	if _, ok := g2.Registry().Get("notes_search"); !ok {
		t.Fatal("notes_search is not registered: the check above proves nothing")
	}
	if res := call(t, ctx, s, "notes_create_note", confirm); !res.IsError || !strings.Contains(resultText(res), "already used") {
		t.Fatalf("replay after restart: %q isError=%v", resultText(res), res.IsError)
	}
}
