package core

import (
	"context"
	"time"
)

// Console is everything the operator's console needs of a gateway: state,
// events and commands. The console talks to a gateway only through it, so an
// in-process gateway and a remote one behind an admin API (CO-9) are
// interchangeable: every method takes a context and may do I/O, and every
// value crossing it is plain data. The console calls it from commands, never
// from its update loop.
type Console interface {
	// Subscribe returns the current state and a subscription to the events
	// after it, in order.
	Subscribe(ctx context.Context) (Snapshot, Subscription, error)
	Info(ctx context.Context) (ConsoleInfo, error)

	// PlanRefresh lists one upstream and returns what applying would change;
	// the gateway holds the listing under the plan's ID until ApplyRefresh
	// or CancelRefresh (CO-4).
	PlanRefresh(ctx context.Context, upstream string) (RefreshPlan, error)
	ApplyRefresh(ctx context.Context, planID string) (Diff, error)
	CancelRefresh(ctx context.Context, planID string) error
	RefreshAll(ctx context.Context) ([]Diff, error)
	Ping(ctx context.Context, upstream string) (time.Duration, error)

	ApproveTool(ctx context.Context, name, by string) error
	RejectTool(ctx context.Context, name, by string) error
	// ToolFlags scans one tool's description and schema (RV-2).
	ToolFlags(ctx context.Context, name string) ([]Flag, error)
	// ReviewStates is every imported tool's review state now. A tool whose
	// definition changed may change state (a rug pull becomes "changed")
	// without a review event, so the console asks after tool events.
	ReviewStates(ctx context.Context) (map[string]ReviewState, error)
	// ReviewEntries is every prompt and resource the upstreams list now,
	// with its review state and flags. ApproveTool, RejectTool and
	// ToolFlags take an entry's Ref in place of a tool name.
	ReviewEntries(ctx context.Context) ([]ReviewEntry, error)

	ApproveConfirmation(ctx context.Context, id, by string) error
	RejectConfirmation(ctx context.Context, id, by, reason string) error

	EndSession(ctx context.Context, id string) error
}

// Subscription is a console's ordered view of a gateway's events. When the
// consumer falls behind, the gateway drops events and sends one Resync event;
// the consumer then calls Resync for a fresh snapshot and carries on from it.
// C is closed when the subscription ends (Close, or the gateway closing).
type Subscription interface {
	C() <-chan Event
	Resync(ctx context.Context) (Snapshot, error)
	Close()
}

// ConsoleInfo is fixed for the console's life: what it is looking at.
type ConsoleInfo struct {
	// Endpoints are the URLs clients connect to.
	Endpoints []string `json:"endpoints,omitempty"`
	// OpenEndpoints run without authentication (AU-7): the console warns.
	OpenEndpoints []string `json:"openEndpoints,omitempty"`
	// Demo is true for the built-in demo (OP-4).
	Demo bool `json:"demo,omitempty"`
	// Notice is a line the header shows, e.g. the demo's generated secret.
	Notice string `json:"notice,omitempty"`
	// ReviewMode is the review mode in force (RV-3).
	ReviewMode ReviewMode `json:"reviewMode"`
}
