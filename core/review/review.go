package review

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review/scan"
)

var (
	// ErrNotReviewable: native tools are the gateway's own and are not
	// reviewed.
	ErrNotReviewable = errors.New("native tools are not reviewed")
	// ErrApprovalFile wraps every reason an approvals file is refused.
	ErrApprovalFile = errors.New("invalid approvals file")
	// ErrApprovalFileTooNew: the file has a version this build does not
	// know. It is refused rather than half-read.
	ErrApprovalFileTooNew = errors.New("approvals file was written by a newer toolgate")
)

// ApprovalFileVersion is the version of the approvals file format that
// Export writes and Import reads.
const ApprovalFileVersion = 1

// ToolFingerprint is the fingerprint of what t shows a client or a model
// (RV-1).
func ToolFingerprint(t core.ToolInfo) string {
	return DefinitionOf(t).Fingerprint()
}

// ReviewFlags runs the scanner (RV-2) over t. Shadowing is checked against
// the names and remote names of the tools in all that come from other
// sources (native tools included); t's siblings from its own upstream may
// name each other honestly.
func ReviewFlags(t core.ToolInfo, all []core.ToolInfo) []core.Flag {
	return scan.ScanTool(scan.ToolInput(t, otherNames(t.Source, all)))
}

// EntryFlags runs the scanner (RV-2) over a prompt or resource that source
// lists (core.CatalogPrompt.Raw, core.CatalogResource.Raw), with shadowing
// checked as in ReviewFlags. Flag.Where is a pointer into raw.
func EntryFlags(source string, raw json.RawMessage, all []core.ToolInfo) []core.Flag {
	return scan.ScanEntry(scan.EntryInput{Raw: raw, OtherTools: otherNames(source, all)})
}

func otherNames(source string, all []core.ToolInfo) []string {
	var others []string
	for _, o := range all {
		if o.Source == source {
			continue
		}
		others = append(others, o.Name)
		if o.RemoteName != "" && o.RemoteName != o.Name {
			others = append(others, o.RemoteName)
		}
	}
	slices.Sort(others)
	return slices.Compact(others)
}

// Reviewer keeps the review decisions of imported tools, persisted in a
// Store, and decides which tools review lets through (RV-3). It is safe for
// concurrent use; State, Allows and CanUse never touch the store, so they
// are cheap enough for every tools/list.
//
// The decisions are read from the store once, by NewReviewer; Reload reads
// them again (after another process changed the store).
type Reviewer struct {
	// mode can change while lists run: a reload (OP-8).
	mode  atomic.Pointer[core.ReviewMode]
	store core.Store
	bus   *core.Bus
	now   func() time.Time

	// writeMu makes decisions one at a time, store write and memory update
	// together, so the memory always holds the store's last word. It is
	// never taken inside a bus commit.
	writeMu sync.Mutex

	mu        sync.RWMutex
	decisions map[approvalKey]core.Approval

	fpMu     sync.Mutex
	fps      map[approvalKey]fpEntry
	entryFps map[approvalKey]entryFp
}

// fpEntry caches the fingerprint of what a tool showed last; a refresh
// rarely changes it and lists ask for it constantly.
type fpEntry struct {
	def Definition
	fp  string
}

// NewReviewer loads the decisions in store. An empty mode is
// DefaultReviewMode; a nil bus gets a private one.
func NewReviewer(ctx context.Context, mode core.ReviewMode, store core.Store, bus *core.Bus) (*Reviewer, error) {
	if mode == "" {
		mode = core.DefaultReviewMode
	}
	if !mode.Valid() {
		return nil, fmt.Errorf("review mode must be one of off, warn, pin, require (got %q)", mode)
	}
	if store == nil {
		return nil, errors.New("reviewer: a store is required")
	}
	if bus == nil {
		bus = core.NewBus()
	}
	r := &Reviewer{store: store, bus: bus, now: time.Now, fps: map[approvalKey]fpEntry{}, entryFps: map[approvalKey]entryFp{}}
	r.mode.Store(&mode)
	all, err := store.Approvals(ctx)
	if err != nil {
		return nil, fmt.Errorf("load review decisions: %w", err)
	}
	r.decisions = indexApprovals(all)
	return r, nil
}

func indexApprovals(all []core.Approval) map[approvalKey]core.Approval {
	m := make(map[approvalKey]core.Approval, len(all))
	for _, a := range all {
		a = fromStored(a)
		m[keyOf(a)] = a
	}
	return m
}

// sameApproval compares times as instants: a decision read back from a
// store may carry another location or lose its monotonic reading.
func sameApproval(a, b core.Approval) bool {
	at, bt := a.At, b.At
	a.At, b.At = time.Time{}, time.Time{}
	return a == b && at.Equal(bt)
}

func decisionState(d core.ReviewDecision) core.ReviewState {
	if d == core.DecisionRejected {
		return core.ReviewRejected
	}
	return core.ReviewApproved
}

// approvalFile is the approvals file (RV-4): approved fingerprints as code,
// for a repository. Entries are sorted by source, then remote name, so
// exporting the same decisions gives the same bytes.
type approvalFile struct {
	Version   int             `json:"version"`
	Approvals []core.Approval `json:"approvals"`
}

// fingerprintRE is the form Fingerprint produces, or the older one, which
// is read so that its approvals show as changed rather than vanish.
var fingerprintRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256(?:v2)?:[0-9a-f]{64}$`) })

// ParseApprovals reads and validates an approvals file without storing
// anything. Every entry must be a valid Approval with a well-formed
// fingerprint, no tool may appear twice, and unknown members are errors
// (a misspelt key must not silently drop a decision). A missing "at" is
// left zero.
func ParseApprovals(data []byte) ([]core.Approval, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrApprovalFile, err)
	}
	switch {
	case head.Version == nil:
		return nil, fmt.Errorf("%w: no version (want %d)", ErrApprovalFile, ApprovalFileVersion)
	case *head.Version > ApprovalFileVersion:
		return nil, fmt.Errorf("%w: version %d, this toolgate reads version %d", ErrApprovalFileTooNew, *head.Version, ApprovalFileVersion)
	case *head.Version != ApprovalFileVersion:
		return nil, fmt.Errorf("%w: unknown version %d (want %d)", ErrApprovalFile, *head.Version, ApprovalFileVersion)
	}
	// json.Unmarshal above has refused anything but one JSON value.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f approvalFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrApprovalFile, err)
	}
	seen := make(map[approvalKey]int, len(f.Approvals))
	for i, a := range f.Approvals {
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("%w: approvals[%d]: %v", ErrApprovalFile, i, err)
		}
		if strings.Contains(a.Source, ":") {
			return nil, fmt.Errorf("%w: approvals[%d]: source %q is not an upstream name (a prompt's or resource's decision names its kind in \"kind\")", ErrApprovalFile, i, a.Source)
		}
		if !fingerprintRE().MatchString(a.Fingerprint) {
			return nil, fmt.Errorf("%w: approvals[%d] (%s/%s): fingerprint %q is not sha256:<64 hex digits> (the older format) or sha256v2:<64 hex digits>", ErrApprovalFile, i, a.Source, a.RemoteName, a.Fingerprint)
		}
		k := keyOf(a)
		if j, dup := seen[k]; dup {
			return nil, fmt.Errorf("%w: approvals[%d] and approvals[%d] are both for %s", ErrApprovalFile, j, i, k)
		}
		seen[k] = i
	}
	return f.Approvals, nil
}

// Mode returns the configured review mode.
func (r *Reviewer) Mode() core.ReviewMode { return *r.mode.Load() }

// SetMode switches the review mode (a config reload, OP-8); every list and
// call after it is decided under the new mode. The caller tells live
// sessions that their lists may have changed.
func (r *Reviewer) SetMode(mode core.ReviewMode) error {
	if !mode.Valid() {
		return fmt.Errorf("review mode must be one of off, warn, pin, require (got %q)", mode)
	}
	r.mode.Store(&mode)
	return nil
}

// State returns t's review state; "" for a native tool.
func (r *Reviewer) State(t core.ToolInfo) core.ReviewState {
	return r.state(t.Source, t.RemoteName, t.Fingerprint, func() Definition { return DefinitionOf(t) })
}

// stateOf decides a state from the decisions; fp gives the fingerprint of
// what is shown now, asked only when an approval must be compared with it.
func (r *Reviewer) stateOf(key approvalKey, fp func() string) core.ReviewState {
	r.mu.RLock()
	d, ok := r.decisions[key]
	r.mu.RUnlock()
	switch {
	case !ok:
		return core.ReviewNew
	case d.Decision == core.DecisionRejected:
		return core.ReviewRejected
	case LegacyFingerprint(d.Fingerprint):
		// It approved less than the tool shows now: never trusted.
		return core.ReviewChanged
	case d.Fingerprint == fp():
		return core.ReviewApproved
	default:
		return core.ReviewChanged
	}
}

// StateNote says why t's state is what it is, where the state alone does
// not: "" but for an approval of an older fingerprint format, which no
// longer approves the tool (see LegacyFingerprint).
func (r *Reviewer) StateNote(t core.ToolInfo) string {
	if t.Source == "" {
		return ""
	}
	if d, ok := r.Decision(t.Source, t.RemoteName); ok && d.Decision == core.DecisionApproved && LegacyFingerprint(d.Fingerprint) {
		return "re-approve (fingerprint format changed)"
	}
	return ""
}

// FingerprintOf is RegistryOptions.Fingerprint: a registered tool's
// fingerprint, computed once.
func FingerprintOf(t *core.Tool) string {
	return ToolFingerprint(t.Info())
}

// state decides from the decisions; fp is the definition's fingerprint when
// the caller has it, else def's is computed (and cached) here.
func (r *Reviewer) state(source, remote, fp string, def func() Definition) core.ReviewState {
	if source == "" {
		return ""
	}
	key := approvalKey{core.EntryTool, source, remote}
	return r.stateOf(key, func() string {
		if fp == "" {
			return r.fingerprint(key, def())
		}
		return fp
	})
}

func (r *Reviewer) fingerprint(key approvalKey, def Definition) string {
	r.fpMu.Lock()
	defer r.fpMu.Unlock()
	if e, ok := r.fps[key]; ok && e.def.equal(def) {
		return e.fp
	}
	fp := def.Fingerprint()
	r.fps[key] = fpEntry{def: def.clone(), fp: fp}
	return fp
}

// Allows is review's step of SV-4 (RV-3): whether t may be served under the
// mode. Native tools always are. off serves everything; warn everything but
// rejected tools (an explicit "no" is honoured in every mode that reviews);
// pin new and approved tools, withholding changed ones until re-approved;
// require approved tools only.
func (r *Reviewer) Allows(t core.ToolInfo) bool {
	return r.allows(t.Source, t.RemoteName, t.Fingerprint, func() Definition { return DefinitionOf(t) })
}

func (r *Reviewer) allows(source, remote, fp string, def func() Definition) bool {
	mode := r.Mode()
	if source == "" || mode == core.ReviewOff {
		return true
	}
	return modeAllows(mode, r.state(source, remote, fp, def))
}

// modeAllows is RV-3's table: whether a reviewed item in state st is served
// under mode (not off).
func modeAllows(mode core.ReviewMode, st core.ReviewState) bool {
	switch mode {
	case core.ReviewWarn:
		return st != core.ReviewRejected
	case core.ReviewRequire:
		return st == core.ReviewApproved
	default: // pin
		return st == core.ReviewNew || st == core.ReviewApproved
	}
}

// CanUse has the shape of RegistryOptions.CanUse, so the registry applies
// review to every list and call: RegistryOptions{CanUse: reviewer.CanUse}.
func (r *Reviewer) CanUse(_ context.Context, _ core.Actor, t *core.Tool) bool {
	return r.allows(t.Source, t.RemoteName, t.Fingerprint, func() Definition { return DefinitionOf(t.Info()) })
}

// States returns the review state of each imported tool in tools, keyed by
// tool name; native tools are left out.
func (r *Reviewer) States(tools []core.ToolInfo) map[string]core.ReviewState {
	out := make(map[string]core.ReviewState, len(tools))
	for _, t := range tools {
		if t.Source != "" {
			out[t.Name] = r.State(t)
		}
	}
	return out
}

// Decision returns the recorded decision for one tool.
func (r *Reviewer) Decision(source, remoteName string) (core.Approval, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.decisions[approvalKey{core.EntryTool, source, remoteName}]
	return a, ok
}

// Approve records that t, as it is now, may be served; by names who
// decided.
func (r *Reviewer) Approve(ctx context.Context, t core.ToolInfo, by string) error {
	return r.decide(ctx, t, core.DecisionApproved, by)
}

// Reject records that t must not be served (in every mode but off).
func (r *Reviewer) Reject(ctx context.Context, t core.ToolInfo, by string) error {
	return r.decide(ctx, t, core.DecisionRejected, by)
}

func (r *Reviewer) decide(ctx context.Context, t core.ToolInfo, d core.ReviewDecision, by string) error {
	if t.Source == "" {
		return fmt.Errorf("%w: %q", ErrNotReviewable, t.Name)
	}
	a := core.Approval{
		Source: t.Source, RemoteName: t.RemoteName, Fingerprint: ToolFingerprint(t),
		Decision: d, By: by, At: r.now().UTC().Round(0),
	}
	return r.record(ctx, a, func() core.EventData {
		return core.ToolReviewed{Source: a.Source, RemoteName: a.RemoteName, Name: t.Name, State: r.State(t), By: by}
	})
}

// record stores a and publishes the event ev makes once a is in force.
func (r *Reviewer) record(ctx context.Context, a core.Approval, ev func() core.EventData) error {
	k := keyOf(a)
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if err := r.store.PutApproval(ctx, toStored(a)); err != nil {
		return fmt.Errorf("record %s decision for %s: %w", a.Decision, k, err)
	}
	r.bus.Commit(func() []core.EventData {
		r.mu.Lock()
		r.decisions[k] = a
		r.mu.Unlock()
		return []core.EventData{ev()}
	})
	r.broadcast(ctx)
	return nil
}

// broadcast tells the other gateways sharing the store that the decisions
// changed, so they reload them (RV-3 holds on every replica). One that
// misses it reloads at its next resync; the decision is stored either way.
func (r *Reviewer) broadcast(ctx context.Context) {
	if b, ok := r.store.(core.Broadcaster); ok {
		_ = b.Broadcast(context.WithoutCancel(ctx), core.SharedEvent{Kind: core.SharedReview})
	}
}

// Reload reads the decisions from the store again, for when another process
// (toolgate review import, a replica) changed them. Each decision that
// differs from the one in memory is published.
func (r *Reviewer) Reload(ctx context.Context) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	all, err := r.store.Approvals(ctx)
	if err != nil {
		return fmt.Errorf("reload review decisions: %w", err)
	}
	r.replace(indexApprovals(all))
	return nil
}

// replace swaps in decisions and publishes what changed. Forgotten
// decisions make their tools new again.
func (r *Reviewer) replace(next map[approvalKey]core.Approval) {
	r.bus.Commit(func() []core.EventData {
		r.mu.Lock()
		defer r.mu.Unlock()
		var evs []core.EventData
		for k, a := range next {
			if old, ok := r.decisions[k]; !ok || !sameApproval(old, a) {
				evs = append(evs, core.ToolReviewed{Kind: a.Kind, Source: a.Source, RemoteName: a.RemoteName, State: decisionState(a.Decision), By: a.By})
			}
		}
		for k := range r.decisions {
			if _, ok := next[k]; !ok {
				evs = append(evs, core.ToolReviewed{Kind: k.kind, Source: k.source, RemoteName: k.remoteName, State: core.ReviewNew})
			}
		}
		r.decisions = next
		slices.SortFunc(evs, func(x, y core.EventData) int {
			a, b := x.(core.ToolReviewed), y.(core.ToolReviewed)
			return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Source, b.Source), cmp.Compare(a.RemoteName, b.RemoteName))
		})
		return evs
	})
}

// Export returns every decision in the store as an approvals file: indented
// JSON, {"version": 1, "approvals": [{kind, source, remoteName,
// fingerprint, decision, by, at}, …]}, tools first. kind is "prompt" or
// "resource" for those (remoteName then being the upstream's prompt name,
// or the URI or URI template) and absent for a tool, so a file written
// before prompts and resources were reviewed reads the same. It holds no
// secrets; by and at are kept as the audit trail of each decision.
func (r *Reviewer) Export(ctx context.Context) ([]byte, error) {
	all, err := r.store.Approvals(ctx)
	if err != nil {
		return nil, fmt.Errorf("export review decisions: %w", err)
	}
	for i := range all {
		all[i] = fromStored(all[i])
		all[i].At = all[i].At.UTC()
	}
	// Tools first, as files without prompts and resources always were.
	slices.SortStableFunc(all, func(a, b core.Approval) int { return cmp.Compare(a.Kind, b.Kind) })
	f := approvalFile{Version: ApprovalFileVersion, Approvals: all}
	if f.Approvals == nil {
		f.Approvals = []core.Approval{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Import stores the decisions of an approvals file (see Export), replacing
// the decisions for the tools it names and leaving the others. The whole
// file is validated before the first write, so a malformed file or one of
// an unknown version writes nothing. A missing "at" becomes the time of the
// import. n is the number of decisions written.
//
// Stores have no multi-row transaction here: should the store fail part
// way, the decisions before the failure are kept; importing the same file
// again completes it.
func (r *Reviewer) Import(ctx context.Context, data []byte) (n int, err error) {
	all, err := ParseApprovals(data)
	if err != nil {
		return 0, err
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	next := make(map[approvalKey]core.Approval)
	r.mu.RLock()
	for k, a := range r.decisions {
		next[k] = a
	}
	r.mu.RUnlock()
	defer func() {
		r.replace(next)
		if n > 0 {
			r.broadcast(ctx)
		}
	}()
	now := r.now().UTC().Round(0)
	for _, a := range all {
		if a.At.IsZero() {
			a.At = now
		}
		if err := r.store.PutApproval(ctx, toStored(a)); err != nil {
			return n, fmt.Errorf("import %s: %w", keyOf(a), err)
		}
		next[keyOf(a)] = a
		n++
	}
	return n, nil
}

// approvalKey identifies a third-party tool, prompt or resource across
// refreshes and renames.
type approvalKey struct {
	kind               core.EntryKind
	source, remoteName string
}

func keyOf(a core.Approval) approvalKey { return approvalKey{a.Kind, a.Source, a.RemoteName} }

func (k approvalKey) String() string {
	if k.kind == core.EntryTool {
		return k.source + "/" + k.remoteName
	}
	return fmt.Sprintf("%s %s/%s", k.kind, k.source, k.remoteName)
}
