package confirm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
	"github.com/toolgate/toolgate/core/schema"
)

// mapLedger is a minimal TokenLedger for the gate's unit tests; the store
// implementations have their own conformance suite.
type mapLedger struct {
	mu   sync.Mutex
	used map[string]bool
	// id is the store's identity, "test-store" when empty; lost fails
	// StoreID and UseToken, as a deleted store file does.
	id   string
	lost error
	// down fails UseToken only, as a store server that cannot be reached
	// does (its identity is known from before).
	down error
}

var testSecret = []byte("0123456789abcdef0123456789abcdef-test")

type gateFixture struct {
	reg   *core.Registry
	gate  *Gate
	runs  atomic.Int64
	clock time.Time
}

func newGateFixture(t *testing.T) *gateFixture {
	t.Helper()
	f := &gateFixture{reg: core.NewRegistry(nil), clock: time.Unix(1_800_000_000, 0)}
	g, err := NewGate(GateOptions{Secret: testSecret, Ledger: &mapLedger{used: map[string]bool{}}, Now: func() time.Time { return f.clock }})
	coretest.Must(t, err)
	f.gate = g
	coretest.Must(t, f.reg.Register(core.Tool{
		Name: "notes_create", Source: "notes", RemoteName: "create", Kind: core.KindAction,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"n":{"type":"integer"}},"required":["title"],"additionalProperties":false}`),
		Handler: func(context.Context, json.RawMessage) (core.Result, error) {
			f.runs.Add(1)
			return core.TextResult("created"), nil
		},
	}))
	coretest.Must(t, f.reg.Register(core.Tool{Name: "other_action", Kind: core.KindAction, Handler: coretest.EchoHandler(nil)}))
	return f
}

// withField is tok with field i replaced by v, the mac kept.
func withField(tok string, i int, v string) string {
	parts := strings.Split(tok, ".")
	parts[i] = v
	return strings.Join(parts, ".")
}

func confirmArgs(args, token string) json.RawMessage {
	var m map[string]any
	_ = json.Unmarshal([]byte(args), &m)
	m["confirm"] = true
	m["confirmToken"] = token
	b, _ := json.Marshal(m)
	return b
}

var alice = core.Actor{ID: "alice", Tenant: "acme"}

// CF-2, CF-3: the preview validates, runs nothing and returns a token of
// the documented shape with the canonical arguments.
func TestGatePreview(t *testing.T) {
	f := newGateFixture(t)
	p := f.preview(t, alice, `{"n":1,"title":"x"}`)
	if f.runs.Load() != 0 {
		t.Fatal("the preview ran the tool")
	}
	if !regexp.MustCompile(`^\d+\.test-store\.[0-9a-f]{32}\.[0-9a-f]{64}$`).MatchString(p.ConfirmToken) {
		t.Fatalf("token shape: %q", p.ConfirmToken)
	}
	if !p.ExpiresAt.Equal(f.clock.Add(DefaultConfirmTTL)) {
		t.Fatalf("expires %v", p.ExpiresAt)
	}
	if string(p.Call.Arguments) != `{"n":1,"title":"x"}` || p.Call.Source != "notes" || p.Call.RemoteName != "create" {
		t.Fatalf("preview call: %+v %s", p.Call, p.Call.Arguments)
	}
	if !strings.Contains(p.Preview, "upstream notes") {
		t.Fatalf("preview text: %q", p.Preview)
	}
	// The preview validated: bad arguments fail before any token exists.
	_, err := f.gate.Invoke(context.Background(), f.reg, alice, "notes_create", json.RawMessage(`{"title":5}`))
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("invalid preview: %v", err)
	}
}

// CF-4: the confirming call runs exactly once; key order does not matter;
// every other mismatch is refused with its own error and runs nothing.
func TestGateConfirm(t *testing.T) {
	f := newGateFixture(t)
	ctx := context.Background()
	p := f.preview(t, alice, `{"title":"x","n":1}`)
	tok := p.ConfirmToken

	refusals := []struct {
		name  string
		actor core.Actor
		tool  string
		args  string
		token string
		want  error
	}{
		{"changed arguments", alice, "notes_create", `{"title":"y","n":1}`, tok, ErrConfirmArgs},
		{"other actor", core.Actor{ID: "bob", Tenant: "acme"}, "notes_create", `{"title":"x","n":1}`, tok, ErrConfirmActor},
		{"other tenant", core.Actor{ID: "alice", Tenant: "evil"}, "notes_create", `{"title":"x","n":1}`, tok, ErrConfirmTenant},
		{"other tool", alice, "other_action", `{"title":"x","n":1}`, tok, ErrConfirmTool},
		{"forged mac", alice, "notes_create", `{"title":"x","n":1}`, tok[:len(tok)-4] + "beef", ErrConfirmForged},
		{"garbage", alice, "notes_create", `{"title":"x","n":1}`, "hello", ErrConfirmForged},
		{"other nonce", alice, "notes_create", `{"title":"x","n":1}`, withField(tok, 2, strings.Repeat("0", 32)), ErrConfirmForged},
		{"other store claimed", alice, "notes_create", `{"title":"x","n":1}`, withField(tok, 1, "other-store"), ErrConfirmForged},
		// The formats before nonces and store binding (CF-3) are refused as
		// such.
		{"format without nonce", alice, "notes_create", `{"title":"x","n":1}`, strings.Split(tok, ".")[0] + "." + TokenID(tok), ErrConfirmOldFormat},
		{"format without store", alice, "notes_create", `{"title":"x","n":1}`, strings.Join(slices.Delete(strings.Split(tok, "."), 1, 2), "."), ErrConfirmOldFormat},
		{"missing token", alice, "notes_create", `{"title":"x","n":1}`, "", ErrConfirmMissing},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			args := confirmArgs(r.args, r.token)
			if r.token == "" {
				args = json.RawMessage(`{"title":"x","n":1,"confirm":true}`)
			}
			_, err := f.gate.Invoke(ctx, f.reg, r.actor, r.tool, args)
			var re *RefusedError
			if !errors.Is(err, r.want) || !errors.As(err, &re) || re.Text == "" {
				t.Fatalf("got %v, want %v", err, r.want)
			}
		})
	}
	if f.runs.Load() != 0 {
		t.Fatalf("a refused confirmation ran the tool %d times", f.runs.Load())
	}

	res, err := f.gate.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(`{"n":1,"title":"x"}`, tok))
	if err != nil || res.IsError || f.runs.Load() != 1 {
		t.Fatalf("confirm: %v %s runs=%d", err, res.JSON, f.runs.Load())
	}
	_, err = f.gate.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(`{"n":1,"title":"x"}`, tok))
	if !errors.Is(err, ErrConfirmUsed) || f.runs.Load() != 1 {
		t.Fatalf("replay: %v runs=%d", err, f.runs.Load())
	}
}

func TestGateExpiry(t *testing.T) {
	f := newGateFixture(t)
	p := f.preview(t, alice, `{"title":"x"}`)
	f.clock = f.clock.Add(DefaultConfirmTTL + time.Second)
	_, err := f.gate.Invoke(context.Background(), f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, p.ConfirmToken))
	if !errors.Is(err, ErrConfirmExpired) || f.runs.Load() != 0 {
		t.Fatalf("expired: %v", err)
	}
}

// CF-3: verification is stateless: a gate that never saw the token (a
// restart) accepts it; it just can no longer say which part differs.
func TestGateStateless(t *testing.T) {
	f := newGateFixture(t)
	p := f.preview(t, alice, `{"title":"x"}`)
	fresh, err := NewGate(GateOptions{Secret: testSecret, Ledger: &mapLedger{used: map[string]bool{}}, Now: func() time.Time { return f.clock }})
	coretest.Must(t, err)
	if _, err := fresh.Invoke(context.Background(), f.reg, alice, "notes_create", confirmArgs(`{"title":"y"}`, p.ConfirmToken)); !errors.Is(err, ErrConfirmForged) {
		t.Fatalf("unknown token with other args: %v", err)
	}
	if _, err := fresh.Invoke(context.Background(), f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, p.ConfirmToken)); err != nil {
		t.Fatalf("restart: %v", err)
	}
	other, _ := NewGate(GateOptions{Secret: []byte("another-secret-0123456789abcdef-xx"), Ledger: &mapLedger{used: map[string]bool{}}, Now: func() time.Time { return f.clock }})
	if _, err := other.Invoke(context.Background(), f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, p.ConfirmToken)); !errors.Is(err, ErrConfirmForged) {
		t.Fatalf("other secret: %v", err)
	}
}

// CF-4: two concurrent confirms with one token: exactly one runs.
func TestGateConcurrentConfirm(t *testing.T) {
	f := newGateFixture(t)
	p := f.preview(t, alice, `{"title":"x"}`)
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 20 {
		wg.Go(func() {
			if _, err := f.gate.Invoke(context.Background(), f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, p.ConfirmToken)); err == nil {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || f.runs.Load() != 1 {
		t.Fatalf("succeeded %d, ran %d; want 1 and 1", ok.Load(), f.runs.Load())
	}
}

// CF-1: the advertised schema adds the two optional fields, keeps the rest.
func TestAdvertisedSchema(t *testing.T) {
	got, err := AdvertisedSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false,"x-k":12345678901234567890}`))
	coretest.Must(t, err)
	s, err := schema.CompileSchema(got)
	coretest.Must(t, err)
	if err := s.Validate(json.RawMessage(`{"a":"x","confirm":true,"confirmToken":"t"}`)); err != nil {
		t.Fatalf("advertised schema refuses the gate's fields: %v", err)
	}
	if err := s.Validate(json.RawMessage(`{"a":"x","other":1}`)); err == nil {
		t.Fatal("additionalProperties:false lost")
	}
	if !strings.Contains(string(got), "12345678901234567890") {
		t.Fatalf("big number rounded: %s", got)
	}
	if _, err := AdvertisedSchema(json.RawMessage(`{"type":"object","properties":{"confirm":{}}}`)); !errors.Is(err, ErrConfirmConflict) {
		t.Fatalf("conflict: %v", err)
	}
	toolArgs, confirm, token, err := ConfirmArgs(json.RawMessage(`{"a":"x","confirm":true,"confirmToken":"t"}`))
	if err != nil || !confirm || token != "t" || string(toolArgs) != `{"a":"x"}` {
		t.Fatalf("ConfirmArgs: %s %v %q %v", toolArgs, confirm, token, err)
	}
	if _, _, _, err := ConfirmArgs(json.RawMessage(`{"confirm":"yes"}`)); err == nil {
		t.Fatal("a non-boolean confirm was accepted")
	}
}

func TestGateOptions(t *testing.T) {
	if _, err := NewGate(GateOptions{Secret: []byte("short"), Ledger: &mapLedger{}}); err == nil {
		t.Fatal("short secret accepted")
	}
	if _, err := NewGate(GateOptions{Secret: testSecret}); err == nil {
		t.Fatal("no ledger accepted")
	}
	g, err := NewGate(GateOptions{Secret: testSecret, Ledger: &mapLedger{}, Messages: ConfirmMessages{Used: "already spent, sorry"}})
	coretest.Must(t, err)
	if g.RefusalText(ErrConfirmUsed) != "already spent, sorry" || !strings.Contains(g.RefusalText(ErrConfirmExpired), "expired") {
		t.Fatal("CF-7 messages not applied")
	}
}

func (l *mapLedger) StoreID(context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return "", l.lost
	}
	if l.id == "" {
		return "test-store", nil
	}
	return l.id, nil
}

func (l *mapLedger) UseToken(_ context.Context, id string, _ time.Time) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return false, l.lost
	}
	if l.down != nil {
		return false, l.down
	}
	if l.used[id] {
		return false, nil
	}
	l.used[id] = true
	return true, nil
}

func (f *gateFixture) preview(t *testing.T, actor core.Actor, args string) Preview {
	t.Helper()
	res, err := f.gate.Invoke(context.Background(), f.reg, actor, "notes_create", json.RawMessage(args))
	coretest.Must(t, err)
	var body struct {
		StructuredContent Preview `json:"structuredContent"`
		Content           []struct{ Text string }
	}
	coretest.Must(t, json.Unmarshal(res.JSON, &body))
	if res.IsError || len(body.Content) == 0 {
		t.Fatalf("preview result: %s", res.JSON)
	}
	return body.StructuredContent
}

// CF-3, CF-4: two previews of one call in the same second (the clock does
// not move here) get distinct tokens, and each is its own single use:
// confirming one neither spends nor stands in for the other.
func TestGateDistinctTokenPerPreviewCF3(t *testing.T) {
	f := newGateFixture(t)
	ctx := context.Background()
	a := f.preview(t, alice, `{"title":"x"}`).ConfirmToken
	b := f.preview(t, alice, `{"title":"x"}`).ConfirmToken
	if a == b || TokenID(a) == TokenID(b) {
		t.Fatalf("two previews of one call in one second share a token: %q", a)
	}
	for _, tok := range []string{a, b} {
		if _, err := f.gate.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, tok)); err != nil {
			t.Fatalf("confirm %q: %v", tok, err)
		}
	}
	if f.runs.Load() != 2 {
		t.Fatalf("two confirmed previews ran %d times, want 2", f.runs.Load())
	}
	if _, err := f.gate.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, a)); !errors.Is(err, ErrConfirmUsed) {
		t.Fatalf("replay of the first: %v, want ErrConfirmUsed", err)
	}
}

// CF-3: a token is bound to the store its ledger lives in. A gate on
// another store (the first was lost, the gateway restarted on a new one)
// refuses a genuine token with its own reason, and runs nothing.
func TestGateTokenBoundToStoreCF3(t *testing.T) {
	f := newGateFixture(t)
	ctx := context.Background()
	tok := f.preview(t, alice, `{"title":"x"}`).ConfirmToken
	other, err := NewGate(GateOptions{Secret: testSecret, Ledger: &mapLedger{used: map[string]bool{}, id: "new-store"}, Now: func() time.Time { return f.clock }})
	coretest.Must(t, err)
	_, err = other.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, tok))
	var re *RefusedError
	if !errors.Is(err, ErrConfirmStore) || !errors.As(err, &re) || !strings.Contains(re.Text, "another store") {
		t.Fatalf("a token of another store: %v", err)
	}
	if f.runs.Load() != 0 {
		t.Fatal("a token of another store ran the tool")
	}
}

// CF-3: while the ledger's store is lost, action calls are refused with a
// text saying so: a preview issues no token, a confirmation runs nothing
// and spends nothing. Once the store is back the token works.
func TestGateStoreLostCF3(t *testing.T) {
	f := newGateFixture(t)
	ctx := context.Background()
	tok := f.preview(t, alice, `{"title":"x"}`).ConfirmToken
	ledger := f.gate.ledger.(*mapLedger)
	ledger.mu.Lock()
	ledger.lost = fmt.Errorf("%w: test.db was deleted", core.ErrStoreLost)
	ledger.mu.Unlock()
	for name, args := range map[string]json.RawMessage{
		"preview": json.RawMessage(`{"title":"x"}`),
		"confirm": confirmArgs(`{"title":"x"}`, tok),
	} {
		res, err := f.gate.Invoke(ctx, f.reg, alice, "notes_create", args)
		var re *RefusedError
		if !errors.Is(err, core.ErrStoreLost) || !errors.As(err, &re) || re.Text != f.gate.Messages().StoreLost {
			t.Fatalf("%s with the store lost: %v %s", name, err, res.JSON)
		}
	}
	if f.runs.Load() != 0 {
		t.Fatal("an action ran with the store lost")
	}
	ledger.mu.Lock()
	ledger.lost = nil
	ledger.mu.Unlock()
	if _, err := f.gate.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, tok)); err != nil || f.runs.Load() != 1 {
		t.Fatalf("confirm with the store back: %v runs=%d", err, f.runs.Load())
	}
}

// CF-3: the intent is written after the token is spent and before the tool
// runs; if it fails nothing runs and the refusal says why. A replay is
// refused before any intent is written.
func TestGateIntentBeforeRunCF3(t *testing.T) {
	f := newGateFixture(t)
	ctx := context.Background()
	call := func(tok string, intent Intent) error {
		c, err := f.reg.Resolve(ctx, alice, nil, "notes_create", confirmArgs(`{"title":"x"}`, tok))
		coretest.Must(t, err)
		Split(c)
		_, err = f.gate.Call(ctx, f.reg, alice, c, intent)
		return err
	}
	var intents []int64 // runs so far, at each intent
	ok := func(context.Context) error { intents = append(intents, f.runs.Load()); return nil }

	failing := f.preview(t, alice, `{"title":"x"}`).ConfirmToken
	err := call(failing, func(context.Context) error { return errors.New("disk full") })
	var re *RefusedError
	if !errors.Is(err, ErrNotRecorded) || !errors.As(err, &re) || re.Text != f.gate.Messages().Unrecorded || f.runs.Load() != 0 {
		t.Fatalf("failed intent: %v, runs=%d; want ErrNotRecorded and nothing run", err, f.runs.Load())
	}
	if err := call(failing, ok); !errors.Is(err, ErrConfirmUsed) || len(intents) != 0 {
		t.Fatalf("retry of a token whose intent failed: %v, intents %v; want it spent, no intent", err, intents)
	}

	tok := f.preview(t, alice, `{"title":"x"}`).ConfirmToken
	if err := call(tok, ok); err != nil || f.runs.Load() != 1 || !slices.Equal(intents, []int64{0}) {
		t.Fatalf("confirm: %v runs=%d intents %v; want one intent, written before the run", err, f.runs.Load(), intents)
	}
	if err := call(tok, ok); !errors.Is(err, ErrConfirmUsed) || len(intents) != 1 {
		t.Fatalf("replay: %v, intents %v; want it refused before an intent", err, intents)
	}
}

// CF-3, OP-5: while the store's server cannot be reached, a confirmation
// is refused with a text saying so, runs nothing and spends nothing; once
// the server is back the same token runs.
func TestGateStoreDownCF3(t *testing.T) {
	f := newGateFixture(t)
	ctx := context.Background()
	tok := f.preview(t, alice, `{"title":"x"}`).ConfirmToken
	ledger := f.gate.ledger.(*mapLedger)
	ledger.mu.Lock()
	ledger.down = fmt.Errorf("store postgres://db:5432/tg: use token: %w", core.ErrStoreUnavailable)
	ledger.mu.Unlock()
	_, err := f.gate.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, tok))
	var re *RefusedError
	if !errors.Is(err, core.ErrStoreUnavailable) || !errors.As(err, &re) || re.Text != f.gate.Messages().StoreDown {
		t.Fatalf("confirm with the store down: %v", err)
	}
	if f.runs.Load() != 0 {
		t.Fatal("an action ran without its ledger row")
	}
	ledger.mu.Lock()
	ledger.down = nil
	ledger.mu.Unlock()
	if _, err := f.gate.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, tok)); err != nil || f.runs.Load() != 1 {
		t.Fatalf("confirm with the store back: %v runs=%d", err, f.runs.Load())
	}
}

// CF-3: the secret's verifier is stable for one secret and store, differs
// with either, and does not contain the secret.
func TestSecretVerifierCF3(t *testing.T) {
	v := SecretVerifier(testSecret, "store-a")
	if v != SecretVerifier(testSecret, "store-a") || !strings.HasPrefix(v, "v1:") {
		t.Fatalf("verifier %q is not stable", v)
	}
	if v == SecretVerifier([]byte("another-secret-0123456789abcdef-xx"), "store-a") || v == SecretVerifier(testSecret, "store-b") {
		t.Error("the verifier does not depend on both the secret and the store")
	}
	if strings.Contains(v, string(testSecret)) || strings.Contains(v, fmt.Sprintf("%x", testSecret)) {
		t.Error("the verifier shows the secret")
	}
}
