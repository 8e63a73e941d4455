package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Store keeps what must survive a restart: review approvals, the confirm
// ledger, the audit log (OP-5).
//
// Implementations are safe for concurrent use. Close may be called more than
// once; every other method fails with ErrStoreClosed after it.
type Store interface {
	// PutApproval records a review decision (RV-1, RV-4). There is one
	// decision per (source, remoteName); a new decision replaces the old.
	PutApproval(ctx context.Context, a Approval) error
	// Approvals returns every decision, sorted by source, then remoteName.
	Approvals(ctx context.Context) ([]Approval, error)
	// DeleteApproval forgets the decision for one tool. Deleting one that
	// does not exist is not an error.
	DeleteApproval(ctx context.Context, source, remoteName string) error

	// UseToken records a confirm token id as spent, atomically: of two
	// concurrent calls with one id exactly one gets true (CF-4), across
	// goroutines and, for stores shared by several processes, across them.
	//
	// expires lets the store forget ids after they could no longer verify:
	// an id is kept at least until SpentTokenGrace after expires (a zero
	// expires is kept forever). Forgetting is opportunistic, at the latest
	// after PruneEvery further first uses through the same handle.
	UseToken(ctx context.Context, tokenID string, expires time.Time) (firstUse bool, err error)

	// StoreID is the identity of the store's contents: fixed when the store
	// is created, the same for every handle on it and across restarts, and
	// different for every other store. Confirm tokens are bound to it
	// (CF-3), so a token issued against one store is refused by another.
	//
	// It fails with an error wrapping ErrStoreLost while the handle no
	// longer reaches the store it opened (its file was deleted or
	// replaced): meanwhile its other methods fail the same way, and the
	// confirm gate refuses action calls; read tools are served as before.
	StoreID(ctx context.Context) (string, error)

	// AppendAudit records one call (OP-6). A zero Time is set to now.
	AppendAudit(ctx context.Context, r AuditRecord) error
	// Audit returns the records matching q, oldest first; records with equal
	// times stay in the order they were appended.
	Audit(ctx context.Context, q AuditQuery) ([]AuditRecord, error)

	Close() error
}

// ReviewDecision is an operator's verdict on one imported tool.
type ReviewDecision string

const (
	DecisionApproved ReviewDecision = "approved"
	DecisionRejected ReviewDecision = "rejected"
)

// Approval is a review decision about one imported tool at one fingerprint
// (RV-1). Its JSON form is the one approval files use (RV-4).
//
// Kind is empty for a tool; for a prompt or resource RemoteName is its key
// (ReviewEntry.RemoteName). A store keeps no kind: review folds it into
// Source before a decision is stored.
type Approval struct {
	Kind        EntryKind      `json:"kind,omitempty"`
	Source      string         `json:"source"`
	RemoteName  string         `json:"remoteName"`
	Fingerprint string         `json:"fingerprint"`
	Decision    ReviewDecision `json:"decision"`
	By          string         `json:"by"`
	At          time.Time      `json:"at"`
}

// AuditRecord is one call in the audit log (OP-6).
//
// It deliberately has no field for argument values: arguments may carry
// secrets or personal data, and the log outlives the call. ArgsHash lets an
// auditor check a claimed set of arguments without the log revealing them.
type AuditRecord struct {
	Time       time.Time `json:"time"`
	Endpoint   string    `json:"endpoint"`
	ActorID    string    `json:"actorId"`
	Tenant     string    `json:"tenant,omitempty"`
	Session    string    `json:"session,omitempty"`
	Tool       string    `json:"tool"`
	Source     string    `json:"source,omitempty"`
	RemoteName string    `json:"remoteName,omitempty"`
	// ArgsHash is a hash of the canonical arguments; argument values are
	// never stored in clear.
	ArgsHash string `json:"argsHash,omitempty"`
	// Outcome: ok | error | refused | preview | outcome-unknown … or
	// AuditIntent for the record committed before a confirmed action runs;
	// the call's outcome follows in a second record with the same CallID.
	Outcome string `json:"outcome"`
	// Latency is in nanoseconds in JSON, like any time.Duration.
	Latency        time.Duration `json:"latency"`
	ConfirmTokenID string        `json:"confirmTokenId,omitempty"`
	CallID         string        `json:"callId,omitempty"`
	// Rule is the policy rule or limit that decided the call, "default"
	// when no rule matched; empty where no policy applies (PO-4).
	Rule string `json:"rule,omitempty"`
	// Connection is the upstream OAuth connection the call went upstream
	// with (UI-3): its id, never a token; empty for other upstreams.
	Connection string `json:"connection,omitempty"`
	// Via names the meta-tool the call came through ("call_tool", DS-2);
	// Tool is the tool it called. Empty for a direct call.
	Via string `json:"via,omitempty"`
	// Findings is what inspection found in the call and did (IN-2), as a
	// JSON array of {type, detector, path, action, in}: kinds and places,
	// never values. Empty when nothing was found.
	Findings string `json:"findings,omitempty"`
}

// AuditIntent is the outcome of the record a confirmed action's call gets
// before it runs (CF-3): a log with an intent and no outcome for a call says
// the action may have run and its end was not recorded.
const AuditIntent = "intent"

// AuditQuery selects audit records.
type AuditQuery struct {
	// Since keeps records at or after it; zero means from the beginning.
	Since time.Time
	// Limit keeps the first (oldest) Limit matching records, so a reader can
	// page forward; 0 or less means all.
	Limit int
	// CallID keeps only the records of that call (OP-6), found through an
	// index; empty: every call's.
	CallID string
}

var (
	// ErrStoreCorrupt: the file is not a toolgate store, or it is damaged.
	// The store is never reset to recover from it.
	ErrStoreCorrupt = errors.New("store is damaged or not a toolgate store")
	// ErrStoreTooNew: the store was written by a newer toolgate (its schema
	// version is above the one this build knows). It is never downgraded.
	ErrStoreTooNew = errors.New("store was written by a newer toolgate")
	// ErrStoreClosed: the store was used after Close.
	ErrStoreClosed = errors.New("store is closed")
	// ErrStoreLost: the store a handle opened is no longer the one at its
	// place (the file was deleted or replaced while in use). What the
	// handle would write now reaches no later process, the confirm ledger
	// included, so the handle refuses to be used.
	ErrStoreLost = errors.New("store was deleted or replaced while in use")
	// ErrStoreUnavailable: the store's server could not be reached (down,
	// restarting, or the network between). Unlike ErrStoreLost it passes:
	// the next call may succeed, and nothing that failed with it was
	// recorded as done.
	ErrStoreUnavailable = errors.New("store is unreachable")
)

// SecretChecker is a Store that several gateways can share (replicas on one
// database, processes on one file), and that can make sure they all use one
// confirm secret (CF-3): a token issued by a replica with another secret
// would be refused by the others.
//
// CheckConfirmSecret records verifier when the store has none yet, and
// otherwise fails with an error wrapping ErrConfirmSecretMismatch unless it
// equals the recorded one. The verifier is derived from the secret by the
// caller (confirm.SecretVerifier) and never reveals it.
type SecretChecker interface {
	CheckConfirmSecret(ctx context.Context, verifier string) error
}

// ErrConfirmSecretMismatch: the gateways sharing this store use another
// confirm secret than this one.
var ErrConfirmSecretMismatch = errors.New("gateway.confirm.secret differs from the one recorded in the store by the gateways sharing it")

const (
	// SpentTokenGrace is how long past its expiry a spent token id is still
	// kept, so a replica whose clock runs behind cannot accept it again.
	SpentTokenGrace = 5 * time.Minute
	// PruneEvery bounds how many first uses of token ids pass between two
	// prunings of expired ids through one store handle.
	PruneEvery = 100
)

// TokenPruneBefore returns the expiry before which spent ids may be forgotten
// at now, as Unix nanoseconds, the form stores index expiries by.
func TokenPruneBefore(now time.Time) int64 { return now.Add(-SpentTokenGrace).UnixNano() }

// TokenExpiryKey is the Unix-nanosecond form of a token's expiry. A zero
// expiry, or one too far ahead for the form, sorts after every other, so it
// is never pruned.
func TokenExpiryKey(expires time.Time) int64 {
	if expires.IsZero() || !expires.Before(maxUnixNano) {
		return math.MaxInt64
	}
	if expires.Before(minUnixNano) {
		return math.MinInt64
	}
	return expires.UnixNano()
}

var (
	minUnixNano = time.Unix(0, math.MinInt64)
	maxUnixNano = time.Unix(0, math.MaxInt64)
)

// Auditor appends audit records; Store implements it.
type Auditor interface {
	AppendAudit(ctx context.Context, r AuditRecord) error
}

// AuditQueuer is an Auditor that can also take a record without waiting for
// it to be committed. AppendAudit returns once its record is committed;
// QueueAudit once the record is queued: the store commits it shortly after
// (within milliseconds, together with whatever else is queued), in queue
// order with appended records. Nothing queued is dropped: a full queue makes
// QueueAudit wait (until ctx ends), Audit on the same handle first commits
// everything queued before it, and Close commits everything queued before
// it. What a crash of the process can lose is only what was still queued.
//
// A queued record that could not be written is reported by a later
// QueueAudit on the same handle, as an error wrapping ErrAuditLost; that
// call's own record was queued all the same.
type AuditQueuer interface {
	Auditor
	QueueAudit(ctx context.Context, r AuditRecord) error
}

// ErrAuditLost: records queued earlier could not be written.
var ErrAuditLost = errors.New("queued audit records were lost")

// CallFinished is published for every served call (CO-7's activity feed).
type CallFinished struct {
	Record AuditRecord `json:"record"`
	// TraceID is the call's trace, in hex, when it was traced (OP-9).
	TraceID string `json:"traceId,omitempty"`
}

// Valid reports whether d is one of the known decisions.
func (d ReviewDecision) Valid() bool { return d == DecisionApproved || d == DecisionRejected }

// Validate reports what makes a unfit to store: the key fields are required
// and the decision must be a known one.
func (a Approval) Validate() error {
	switch {
	case a.Source == "":
		return errors.New("approval: source is required")
	case a.RemoteName == "":
		return errors.New("approval: remoteName is required")
	case a.Fingerprint == "":
		return errors.New("approval: fingerprint is required")
	case !a.Kind.Valid():
		return fmt.Errorf("approval: kind must be %q, %q or absent (got %q)", EntryPrompt, EntryResource, a.Kind)
	case !a.Decision.Valid():
		return fmt.Errorf("approval: decision must be %q or %q (got %q)", DecisionApproved, DecisionRejected, a.Decision)
	}
	return nil
}

func (CallFinished) EventName() string { return "call.finished" }
