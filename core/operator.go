package core

import "time"

// OperatorAction is published for every action an operator takes through a
// console or the admin API (CO-9): who did what to which thing, and how it
// ended. Every attached console shows it in its Activity pane, and the
// gateway records it in the audit log.
type OperatorAction struct {
	Operator string `json:"operator"`
	// Action is one of the Action… names below.
	Action string `json:"action"`
	// Target is what the action was on: an upstream, a tool, a
	// confirmation, a session, a refresh plan.
	Target string `json:"target,omitempty"`
	// Detail is a short human-readable addition (a rejection's reason, a
	// diff's size); never an argument value or a secret.
	Detail string `json:"detail,omitempty"`
	// Error is why the action failed; empty when it succeeded.
	Error string `json:"error,omitempty"`
}

// Operator action names (OperatorAction.Action).
const (
	ActionRefreshPlan         = "refresh.plan"
	ActionRefreshApply        = "refresh.apply"
	ActionRefreshCancel       = "refresh.cancel"
	ActionRefreshAll          = "refresh.all"
	ActionPing                = "upstream.ping"
	ActionApproveTool         = "tool.approve"
	ActionRejectTool          = "tool.reject"
	ActionApproveConfirmation = "confirmation.approve"
	ActionRejectConfirmation  = "confirmation.reject"
	ActionEndSession          = "session.end"
	ActionRevokeConnection    = "revoke_connection"
	ActionConnectShared       = "connect_shared"
	ActionRekeyConnections    = "rekey_connections"
)

// ConnectionLost is delivered by a console's subscription to a gateway in
// another process when the link broke: the view is no longer live. The
// subscription reconnects by itself at Retry and then delivers Resync, whose
// snapshot replaces the stale view. The gateway never publishes it.
type ConnectionLost struct {
	Error string    `json:"error"`
	Retry time.Time `json:"retry,omitzero"`
}

func (OperatorAction) EventName() string { return "operator.action" }

func (ConnectionLost) EventName() string { return "console.connection_lost" }
