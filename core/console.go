package core

import (
	"context"
	"encoding/json"
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

	// Policies is every endpoint's policy rules and the limits, each with
	// the calls it decided in the last hour by the audit log (PO-4, CO-8).
	Policies(ctx context.Context) (PolicyReport, error)
	// TryPolicy says which rule decides a call, without making it (PO-4).
	TryPolicy(ctx context.Context, q PolicyQuestion) (PolicyTrial, error)

	// Connections is every upstream connection (UI-3), sorted by upstream,
	// then actor; never a token (Sealed is nil). Empty when the gateway has
	// no OAuth upstream.
	Connections(ctx context.Context) ([]Connection, error)
	// RevokeConnection forgets a connection, as the operator (by), and
	// returns it as it was: the actor's next call asks to connect again
	// (UI-3). An unknown id fails wrapping ErrNoConnection.
	RevokeConnection(ctx context.Context, id, by string) (Connection, error)
	// AuditOf is the audit records of the call with callID, each with
	// the check of its place in its chain (OP-10, CO-7); none found is
	// an empty slice.
	AuditOf(ctx context.Context, callID string) ([]AuditCheck, error)
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
	// OAuth is each OAuth upstream's credential scope, "perActor" or
	// "shared", by upstream name (UI-2); fixed from the start, as a reload
	// cannot change an upstream's oauth settings.
	OAuth map[string]string `json:"oauth,omitempty"`
}

// PolicyHitWindow is how far back PolicyReport counts hits.
const PolicyHitWindow = time.Hour

// PolicyReport is the policy rules and limits in force and how often each
// decided a call lately (PO-4, CO-8).
type PolicyReport struct {
	// Since is the start of the window the hits are counted in.
	Since time.Time         `json:"since"`
	Rules []PolicyRuleStats `json:"rules"`
	// Quotas are the windowed quotas' current use, heaviest users first.
	Quotas []QuotaUsage `json:"quotas,omitempty"`
}

// QuotaUsage is one quota's current window and its heaviest users
// (PO-3, PO-4).
type QuotaUsage struct {
	Limit string `json:"limit"`
	// Per is what the quota counts by: actor, actor+tool, upstream or
	// endpoint.
	Per   string     `json:"per"`
	Quota int64      `json:"quota"`
	Start time.Time  `json:"start"`
	End   time.Time  `json:"end"`
	Top   []QuotaUse `json:"top"`
	// Err says the store could not be read; Top is then empty.
	Err string `json:"error,omitempty"`
}

// QuotaUse is one counted party's calls in a quota's window. Parts are
// what the quota counts by: tenant and actor id (and tool, for
// actor+tool), the upstream, or the endpoint's path.
type QuotaUse struct {
	Parts []string `json:"parts"`
	Count int64    `json:"count"`
}

// PolicyRuleStats is one rule or limit and its hits: the audit records
// since PolicyReport.Since whose Rule is its ID (on its endpoint, for an
// endpoint's own rule).
type PolicyRuleStats struct {
	// Endpoint is the path of the endpoint whose rule it is; empty for a
	// top-level rule (every endpoint) or a limit.
	Endpoint string `json:"endpoint,omitempty"`
	ID       string `json:"id"`
	// Effect is deny, approve or allow; "limit" for a rate or quota.
	Effect string `json:"effect"`
	// When is the rule's CEL expression (a limit's match).
	When    string    `json:"when,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	Hits    int       `json:"hits"`
	LastHit time.Time `json:"lastHit,omitzero"`
}

// PolicyQuestion asks which rule decides a call of Tool with Args by the
// actor with ID Actor (its roles and tenant as configured) on the endpoint
// at Endpoint ("" the first).
type PolicyQuestion struct {
	Endpoint string          `json:"endpoint,omitempty"`
	Actor    string          `json:"actor"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args,omitempty"`
	// Via asks about the call made through that meta-tool ("call_tool",
	// DS-2) instead of directly; empty: a direct call.
	Via string `json:"via,omitempty"`
	// SessionLabels are the calling session's flow labels to try the rules
	// with (IN-3); none: a fresh session.
	SessionLabels []string `json:"sessionLabels,omitempty"`
}

// PolicyTrial is the answer to a PolicyQuestion: the deciding rule's id (or
// "default"), its effect and reason, the evaluation error that denied the
// call if any, and whether tools/list shows the tool to the actor (PO-2).
type PolicyTrial struct {
	Endpoint string `json:"endpoint"`
	Actor    Actor  `json:"actor"`
	Tool     string `json:"tool"`
	Rule     string `json:"rule"`
	Effect   string `json:"effect"`
	Reason   string `json:"reason,omitempty"`
	Error    string `json:"error,omitempty"`
	Listed   bool   `json:"listed"`
	Via      string `json:"via,omitempty"`
	// ToolLabels and SessionLabels are what tool.labels and
	// session.labels read in the trial (IN-3).
	ToolLabels    []string `json:"toolLabels,omitempty"`
	SessionLabels []string `json:"sessionLabels,omitempty"`
}

// AuditCheck is one audit record of a call and whether its place in its
// writer's chain verifies (OP-10, CO-7): its content and its predecessor's
// hash give its stored hash, the next record of the chain links to it, and
// a checkpoint whose signature verifies covers it. It is one record's
// check, not the whole log's: `toolgate audit verify` walks every chain.
type AuditCheck struct {
	Record AuditRecord `json:"record"`
	// Chain, Seq and Hash are the record's link; empty for a record
	// written before the store had chains.
	Chain string `json:"chain,omitempty"`
	Seq   int64  `json:"seq,omitempty"`
	Hash  string `json:"hash,omitempty"`
	// Verified: the links on both sides hold. Problem says why not.
	Verified bool   `json:"verified"`
	Problem  string `json:"problem,omitempty"`
	// SignedTo is the seq of the valid checkpoint the record's chain was
	// verified up to: the first at or past the record, 0 when none covers
	// it yet; KeyKnown is false when the gateway has no checkpoint key to
	// check signatures with.
	SignedTo int64 `json:"signedTo,omitempty"`
	KeyKnown bool  `json:"keyKnown"`
	// CheckedTo is the seq its chain's links were checked up to: SignedTo,
	// or without a covering checkpoint the chain's head, or as far as the
	// check reads (a bounded stretch) when the chain runs on.
	CheckedTo int64 `json:"checkedTo,omitempty"`
	// Unchained: written before the store had chains (no chained record
	// precedes it), so it cannot be verified; it is not altered either.
	Unchained bool `json:"unchained,omitempty"`
}
