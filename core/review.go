package core

import (
	"encoding/json"
	"strings"
)

// ReviewMode is gateway.review.mode (RV-3).
type ReviewMode string

const (
	// ReviewOff serves every tool; review states are kept but gate nothing.
	ReviewOff ReviewMode = "off"
	// ReviewWarn serves every tool but the rejected ones; new and changed
	// tools are served flagged.
	ReviewWarn ReviewMode = "warn"
	// ReviewPin serves new and approved tools and withholds a tool whose
	// fingerprint changed after approval until it is approved again.
	ReviewPin ReviewMode = "pin"
	// ReviewRequire serves approved tools only.
	ReviewRequire ReviewMode = "require"
)

// DefaultReviewMode is the mode when none is configured.
const DefaultReviewMode = ReviewPin

// ReviewState is where an imported tool stands in review. Native tools have
// none (the empty state).
type ReviewState string

const (
	// ReviewNew: no decision was recorded for the tool.
	ReviewNew ReviewState = "new"
	// ReviewApproved: approved, and the tool still has the approved
	// fingerprint.
	ReviewApproved ReviewState = "approved"
	// ReviewChanged: approved once, but the tool's fingerprint is no
	// longer the approved one.
	ReviewChanged ReviewState = "changed"
	// ReviewRejected: an operator rejected the tool. A rejection holds
	// whatever the fingerprint: otherwise an upstream could shed it by
	// editing one character of its description.
	ReviewRejected ReviewState = "rejected"
)

// ToolReviewed is published when a review decision is recorded, imported or
// reloaded. State is the tool's state after it when the decision was made
// for a tool at hand (Approve, Reject); for decisions read from a file or
// the store (Import, Reload) Name is empty and State is the decision's own
// state, approved or rejected, since the tool may not be imported right now.
//
// For a prompt or resource (RV-1 applies to them as to tools), Kind names
// which, RemoteName is its key (core.ReviewEntry.RemoteName) and Name, when
// set, its ref (core.ReviewRef).
type ToolReviewed struct {
	Kind       EntryKind   `json:"kind,omitempty"`
	Source     string      `json:"source"`
	RemoteName string      `json:"remoteName"`
	Name       string      `json:"name,omitempty"`
	State      ReviewState `json:"state"`
	By         string      `json:"by,omitempty"`
}

// Valid reports whether m is one of the known modes.
func (m ReviewMode) Valid() bool {
	switch m {
	case ReviewOff, ReviewWarn, ReviewPin, ReviewRequire:
		return true
	}
	return false
}

func (ToolReviewed) EventName() string { return "tool.reviewed" }

// EntryKind is what a review decision is about: a tool (the empty kind), or
// a prompt or resource an upstream lists, whose descriptions reach the
// model as tools' do (IM-34).
type EntryKind string

const (
	EntryTool     EntryKind = ""
	EntryPrompt   EntryKind = "prompt"
	EntryResource EntryKind = "resource"
)

// Valid reports whether k is one of the known kinds.
func (k EntryKind) Valid() bool { return k == EntryTool || k == EntryPrompt || k == EntryResource }

// ReviewRef names what a review command acts on: a tool by its registry
// name; a prompt as "prompt:" and its served name; a resource or resource
// template as "resource:" and its URI or URI template. A tool name never
// holds ':' (IM-12), so a ref is never mistaken for one.
func ReviewRef(kind EntryKind, name string) string {
	if kind == EntryTool {
		return name
	}
	return string(kind) + ":" + name
}

// ParseReviewRef splits a ref made by ReviewRef. Anything without a known
// kind before its first ':' is a tool name.
func ParseReviewRef(ref string) (EntryKind, string) {
	for _, k := range []EntryKind{EntryPrompt, EntryResource} {
		if rest, ok := strings.CutPrefix(ref, string(k)+":"); ok {
			return k, rest
		}
	}
	return EntryTool, ref
}

// ReviewEntry is one prompt or resource (or resource template) under review
// (RV-1…RV-3), as the console and `review list` show it.
type ReviewEntry struct {
	Kind EntryKind `json:"kind"`
	// Ref is what the review commands take (ReviewRef).
	Ref    string `json:"ref"`
	Source string `json:"source"`
	// Name is the served name: a prompt's prefixed name, a resource's URI
	// or URI template.
	Name string `json:"name"`
	// RemoteName is the key a decision is recorded under with Source: the
	// upstream's own prompt name, or the URI or URI template.
	RemoteName  string      `json:"remoteName"`
	Description string      `json:"description,omitempty"`
	State       ReviewState `json:"state"`
	// Served says whether review lets it through under the mode (RV-3).
	Served bool   `json:"served"`
	Flags  []Flag `json:"flags"`
	// Raw is the entry as served, for the console's review view.
	Raw json.RawMessage `json:"raw"`
}
