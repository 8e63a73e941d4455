package review

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/canonjson"
)

// Entry is a prompt or a resource (or resource template) an upstream lists:
// third-party text that reaches the model as a tool's description does, so
// it is reviewed as a tool is (RV-1…RV-3).
//
// It is identified by its upstream and its key: the upstream's own prompt
// name (not the served, prefixed one, so a prefix change keeps decisions),
// or the URI or URI template, served unchanged.
type Entry struct {
	Kind   core.EntryKind
	Source string
	// Key is the upstream's prompt name, or the URI or URI template.
	Key string
	// Name is the served name: the prefixed prompt name, or the URI.
	Name string
	// Raw is the entry as served.
	Raw json.RawMessage
}

// PromptEntry is p under review.
func PromptEntry(p core.CatalogPrompt) Entry {
	return Entry{Kind: core.EntryPrompt, Source: p.Source, Key: p.RemoteName, Name: p.Name, Raw: p.Raw}
}

// ResourceEntry is r, a resource or a resource template, under review.
func ResourceEntry(r core.CatalogResource) Entry {
	return Entry{Kind: core.EntryResource, Source: r.Source, Key: r.URI, Name: r.URI, Raw: r.Raw}
}

// EntriesOf lists every prompt, resource and template of c: prompts first,
// then resources, then templates, each in c's order.
func EntriesOf(c core.Catalog) []Entry {
	out := make([]Entry, 0, len(c.Prompts)+len(c.Resources)+len(c.Templates))
	for _, p := range c.Prompts {
		out = append(out, PromptEntry(p))
	}
	for _, r := range c.Resources {
		out = append(out, ResourceEntry(r))
	}
	for _, r := range c.Templates {
		out = append(out, ResourceEntry(r))
	}
	return out
}

// Ref is what the review commands call e (core.ReviewRef).
func (e Entry) Ref() string { return core.ReviewRef(e.Kind, e.Name) }

// Description is the entry's description, "" when it has none.
func (e Entry) Description() string {
	var m struct {
		Description string `json:"description"`
	}
	_ = json.Unmarshal(e.Raw, &m)
	return m.Description
}

// volatile are members of a resource that change with its content, not
// with what it tells the model: pinning them would withhold a log file
// each time it grows.
var volatile = []string{"size"}

// Fingerprint identifies what a client is shown of e (RV-1):
// FingerprintPrefix and the hex SHA-256 of the canonical JSON of
//
//	{"entry": …, "kind": "prompt"|"resource"}
//
// where entry is every member the upstream sent (description, title,
// arguments, annotations, icons, _meta, …), a prompt's name being the
// upstream's own, and a resource's size and annotations.lastModified left
// out (volatile). The kind member keeps a prompt's and a resource's
// documents, and a tool's (which has none), from ever sharing a
// fingerprint. An entry that is not valid JSON is hashed as its raw bytes
// ("entryRaw", base64).
func (e Entry) Fingerprint() string {
	var b bytes.Buffer
	b.WriteString(`{`)
	if doc, ok := e.document(); ok {
		b.WriteString(`"entry":`)
		b.Write(doc)
	} else {
		b.WriteString(`"entryRaw":`)
		canonjson.WriteCanonicalString(&b, base64.StdEncoding.EncodeToString(e.Raw))
	}
	b.WriteString(`,"kind":`)
	canonjson.WriteCanonicalString(&b, string(e.Kind))
	b.WriteString(`}`)
	sum := sha256.Sum256(b.Bytes())
	return FingerprintPrefix + hex.EncodeToString(sum[:])
}

// document is the canonical JSON of what the fingerprint covers.
func (e Entry) document() ([]byte, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(e.Raw, &m); err != nil || m == nil {
		return nil, false
	}
	switch e.Kind {
	case core.EntryPrompt:
		m["name"], _ = json.Marshal(e.Key)
	case core.EntryResource:
		for _, k := range volatile {
			delete(m, k)
		}
		var ann map[string]json.RawMessage
		if json.Unmarshal(m["annotations"], &ann) == nil && ann != nil {
			delete(ann, "lastModified")
			m["annotations"], _ = json.Marshal(ann)
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	canon, err := canonjson.CanonicalJSON(raw)
	return canon, err == nil
}

// Entry decisions are stored under a source no upstream can have (upstream
// names are ^[a-zA-Z0-9_-]+$), so the stores keep them beside tools'
// without a kind of their own: "prompt:notes".
func storedSource(kind core.EntryKind, source string) string {
	if kind == core.EntryTool {
		return source
	}
	return string(kind) + ":" + source
}

// toStored and fromStored fold the kind into Source and back.
func toStored(a core.Approval) core.Approval {
	a.Source, a.Kind = storedSource(a.Kind, a.Source), core.EntryTool
	return a
}

func fromStored(a core.Approval) core.Approval {
	for _, k := range []core.EntryKind{core.EntryPrompt, core.EntryResource} {
		if rest, ok := strings.CutPrefix(a.Source, string(k)+":"); ok {
			a.Kind, a.Source = k, rest
			return a
		}
	}
	return a
}

// EntryState returns e's review state.
func (r *Reviewer) EntryState(e Entry) core.ReviewState {
	return r.stateOf(approvalKey{e.Kind, e.Source, e.Key}, func() string { return r.entryFingerprint(e) })
}

// AllowsEntry is review's gate for a prompt or resource (RV-3), exactly as
// Allows is for a tool: whether it may be listed, read or got.
func (r *Reviewer) AllowsEntry(e Entry) bool {
	mode := r.Mode()
	if mode == core.ReviewOff {
		return true
	}
	return modeAllows(mode, r.EntryState(e))
}

// EntryDecision returns the recorded decision for e.
func (r *Reviewer) EntryDecision(e Entry) (core.Approval, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.decisions[approvalKey{e.Kind, e.Source, e.Key}]
	return a, ok
}

// EntryStateNote is StateNote for e.
func (r *Reviewer) EntryStateNote(e Entry) string {
	if d, ok := r.EntryDecision(e); ok && d.Decision == core.DecisionApproved && LegacyFingerprint(d.Fingerprint) {
		return "re-approve (fingerprint format changed)"
	}
	return ""
}

// ApproveEntry records that e, as it is now, may be served.
func (r *Reviewer) ApproveEntry(ctx context.Context, e Entry, by string) error {
	return r.decideEntry(ctx, e, core.DecisionApproved, by)
}

// RejectEntry records that e must not be served (in every mode but off).
func (r *Reviewer) RejectEntry(ctx context.Context, e Entry, by string) error {
	return r.decideEntry(ctx, e, core.DecisionRejected, by)
}

func (r *Reviewer) decideEntry(ctx context.Context, e Entry, d core.ReviewDecision, by string) error {
	if e.Kind != core.EntryPrompt && e.Kind != core.EntryResource || e.Source == "" || e.Key == "" {
		return fmt.Errorf("review: %q is not a prompt or resource of an upstream", e.Ref())
	}
	a := core.Approval{
		Kind: e.Kind, Source: e.Source, RemoteName: e.Key, Fingerprint: e.Fingerprint(),
		Decision: d, By: by, At: r.now().UTC().Round(0),
	}
	return r.record(ctx, a, func() core.EventData {
		return core.ToolReviewed{Kind: e.Kind, Source: e.Source, RemoteName: e.Key, Name: e.Ref(), State: r.EntryState(e), By: by}
	})
}

// entryFingerprint caches e's fingerprint by its raw bytes: the catalog is
// filtered on every sync and every read.
func (r *Reviewer) entryFingerprint(e Entry) string {
	key := approvalKey{e.Kind, e.Source, e.Key}
	r.fpMu.Lock()
	defer r.fpMu.Unlock()
	if c, ok := r.entryFps[key]; ok && bytes.Equal(c.raw, e.Raw) {
		return c.fp
	}
	fp := e.Fingerprint()
	r.entryFps[key] = entryFp{raw: bytes.Clone(e.Raw), fp: fp}
	return fp
}

type entryFp struct {
	raw []byte
	fp  string
}
