package core

import (
	"time"
)

// ConnState is an upstream's connection state (IM-9).
type ConnState string

const (
	StateDisconnected ConnState = "disconnected"
	StateConnecting   ConnState = "connecting"
	StateConnected    ConnState = "connected"
	StateFailed       ConnState = "failed"
)

// UpstreamStatus is what the operator sees of one upstream (IM-9).
type UpstreamStatus struct {
	Name        string        `json:"name"`
	Transport   string        `json:"transport"`
	Required    bool          `json:"required,omitempty"`
	State       ConnState     `json:"state"`
	LastError   string        `json:"error,omitempty"`
	LastErrorAt time.Time     `json:"errorAt,omitzero"`
	Tools       int           `json:"tools"`
	Server      ServerInfo    `json:"server,omitzero"`
	Latency     time.Duration `json:"latency,omitempty"`
	// NextAttempt is when the importer next tries a failed upstream again
	// (IM-37); zero when no attempt is scheduled.
	NextAttempt time.Time `json:"nextAttempt,omitzero"`
	// Removed: a config reload took the upstream out (OP-8); this is its
	// last status, and views drop it.
	Removed bool `json:"removed,omitempty"`
}

// DropKind says why an upstream's tool was not imported.
type DropKind string

const (
	DropFilter  DropKind = "filter"  // include/exclude (IM-14): deliberate
	DropSchema  DropKind = "schema"  // schema does not compile (IM-18)
	DropPattern DropKind = "pattern" // catastrophic pattern (IM-19)
	DropInvalid DropKind = "invalid" // unusable definition (no name, duplicate)
)

// Drop records one listed tool that was not imported.
type Drop struct {
	Source     string   `json:"source"`
	RemoteName string   `json:"remoteName"`
	Kind       DropKind `json:"kind"`
	Reason     string   `json:"reason"`
}

// ToolChange is one tool whose definition differs between two listings.
type ToolChange struct {
	Old    ToolInfo `json:"old"`
	New    ToolInfo `json:"new"`
	Fields []string `json:"fields"` // description, inputSchema, annotations, kind
}

// Diff is what a refresh of one upstream changes (IM-26).
type Diff struct {
	Upstream   string       `json:"upstream"`
	Added      []ToolInfo   `json:"added,omitempty"`
	Removed    []ToolInfo   `json:"removed,omitempty"`
	Changed    []ToolChange `json:"changed,omitempty"`
	Collisions []Collision  `json:"collisions,omitempty"` // newly refused names
	Dropped    []Drop       `json:"dropped,omitempty"`    // newly dropped tools
}

// ImportedTool is the review-facing view of one imported tool (IM-33). The
// description is third-party text that reaches every client's tool list.
type ImportedTool struct {
	Name        string      `json:"name"`
	Source      string      `json:"source"`
	RemoteName  string      `json:"remoteName"`
	Kind        Kind        `json:"kind"`
	Description string      `json:"description"`
	ReviewState ReviewState `json:"reviewState,omitempty"`
}

// Events the importer publishes.
type (
	// UpstreamChanged: an upstream's status changed.
	UpstreamChanged struct {
		Status UpstreamStatus `json:"status"`
	}
	// ToolsDropped: a listing left these tools out (replaces earlier drops of
	// that upstream).
	ToolsDropped struct {
		Source string `json:"source"`
		Drops  []Drop `json:"drops"`
	}
	// RefreshApplied: a refresh was applied; Diff says what changed.
	RefreshApplied struct {
		Diff Diff `json:"diff"`
	}
	// Warning: something the operator should read.
	Warning struct {
		Source  string `json:"source,omitempty"`
		Message string `json:"message"`
	}
)

// RefreshPlan is a listed-but-not-applied refresh, for the operator to
// confirm (CO-4). The importer keeps what was listed under ID, so a plan is
// plain data that can cross a process boundary.
type RefreshPlan struct {
	ID   string `json:"id"`
	Diff Diff   `json:"diff"`
}
