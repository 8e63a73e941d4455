// Package report builds what the command line prints of a gateway — the
// check report (OP-3 in docs/behaviour.md), the tool rows of `tools`, the review rows
// of `review list` — from the gateway's state, and picks the tools a review
// decision applies to. The shapes are plain data, so every way of showing
// them (text, --json, an admin API) shows the same thing.
package report

import (
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review"
	"github.com/toolgate/toolgate/core/review/scan"
)

// Check is the `check --json` shape (OP-3 in docs/behaviour.md).
type Check struct {
	Upstreams  []Upstream       `json:"upstreams"`
	Tools      []Tool           `json:"tools"`
	Collisions []core.Collision `json:"collisions"`
	Dropped    []Drop           `json:"dropped"`
	// Admin is the admin API the config asks for (CO-9).
	Admin Admin `json:"admin"`
	// Problems: a collision, a drop the operator did not ask for, or (when
	// upstreams were probed) an upstream that is not connected.
	Problems bool `json:"-"`
}

// Admin is the admin API as check reports it: whether there is one, where
// it listens and the operators its keys name. Never a key.
type Admin struct {
	Enabled   bool     `json:"enabled"`
	Listen    string   `json:"listen,omitempty"`
	Operators []string `json:"operators,omitempty"`
	// Loopback: reachable from this machine only (a unix socket or a
	// loopback address).
	Loopback bool `json:"loopback,omitempty"`
}

// Upstream is one upstream as check reports it.
type Upstream struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	Transport string `json:"transport"`
	Tools     int    `json:"tools"`
	Error     string `json:"error,omitempty"`
}

// Drop is one tool an import left out.
type Drop struct {
	Source     string `json:"source"`
	RemoteName string `json:"remoteName"`
	Reason     string `json:"reason"`
}

// Tool is one registry tool as `tools` and `check` print it.
type Tool struct {
	Name        string `json:"name"`
	Source      string `json:"source,omitempty"`
	RemoteName  string `json:"remoteName,omitempty"`
	Kind        string `json:"kind"`
	ReviewState string `json:"reviewState,omitempty"`
	Flags       []Flag `json:"flags"`
}

// Flag is one scanner flag (RV-2) as the console shows it: what was found,
// how alarming it is, where, the span and its text, and why. The flat list
// of kinds is Kinds(flags); it is not printed, since every kind is here.
type Flag struct {
	Kind     core.FlagKind `json:"kind"`
	Severity string        `json:"severity"`
	// Where is core.Flag.Where: "name", "description", "title", a pointer into
	// the input schema, or a field and a pointer into it
	// ("outputSchema/properties/x/description").
	Where string `json:"where"`
	// Start and End are byte offsets into that text, [Start, End).
	Start int `json:"start"`
	End   int `json:"end"`
	// Text is the flagged span with hidden characters shown as markers
	// (scan.VisibleText), clipped to maxFlagText characters.
	Text   string `json:"text"`
	Reason string `json:"reason"`
}

// maxFlagText bounds Flag.Text: a too-long flag spans the whole excess.
const maxFlagText = 200

// flagsOf renders t's flags.
func flagsOf(t core.ToolInfo, flags []core.Flag) []Flag {
	return renderFlags(scan.ToolInput(t, nil).Text, flags)
}

// renderFlags renders flags, with resolve finding each one's text.
func renderFlags(resolve func(where string) (string, bool), flags []core.Flag) []Flag {
	out := make([]Flag, 0, len(flags))
	for _, f := range flags {
		var text string
		if s, ok := resolve(f.Where); ok && 0 <= f.Start && f.Start <= f.End && f.End <= len(s) {
			text = s[f.Start:f.End]
			if r := []rune(text); len(r) > maxFlagText {
				text = string(r[:maxFlagText]) + "…"
			}
		}
		out = append(out, Flag{Kind: f.Kind, Severity: f.Kind.Severity(), Where: f.Where, Start: f.Start, End: f.End,
			Text: scan.VisibleText(text), Reason: f.Reason})
	}
	return out
}

// Kinds are the distinct kinds among flags, sorted: what a table prints.
func Kinds(flags []Flag) []string {
	kinds := []string{}
	for _, f := range flags {
		kinds = append(kinds, string(f.Kind))
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// NewCheck reports snap. probed says the upstreams were connected to, so
// one that is not connected is a problem.
func NewCheck(rev *review.Reviewer, snap core.Snapshot, probed bool) Check {
	r := Check{Upstreams: []Upstream{}, Tools: Tools(rev, snap), Collisions: snap.Collisions, Dropped: []Drop{}}
	if r.Collisions == nil {
		r.Collisions = []core.Collision{}
	}
	r.Problems = len(r.Collisions) > 0
	for _, st := range snap.Upstreams {
		r.Upstreams = append(r.Upstreams, Upstream{
			Name: st.Name, State: string(st.State), Transport: st.Transport, Tools: st.Tools, Error: st.LastError,
		})
		r.Problems = r.Problems || probed && st.State != core.StateConnected
	}
	for _, d := range snap.Dropped {
		if d.Kind == core.DropFilter {
			continue // the operator asked for it (IM-14)
		}
		r.Dropped = append(r.Dropped, Drop{Source: d.Source, RemoteName: d.RemoteName, Reason: d.Reason})
		r.Problems = true
	}
	return r
}

// Tools lists the registry as printed by tools and check.
func Tools(rev *review.Reviewer, snap core.Snapshot) []Tool {
	out := []Tool{}
	for _, t := range snap.Tools {
		state, flags := reviewInfo(rev, t, snap.Tools)
		out = append(out, Tool{Name: t.Name, Source: t.Source, RemoteName: t.RemoteName, Kind: string(t.Kind), ReviewState: string(state), Flags: flags})
	}
	return out
}

// Review types: what a Review row is about.
const (
	TypeTool     = "tool"
	TypePrompt   = "prompt"
	TypeResource = "resource"
)

// Review is one imported tool, or one prompt or resource an upstream
// lists, as `review list` prints it.
type Review struct {
	// Type is tool, prompt or resource (a resource template included).
	Type string `json:"type"`
	// Name is the served name: a tool's or prompt's prefixed name, a
	// resource's URI or URI template.
	Name string `json:"name"`
	// Ref is what review approve and reject take for a prompt or resource
	// (core.ReviewRef): "prompt:NAME", "resource:URI".
	Ref    string `json:"ref,omitempty"`
	Source string `json:"source"`
	// RemoteName is the upstream's own name of a tool or prompt, or a
	// resource's URI or URI template: with Source, what a decision is
	// recorded under.
	RemoteName  string           `json:"remoteName"`
	Kind        string           `json:"kind"`
	ReviewState core.ReviewState `json:"reviewState"`
	// Served says whether review lets the tool through under the mode
	// (RV-3); the other gates still apply.
	Served      bool   `json:"served"`
	Flags       []Flag `json:"flags"`
	Fingerprint string `json:"fingerprint"`
	DecidedBy   string `json:"decidedBy,omitempty"`
	// ReviewNote says why the state is what it is where the state alone
	// does not (review.Reviewer.StateNote): an approval of an older
	// fingerprint format shows as changed, "re-approve (fingerprint
	// format changed)".
	ReviewNote string `json:"reviewNote,omitempty"`
}

// Reviews lists the imported tools among tools, then entries (the
// upstreams' prompts and resources, review.EntriesOf), with their review.
func Reviews(rev *review.Reviewer, tools []core.ToolInfo, entries []review.Entry) []Review {
	out := []Review{}
	for _, t := range tools {
		if t.Source == "" {
			continue
		}
		state, flags := reviewInfo(rev, t, tools)
		row := Review{
			Type: TypeTool, Name: t.Name, Source: t.Source, RemoteName: t.RemoteName, Kind: string(t.Kind),
			ReviewState: state, Served: rev.Allows(t), Flags: flags, Fingerprint: review.ToolFingerprint(t),
			ReviewNote: rev.StateNote(t),
		}
		if d, ok := rev.Decision(t.Source, t.RemoteName); ok {
			row.DecidedBy = d.By
		}
		out = append(out, row)
	}
	for _, e := range entries {
		in := scan.EntryInput{Raw: e.Raw}
		row := Review{
			Type: string(e.Kind), Name: e.Name, Ref: e.Ref(), Source: e.Source, RemoteName: e.Key,
			ReviewState: rev.EntryState(e), Served: rev.AllowsEntry(e),
			Flags:       renderFlags(in.Text, review.EntryFlags(e.Source, e.Raw, tools)),
			Fingerprint: e.Fingerprint(), ReviewNote: rev.EntryStateNote(e),
		}
		if d, ok := rev.EntryDecision(e); ok {
			row.DecidedBy = d.By
		}
		out = append(out, row)
	}
	return out
}

// reviewInfo is what every report shows of t's review: its state and its
// scanner flags ("" and none for a native tool).
func reviewInfo(rev *review.Reviewer, t core.ToolInfo, all []core.ToolInfo) (core.ReviewState, []Flag) {
	if t.Source == "" {
		return "", []Flag{}
	}
	return rev.State(t), flagsOf(t, review.ReviewFlags(t, all))
}

// FlagKinds are the distinct kinds of flags, sorted.
func FlagKinds(flags []core.Flag) []string {
	kinds := []string{}
	for _, f := range flags {
		kinds = append(kinds, string(f.Kind))
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// Target is what one review decision applies to: a tool, or (Entry set) a
// prompt or resource.
type Target struct {
	Tool  core.ToolInfo
	Entry *review.Entry
}

// Name is the target as review commands print it: a tool's name, an
// entry's ref.
func (t Target) Name() string {
	if t.Entry != nil {
		return t.Entry.Ref()
	}
	return t.Tool.Name
}

// Targets picks what a review decision applies to: the named tools,
// prompts and resources, or with allNew every imported tool and every entry
// without a decision yet. A name is a tool's; else a prompt's served name;
// else a resource's URI or URI template; "prompt:NAME" and "resource:URI"
// (core.ReviewRef) say which when a prompt shares a tool's name. Every name
// is checked before anything is decided; problems lists each bad name.
func Targets(rev *review.Reviewer, tools []core.ToolInfo, entries []review.Entry, names []string, allNew bool) (targets []Target, problems []string) {
	if allNew {
		for _, t := range tools {
			if t.Source != "" && rev.State(t) == core.ReviewNew {
				targets = append(targets, Target{Tool: t})
			}
		}
		for i := range entries {
			if rev.EntryState(entries[i]) == core.ReviewNew {
				targets = append(targets, Target{Entry: &entries[i]})
			}
		}
		return targets, nil
	}
	for _, name := range names {
		kind, bare := core.ParseReviewRef(name)
		if kind == core.EntryTool {
			i := slices.IndexFunc(tools, func(t core.ToolInfo) bool { return t.Name == name })
			switch {
			case i >= 0 && tools[i].Source == "":
				problems = append(problems, fmt.Sprintf("%q is a native tool; only imported tools are reviewed", name))
				continue
			case i >= 0:
				targets = append(targets, Target{Tool: tools[i]})
				continue
			}
		}
		i := slices.IndexFunc(entries, func(e review.Entry) bool {
			return e.Name == bare && (kind == core.EntryTool || e.Kind == kind)
		})
		if i < 0 {
			problems = append(problems, fmt.Sprintf("no tool, prompt or resource %q (is its upstream connected? see toolgate review list)", name))
			continue
		}
		targets = append(targets, Target{Entry: &entries[i]})
	}
	return targets, problems
}
