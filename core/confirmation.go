package core

import (
	"encoding/json"
	"time"
)

// PendingConfirmation is a confirming call waiting for an operator (CO-6).
type PendingConfirmation struct {
	ID         string          `json:"id"`
	Tool       string          `json:"tool"`
	Source     string          `json:"source,omitempty"`
	RemoteName string          `json:"remoteName,omitempty"`
	Actor      Actor           `json:"actor"`
	Arguments  json.RawMessage `json:"arguments"` // canonical
	Preview    string          `json:"preview"`
	Created    time.Time       `json:"created"`
	Deadline   time.Time       `json:"deadline"` // when the caller stops waiting
}

// Decision on a pending confirmation.
type Decision string

const (
	DecisionApprove Decision = "approved"
	DecisionReject  Decision = "rejected"
	DecisionTimeout Decision = "timed-out"
	DecisionGone    Decision = "abandoned" // the caller went away
)

// Approval events.
type (
	ConfirmationPending struct {
		Pending PendingConfirmation `json:"pending"`
	}
	ConfirmationDecided struct {
		ID       string   `json:"id"`
		Decision Decision `json:"decision"`
		By       string   `json:"by,omitempty"`
		Reason   string   `json:"reason,omitempty"`
	}
)
