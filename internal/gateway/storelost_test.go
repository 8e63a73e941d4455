package gateway_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/store/sqlite"
)

// CF-3, CF-4, OP-5: the store file is deleted while the gateway serves (the
// gateway's handles keep writing to the unlinked file). From then on action
// calls are refused, previews and confirmations alike, and reads keep
// working. A gateway restarted on the path gets a new, empty store, and a
// token issued against the lost one, spent or not, is refused there with
// its reason: the spent one cannot run a second time.
func TestStoreDeletedWhileServingCF3(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	store := filepath.Join(t.TempDir(), "toolgate.db")
	yaml := gatewayYAML(store, upstreamYAML("notes", notes, true))

	g1 := newGateway(t, loadConfig(t, yaml), nil)
	if err := g1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s := connect(t, ctx, "http://"+g1.Addr()+"/mcp", testKey)
	waitServed(t, ctx, s, notesTools, nil)
	spent := confirmArgs(previewToken(t, ctx, s, "spent"), "spent")
	if res := call(t, ctx, s, "notes_create_note", spent); res.IsError {
		t.Fatalf("confirm: %q", resultText(res))
	}
	pending := confirmArgs(previewToken(t, ctx, s, "pending"), "pending")
	wantEffects(t, ctx, s, "1")

	if err := os.Remove(store); err != nil {
		t.Fatal(err)
	}
	if res := call(t, ctx, s, "notes_create_note", pending); !res.IsError || !strings.Contains(resultText(res), "deleted or replaced") {
		t.Errorf("confirm after the store was deleted: %q isError=%v; want a refusal naming the lost store", resultText(res), res.IsError)
	}
	if res := call(t, ctx, s, "notes_create_note", map[string]any{"text": "later"}); !res.IsError || !strings.Contains(resultText(res), "deleted or replaced") {
		t.Errorf("preview after the store was deleted: %q isError=%v; want a refusal", resultText(res), res.IsError)
	}
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": "spent"}); res.IsError || !strings.Contains(resultText(res), "spent") {
		t.Errorf("a read after the store was deleted: %q isError=%v; want it served", resultText(res), res.IsError)
	}
	wantEffects(t, ctx, s, "1")
	// A replica whose store is gone takes no traffic.
	if resp, err := http.Get("http://" + g1.Addr() + "/readyz"); err != nil {
		t.Fatal(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"store"`) {
			t.Errorf("/readyz with the store deleted: %d %s, want 503 naming the store", resp.StatusCode, body)
		}
	}
	s.end()
	closeGateway(t, g1)

	g2 := newGateway(t, loadConfig(t, yaml), nil)
	if err := g2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s = connect(t, ctx, "http://"+g2.Addr()+"/mcp", testKey)
	waitServed(t, ctx, s, notesTools, nil)
	for name, args := range map[string]map[string]any{"spent": spent, "pending": pending} {
		if res := call(t, ctx, s, "notes_create_note", args); !res.IsError || !strings.Contains(resultText(res), "another store") {
			t.Errorf("the %s token against the new store: %q isError=%v; want it refused as issued against another store", name, resultText(res), res.IsError)
		}
	}
	wantEffects(t, ctx, s, "1")
	// The new store serves actions as any store does.
	fresh := confirmArgs(previewToken(t, ctx, s, "fresh"), "fresh")
	if res := call(t, ctx, s, "notes_create_note", fresh); res.IsError {
		t.Fatalf("confirm on the new store: %q", resultText(res))
	}
	wantEffects(t, ctx, s, "2")
}

// CF-3: the store file is replaced by another toolgate store while the
// gateway serves: action calls are refused; once the original file is back
// at its path they are served again.
func TestStoreReplacedWhileServingCF3(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	dir := t.TempDir()
	store := filepath.Join(dir, "toolgate.db")
	g := newGateway(t, loadConfig(t, gatewayYAML(store, upstreamYAML("notes", notes, true))), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	waitServed(t, ctx, s, notesTools, nil)
	pending := confirmArgs(previewToken(t, ctx, s, "pending"), "pending")

	other := filepath.Join(dir, "other.db")
	o, err := sqlite.Open(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "kept.db")
	if err := os.Rename(store, kept); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, store); err != nil {
		t.Fatal(err)
	}
	if res := call(t, ctx, s, "notes_create_note", pending); !res.IsError || !strings.Contains(resultText(res), "deleted or replaced") {
		t.Errorf("confirm after the store was replaced: %q isError=%v; want a refusal", resultText(res), res.IsError)
	}
	wantEffects(t, ctx, s, "0")

	if err := os.Rename(kept, store); err != nil {
		t.Fatal(err)
	}
	if res := call(t, ctx, s, "notes_create_note", pending); res.IsError {
		t.Errorf("confirm with the store file back: %q", resultText(res))
	}
	wantEffects(t, ctx, s, "1")
}

// previewToken previews notes_create_note with text and returns its token.
func previewToken(t *testing.T, ctx context.Context, s *session, text string) string {
	t.Helper()
	res := call(t, ctx, s, "notes_create_note", map[string]any{"text": text})
	sc, _ := res.StructuredContent.(map[string]any)
	token, _ := sc["confirmToken"].(string)
	if res.IsError || token == "" {
		t.Fatalf("preview: %q isError=%v", resultText(res), res.IsError)
	}
	return token
}

func confirmArgs(token, text string) map[string]any {
	return map[string]any{"text": text, "confirm": true, "confirmToken": token}
}

// wantEffects checks how many side effects the notes upstream performed.
func wantEffects(t *testing.T, ctx context.Context, s *session, want string) {
	t.Helper()
	if got := resultText(call(t, ctx, s, "notes_side_effects", map[string]any{})); got != want {
		t.Errorf("notes performed %s side effects, want %s", got, want)
	}
}
