package confirm

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/telemetry"
)

// MinConfirmSecretBytes is the shortest secret the gate accepts.
const MinConfirmSecretBytes = 32

// DefaultConfirmTTL is how long a confirm token stays valid (CF-3).
const DefaultConfirmTTL = 15 * time.Minute

// Refusals of a confirming call, each with its own message (CF-4).
var (
	ErrConfirmForged = errors.New("confirm token is not valid")
	// ErrConfirmOldFormat: a token of the format before per-preview
	// nonces and store binding. Such tokens are no longer accepted; they
	// would have expired within one TTL of the upgrade anyway.
	ErrConfirmOldFormat = errors.New("confirm token is in the format of an older toolgate; preview again")
	// ErrConfirmStore: a genuine token issued against another store than
	// the gateway's: the store was lost or replaced since (CF-3).
	ErrConfirmStore    = errors.New("confirm token was issued against another store")
	ErrConfirmExpired  = errors.New("confirm token expired")
	ErrConfirmUsed     = errors.New("confirm token already used")
	ErrConfirmActor    = errors.New("confirm token was issued to another actor")
	ErrConfirmTenant   = errors.New("confirm token was issued for another tenant")
	ErrConfirmArgs     = errors.New("arguments differ from the previewed ones")
	ErrConfirmTool     = errors.New("confirm token was issued for another tool")
	ErrConfirmMissing  = errors.New("confirm is true but confirmToken is missing")
	ErrConfirmConflict = errors.New("tool schema already defines confirm or confirmToken")
	// ErrNotRecorded: the audit intent of a confirmed call could not be
	// written, so the action did not run (CF-3).
	ErrNotRecorded = errors.New("the call could not be recorded in the audit log before it ran")
)

// Intent durably records that a confirmed action is about to run (CF-3):
// Call invokes it once the token is spent and any operator has approved,
// right before the tool runs, and runs nothing if it fails.
type Intent func(ctx context.Context) error

// TokenLedger records spent confirm tokens; Store implements it. StoreID
// names the store the ledger lives in; tokens are bound to it (CF-3), and
// while it fails (core.ErrStoreLost) no action call is served.
type TokenLedger interface {
	UseToken(ctx context.Context, tokenID string, expires time.Time) (firstUse bool, err error)
	StoreID(ctx context.Context) (string, error)
}

// GateOptions configures a Gate.
type GateOptions struct {
	// Secret keys the token MAC; required, at least 32 bytes (CF-3).
	Secret []byte
	// TTL of a token; 0 means DefaultConfirmTTL.
	TTL time.Duration
	// Ledger makes tokens single-use (CF-4); required.
	Ledger   TokenLedger
	Messages ConfirmMessages
	Now      func() time.Time
	// Approvals queues confirmations that need an operator (CF-5); with
	// NeedsOperator nil or false for a tool, none wait.
	Approvals     *ApprovalQueue
	NeedsOperator func(tool core.Tool) bool
	// ApprovalWait bounds the wait; 0 means DefaultApprovalWait.
	ApprovalWait time.Duration
}

// Gate issues and verifies confirm tokens.
type Gate struct {
	secret        []byte
	ttl           time.Duration
	ledger        TokenLedger
	now           func() time.Time
	approvals     *ApprovalQueue
	needsOperator func(core.Tool) bool
	approvalWait  time.Duration

	// msgs are the texts in use; a reload replaces them (CF-7, OP-8).
	msgs atomic.Pointer[ConfirmMessages]

	// issued remembers what each recent token was issued for, only to say
	// why a refused token failed; validity never depends on it.
	mu     sync.Mutex
	issued map[string]issuedToken
}

type issuedToken struct {
	tool, actor, tenant, args string
	expires                   time.Time
}

// maxIssuedRemembered bounds the diagnostic index.
const maxIssuedRemembered = 10000

// NewGate checks opts and returns a gate.
func NewGate(opts GateOptions) (*Gate, error) {
	if len(opts.Secret) < MinConfirmSecretBytes {
		return nil, fmt.Errorf("confirm secret: %d bytes, need at least %d", len(opts.Secret), MinConfirmSecretBytes)
	}
	if opts.Ledger == nil {
		return nil, errors.New("confirm gate: no ledger")
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultConfirmTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NeedsOperator != nil && opts.Approvals == nil {
		return nil, errors.New("confirm gate: operator approval needs an approval queue")
	}
	g := &Gate{
		secret: append([]byte(nil), opts.Secret...), ttl: opts.TTL, ledger: opts.Ledger, now: opts.Now,
		approvals: opts.Approvals, needsOperator: opts.NeedsOperator, approvalWait: opts.ApprovalWait,
		issued: map[string]issuedToken{},
	}
	if err := g.SetMessages(opts.Messages); err != nil {
		return nil, err
	}
	return g, nil
}

// AdvertisedSchema is an action tool's schema as served: its own plus
// optional "confirm" (boolean) and "confirmToken" (string) properties
// (CF-1). Other keys keep their bytes.
func AdvertisedSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	props := map[string]json.RawMessage{}
	if p, ok := top["properties"]; ok {
		if err := json.Unmarshal(p, &props); err != nil {
			return nil, fmt.Errorf("schema properties: %w", err)
		}
	}
	if _, ok := props["confirm"]; ok {
		return nil, ErrConfirmConflict
	}
	if _, ok := props["confirmToken"]; ok {
		return nil, ErrConfirmConflict
	}
	props["confirm"] = json.RawMessage(`{"type":"boolean","description":"Set to true, with confirmToken, to run the previewed call."}`)
	props["confirmToken"] = json.RawMessage(`{"type":"string","description":"The token the preview returned."}`)
	p, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	top["properties"] = p
	return json.Marshal(top)
}

// ConfirmArgs separates the gate's two fields from the tool's own
// arguments, which are returned with those fields removed (CF-1).
func ConfirmArgs(args json.RawMessage) (toolArgs json.RawMessage, confirm bool, token string, err error) {
	if len(strings.TrimSpace(string(args))) == 0 {
		return json.RawMessage(`{}`), false, "", nil
	}
	// No key can read "confirm" unless those bytes, or an escape, appear:
	// most calls need no parse at all.
	if !bytes.Contains(args, []byte("confirm")) && bytes.IndexByte(args, '\\') < 0 {
		return args, false, "", nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		// Not an object: leave it to schema validation to say so.
		return args, false, "", nil
	}
	c, hasC := m["confirm"]
	t, hasT := m["confirmToken"]
	if !hasC && !hasT {
		return args, false, "", nil
	}
	if hasC && json.Unmarshal(c, &confirm) != nil {
		return nil, false, "", errors.New(`"confirm" must be a boolean`)
	}
	if hasT && json.Unmarshal(t, &token) != nil {
		return nil, false, "", errors.New(`"confirmToken" must be a string`)
	}
	delete(m, "confirm")
	delete(m, "confirmToken")
	toolArgs, err = json.Marshal(m)
	return toolArgs, confirm, token, err
}

// Split fills c's confirm fields from its raw arguments, once per call
// (CF-1).
func Split(c *core.ToolCall) {
	args, confirm, token, err := ConfirmArgs(c.Raw)
	if err != nil {
		c.Args, c.ArgsErr = c.Raw, err
		return
	}
	c.Args, c.Confirm, c.Token = args, confirm, token
}

// TokenID is the ledger key of a token: its MAC, the last field ("" for
// a string with no field separator).
func TokenID(token string) string {
	i := strings.LastIndexByte(token, '.')
	if i < 0 {
		return ""
	}
	return token[i+1:]
}

// ErrConfirmRejected: an operator rejected the call (CF-5).
var ErrConfirmRejected = errors.New("rejected")

// RefusedError is a confirming call the gate refused; Text is what the
// client reads.
type RefusedError struct {
	Err  error
	Text string
}

// Preview is the structured part of a preview answer (CF-2).
type Preview struct {
	Preview      string      `json:"preview"`
	Call         PreviewCall `json:"call"`
	ConfirmToken string      `json:"confirmToken"`
	ExpiresAt    time.Time   `json:"expiresAt"`
}

// PreviewCall says what would run: which tool, on which upstream, with
// which canonical arguments.
type PreviewCall struct {
	Tool       string          `json:"tool"`
	Source     string          `json:"source,omitempty"`
	RemoteName string          `json:"remoteName,omitempty"`
	Arguments  json.RawMessage `json:"arguments"`
}

// Token format (CF-3):
//
//	<exp>.<store>.<nonce>.<mac>
//
//	exp    expiry, Unix seconds, decimal
//	store  the identity of the store whose ledger the token is spent in
//	       (core.Store.StoreID): a token issued against one store is
//	       refused by another, so a store lost with its ledger cannot make
//	       a spent token run again
//	nonce  16 random bytes, lowercase hex: every preview gets a token of
//	       its own, even two previews of one call in one second, so
//	       confirming one never spends the other
//	mac    HMAC-SHA256 under the gate's secret, lowercase hex, over the
//	       length-prefixed fields tool, actor id, tenant, exp, nonce,
//	       store and the canonical arguments
//
// Verifying needs only the secret and the store's identity (no table of
// issued tokens); the ledger, keyed by the mac (TokenID), makes a token
// single use. Earlier formats, "<exp>.<mac>" and "<exp>.<nonce>.<mac>",
// are refused with ErrConfirmOldFormat: such a token would expire within
// one TTL of an upgrade anyway, and its client previews again.
const nonceBytes = 16

// maxTokenLen bounds what Verify parses: the longest well-formed token is
// under 200 bytes.
const maxTokenLen = 256

// Issue returns a new token for this tool, actor and canonical arguments,
// bound to the store storeID names, and when it expires (CF-3).
func (g *Gate) Issue(tool string, actor core.Actor, storeID string, canonicalArgs []byte) (string, time.Time) {
	expires := g.now().Add(g.ttl).Truncate(time.Second)
	var n [nonceBytes]byte
	_, _ = rand.Read(n[:]) // never fails (crypto/rand)
	nonce := hex.EncodeToString(n[:])
	mac := g.mac(tool, actor.ID, actor.Tenant, expires.Unix(), nonce, storeID, canonicalArgs)
	g.remember(mac, issuedToken{tool, actor.ID, actor.Tenant, string(canonicalArgs), expires})
	return strconv.FormatInt(expires.Unix(), 10) + "." + storeID + "." + nonce + "." + mac, expires
}

func (g *Gate) mac(tool, actor, tenant string, expires int64, nonce, storeID string, canonicalArgs []byte) string {
	h := hmac.New(sha256.New, g.secret)
	// Length-prefixed fields: no choice of names can make two different
	// calls hash alike.
	for _, f := range []string{tool, actor, tenant, strconv.FormatInt(expires, 10), nonce, storeID, string(canonicalArgs)} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// parseToken splits a token into its fields; ok is false for anything not
// of the current format.
func parseToken(token string) (exp int64, storeID, nonce, mac string, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 4 || !validStoreID(parts[1]) || !isHex(parts[2], nonceBytes*2) || !isHex(parts[3], sha256.Size*2) {
		return 0, "", "", "", false
	}
	exp, err := strconv.ParseInt(parts[0], 10, 64)
	return exp, parts[1], parts[2], parts[3], err == nil
}

// isOldFormat reports whether token looks like "<exp>.<mac>" or
// "<exp>.<nonce>.<mac>".
func isOldFormat(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 2 && (len(parts) != 3 || !isHex(parts[1], nonceBytes*2)) {
		return false
	}
	_, err := strconv.ParseInt(parts[0], 10, 64)
	return err == nil && isHex(parts[len(parts)-1], sha256.Size*2)
}

// validStoreID keeps store identities to what a token can carry as one
// field: 1 to 64 of [0-9A-Za-z_-].
func validStoreID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (g *Gate) remember(mac string, it issuedToken) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.issued) >= maxIssuedRemembered {
		now := g.now()
		for k, v := range g.issued {
			if now.After(v.expires) {
				delete(g.issued, k)
			}
		}
		if len(g.issued) >= maxIssuedRemembered {
			g.issued = map[string]issuedToken{}
		}
	}
	g.issued[mac] = it
}

// Verify checks a token against the call it claims to confirm, against the
// store storeID names; it does not spend it. Validity is decided by the MAC
// alone (stateless); when the MAC does not match, a token this gate issued
// recently is compared part by part to say which one differs. A genuine
// token issued against another store is ErrConfirmStore.
func (g *Gate) Verify(tool string, actor core.Actor, storeID string, canonicalArgs []byte, token string) (expires time.Time, err error) {
	if len(token) > maxTokenLen {
		return time.Time{}, ErrConfirmForged
	}
	exp, tokenStore, nonce, mac, ok := parseToken(token)
	if !ok {
		if isOldFormat(token) {
			return time.Time{}, ErrConfirmOldFormat
		}
		return time.Time{}, ErrConfirmForged
	}
	expires = time.Unix(exp, 0)
	// The MAC over the store the token names: a token of another store is
	// told apart from a forged one, and refused with its own reason.
	want := g.mac(tool, actor.ID, actor.Tenant, exp, nonce, tokenStore, canonicalArgs)
	if !hmac.Equal([]byte(want), []byte(mac)) {
		return expires, g.why(mac, tool, actor, canonicalArgs)
	}
	if tokenStore != storeID {
		return expires, ErrConfirmStore
	}
	if g.now().After(expires) {
		return expires, ErrConfirmExpired
	}
	return expires, nil
}

func (g *Gate) why(mac, tool string, actor core.Actor, canonicalArgs []byte) error {
	g.mu.Lock()
	it, ok := g.issued[mac]
	g.mu.Unlock()
	switch {
	case !ok:
		return ErrConfirmForged
	case it.tool != tool:
		return ErrConfirmTool
	case it.actor != actor.ID:
		return ErrConfirmActor
	case it.tenant != actor.Tenant:
		return ErrConfirmTenant
	case it.args != string(canonicalArgs):
		return ErrConfirmArgs
	}
	return ErrConfirmForged
}

// Spend marks a verified token used; a second spend is ErrConfirmUsed
// (CF-4). Two concurrent spends of one token: exactly one succeeds.
func (g *Gate) Spend(ctx context.Context, token string, expires time.Time) error {
	first, err := g.ledger.UseToken(ctx, TokenID(token), expires)
	if err != nil {
		return fmt.Errorf("confirm ledger: %w", err)
	}
	if !first {
		return ErrConfirmUsed
	}
	return nil
}

func (e *RefusedError) Error() string { return e.Err.Error() }

func (e *RefusedError) Unwrap() error { return e.Err }

// wait queues p for an operator (CF-5); a gate built without a queue
// refuses, since nobody could approve.
func (g *Gate) wait(ctx context.Context, p core.PendingConfirmation) (err error) {
	if g.approvals == nil {
		return ErrNoOperator
	}
	// The operator's time is the call's to account for (OP-9).
	ctx, span := telemetry.Start(ctx, "operator wait")
	defer func() { telemetry.End(span, err) }()
	return g.approvals.Wait(ctx, p, g.approvalWait, progressFrom(ctx))
}

// ErrNoOperator: a call needs an operator's approval and this gate has no
// approval queue.
var ErrNoOperator = errors.New("this call needs an operator's approval, and no operator can be asked here")

// WaitOperator holds a read call that a policy sends to an operator
// (PO-1): it waits as a confirmed action does under `approval: operator`
// (CF-5), bounded by approvalWait, and answers nil once approved. reason
// is the rule's, shown to the operator. Refusals are *RefusedError.
func (g *Gate) WaitOperator(ctx context.Context, actor core.Actor, c *core.ToolCall, reason string) error {
	canon, err := c.Canonical()
	if err != nil {
		return err
	}
	preview := fmt.Sprintf("Run %s on %s", c.Tool.Name, sourceText(c.Tool.Source))
	if reason != "" {
		preview += ": " + reason
	}
	err = g.wait(ctx, core.PendingConfirmation{
		ID: randomApprovalID(), Tool: c.Tool.Name, Source: c.Tool.Source, RemoteName: c.Tool.RemoteName,
		Actor: actor, Arguments: canon, Preview: preview,
	})
	if err != nil {
		return &RefusedError{Err: err, Text: g.RefusalText(err)}
	}
	return nil
}

func sourceText(source string) string {
	if source == "" {
		return "this gateway"
	}
	return "upstream " + source
}

// randomApprovalID names a read call's approval; an action's is its
// token's id.
func randomApprovalID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Invoke resolves name and runs Call; for callers that hold no parsed call.
func (g *Gate) Invoke(ctx context.Context, reg *core.Registry, actor core.Actor, name string, args json.RawMessage) (core.Result, error) {
	c, err := reg.Resolve(ctx, actor, nil, name, args)
	if err != nil {
		return core.Result{}, err
	}
	Split(c)
	return g.Call(ctx, reg, actor, c, nil)
}

// Call runs the two-call protocol for an action tool over a call Split has
// read. Without confirm it validates everything, runs nothing and answers a
// preview with a token (CF-2), recorded in c.Issued; with confirm and the
// token it verifies, spends the token, writes intent and runs the tool
// exactly once (CF-4): an action runs only after its ledger entry and its
// intent are written (CF-3). A nil intent writes none, for callers that keep
// no audit log. Refusals are *RefusedError.
func (g *Gate) Call(ctx context.Context, reg *core.Registry, actor core.Actor, c *core.ToolCall, intent Intent) (core.Result, error) {
	if c.ArgsErr != nil {
		return core.Result{}, &RefusedError{Err: c.ArgsErr, Text: "invalid arguments: " + c.ArgsErr.Error()}
	}
	if err := c.Validate(); err != nil {
		return core.Result{}, err
	}
	canon, err := c.Canonical()
	if err != nil {
		return core.Result{}, err
	}
	tool, name := c.Tool, c.Tool.Name
	// Asked on every action call, previews included: a lost store refuses
	// them all, and the answer is what tokens are bound to.
	storeID, err := g.ledger.StoreID(ctx)
	if err == nil && !validStoreID(storeID) {
		err = fmt.Errorf("store identity %q cannot be carried by a confirm token", storeID)
	}
	if err != nil {
		return core.Result{}, &RefusedError{Err: err, Text: g.refusalText(tool, time.Time{}, err)}
	}
	if !c.Confirm {
		var detail string
		if tool.Preview != nil {
			if detail, err = tool.Preview(ctx, c.Args); err != nil {
				return core.Result{}, err
			}
		}
		tok, expires := g.Issue(name, actor, storeID, canon)
		c.Issued = tok
		return g.previewResult(tool, detail, canon, tok, expires), nil
	}
	token := c.Token
	if token == "" {
		return core.Result{}, &RefusedError{Err: ErrConfirmMissing, Text: g.refusalText(tool, time.Time{}, ErrConfirmMissing)}
	}
	expires, err := g.Verify(name, actor, storeID, canon, token)
	// Spent before any operator sees it: a replay never reaches the
	// queue, and a rejected or timed-out confirmation cannot be sent again
	// in the hope of a different answer; the client previews again.
	if err == nil {
		err = g.Spend(ctx, token, expires)
	}
	if err == nil && (c.NeedsOperator || g.needsOperator != nil && g.needsOperator(tool)) {
		err = g.wait(ctx, core.PendingConfirmation{
			ID: TokenID(token), Tool: name, Source: tool.Source, RemoteName: tool.RemoteName,
			Actor: actor, Arguments: canon, Preview: g.PreviewText(name, tool.Source, expires),
		})
	}
	if err == nil && intent != nil {
		// After the spend: a replay is refused before it leaves a trace
		// that reads like a run.
		if ierr := intent(ctx); ierr != nil {
			err = fmt.Errorf("%w: %w", ErrNotRecorded, ierr)
		}
	}
	if err != nil {
		return core.Result{}, &RefusedError{Err: err, Text: g.refusalText(tool, expires, err)}
	}
	return reg.Run(ctx, actor, c)
}

func (g *Gate) previewResult(tool core.Tool, detail string, canon []byte, token string, expires time.Time) core.Result {
	text := g.PreviewText(tool.Name, tool.Source, expires)
	if detail != "" {
		text = detail + "\n" + text
	}
	p := Preview{
		Preview:      text,
		Call:         PreviewCall{Tool: tool.Name, Source: tool.Source, RemoteName: tool.RemoteName, Arguments: canon},
		ConfirmToken: token,
		ExpiresAt:    expires.UTC(),
	}
	structured, _ := json.Marshal(p)
	full := fmt.Sprintf("%s\nCall: %s", p.Preview, structured)
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	body, _ := json.Marshal(struct {
		Content           []block         `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}{[]block{{"text", full}}, structured})
	return core.Result{JSON: body}
}

// SecretVerifier is what a store keeps to tell whether every gateway sharing
// it uses one confirm secret (core.SecretChecker): an HMAC under the secret
// of a fixed label and the store's identity. It reveals neither the secret
// nor a plain hash of it, and differs from store to store, so verifiers
// cannot be matched across stores.
func SecretVerifier(secret []byte, storeID string) string {
	h := hmac.New(sha256.New, secret)
	fmt.Fprintf(h, "toolgate confirm secret check\x00%s", storeID)
	return "v1:" + hex.EncodeToString(h.Sum(nil))
}
