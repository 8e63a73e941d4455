package core

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
type ToolReviewed struct {
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
