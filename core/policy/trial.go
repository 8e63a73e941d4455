package policy

import "github.com/toolgate/toolgate/core"

// Trial is which rule decides a call, found without making it (`toolgate
// policy test`, PO-4).
type Trial struct {
	Endpoint string     `json:"endpoint"`
	Actor    core.Actor `json:"actor"`
	Tool     string     `json:"tool"`
	// Rule is the deciding rule's id, or DefaultRule.
	Rule   string `json:"rule"`
	Effect string `json:"effect"`
	Reason string `json:"reason,omitempty"`
	// Error is the evaluation error that denied the call. The arguments
	// are the asker's own, so it is shown whole.
	Error string `json:"error,omitempty"`
	// Listed: tools/list shows the tool to the actor (PO-2).
	Listed bool `json:"listed"`
	// Via is the meta-tool the call was tried through ("call_tool",
	// DS-2); empty for a direct call. Through it, a tool the listing hides
	// is not found: the call is denied as unknown.
	Via string `json:"via,omitempty"`
	// ToolLabels and SessionLabels are what tool.labels and
	// session.labels read in the trial (IN-3).
	ToolLabels    []string `json:"toolLabels,omitempty"`
	SessionLabels []string `json:"sessionLabels,omitempty"`
}
