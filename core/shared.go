package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Broadcaster is a Store that several gateway processes share (replicas on
// one database) and that carries small events between them (OP-5): a review
// decision recorded, a confirmation waiting or decided, a refresh applied.
// The event only names what changed; the data is in the store, and every
// receiver reads it from there. Stores used by a single process (memory,
// SQLite) need not implement it.
//
// Delivery is at most once and may lag; a receiver that may have missed
// events (its link to the store broke, or it fell behind) is sent one
// SharedResync and must then read again whatever it mirrors. A handle never
// receives its own broadcasts. Methods are safe for concurrent use; a slow
// consumer never holds up the others.
type Broadcaster interface {
	// Broadcast sends e to every other handle on the store.
	Broadcast(ctx context.Context, e SharedEvent) error
	// SubscribeShared starts receiving the other handles' events. It waits,
	// until ctx ends, for the store to be listening, so that what others
	// broadcast after it returns is received. The first event is a
	// SharedResync, sent once the store listens: the consumer reads its
	// initial state then.
	SubscribeShared(ctx context.Context) SharedSubscription
}

// SharedSubscription delivers another handle's events, in the order they
// were sent. C is closed by Close or when the store closes.
type SharedSubscription interface {
	C() <-chan SharedEvent
	Close()
}

// SharedEvent is one cross-replica event. Kind is one of the Shared…
// constants; ID is what it is about (a confirmation id, an upstream name),
// never data that the store holds.
type SharedEvent struct {
	Kind string `json:"k"`
	ID   string `json:"id,omitempty"`
}

// SharedEvent kinds.
const (
	// SharedReview: review decisions changed; read them again (RV-1).
	SharedReview = "review"
	// SharedPending: confirmation ID waits for an operator (CF-5).
	SharedPending = "pending"
	// SharedDecided: confirmation ID was decided (CF-5).
	SharedDecided = "decided"
	// SharedRefresh: a refresh of upstream ID was applied (IM-20); "" for
	// all of them.
	SharedRefresh = "refresh"
	// SharedSessionEnded: client session ID was ended for good (DELETE,
	// operator, expiry); no replica may continue it (SV-2).
	SharedSessionEnded = "session-ended"
	// SharedSessionsChanged: a replica's sessions changed; list them again
	// (CO-5).
	SharedSessionsChanged = "sessions"
	// SharedEndSession: an operator asks whichever replica serves the
	// session whose SessionKey is ID to end it (CO-5).
	SharedEndSession = "end-session"
	// SharedFlow: the labels of the flow whose digest is ID grew; a
	// replica holding it reads it again (IN-3).
	SharedFlow = "flow"
	// SharedResync: events may have been missed; read everything again.
	SharedResync = "resync"
)

// SharedApprovals is a Store that keeps the confirmations waiting for an
// operator, so that every gateway sharing it shows them and any can decide
// them (CF-5, CO-9). The database decides which decision wins. Methods are
// safe for concurrent use, across goroutines and processes.
type SharedApprovals interface {
	// AddPending records p as waiting. A p.ID already recorded fails with
	// an error wrapping ErrPendingExists.
	AddPending(ctx context.Context, p PendingConfirmation) error
	// DecidePending settles confirmation id with d, unless it was settled
	// before: exactly one of any number of concurrent calls wins. With
	// expire, a confirmation whose deadline is not after now is settled as
	// timed out instead (an operator deciding too late). The result is the
	// decision that stands, Won telling whether it is this call's; a zero
	// Decision means no confirmation has that id.
	DecidePending(ctx context.Context, id string, d PendingDecision, now time.Time, expire bool) (PendingDecision, error)
	// LookupPending returns confirmation id: Pending is set while it waits,
	// Decision once it is settled; both zero if there is none.
	LookupPending(ctx context.Context, id string) (PendingRecord, error)
	// OpenPending lists the confirmations still waiting whose deadline is
	// after now, oldest first.
	OpenPending(ctx context.Context, now time.Time) ([]PendingConfirmation, error)
}

// PendingDecision is how a shared confirmation was settled.
type PendingDecision struct {
	Decision Decision  `json:"decision"`
	By       string    `json:"by,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
	// Won: the call that returned it made this decision.
	Won bool `json:"-"`
}

// PendingRecord is one shared confirmation: waiting (Pending set) or
// settled (Decision set).
type PendingRecord struct {
	Pending  *PendingConfirmation
	Decision PendingDecision
}

// ErrPendingExists: a confirmation with that id is already recorded.
var ErrPendingExists = errors.New("confirmation is already recorded")

// SharedSessions is a Store that lists the client sessions of every
// gateway sharing it, so any replica's Sessions pane shows them all (CO-5,
// OP-5). Each replica records its own sessions and, with them, that it is
// alive; the rows of a replica that stopped doing so are not listed. The
// sessions are keyed by SessionKey, never by their ids: an id with its
// actor's credentials continues the session, and the database is read by
// more than the gateways. Methods are safe for concurrent use.
type SharedSessions interface {
	// SyncSessions replaces replica's sessions with list (each ID a
	// SessionKey) and records replica as alive at now.
	SyncSessions(ctx context.Context, replica string, now time.Time, list []Session) error
	// DropReplica forgets replica and its sessions (it is shutting down).
	DropReplica(ctx context.Context, replica string) error
	// ListSessions lists the sessions of every replica alive at since or
	// later, by replica, then oldest first; each has Replica set and a
	// SessionKey as its ID.
	ListSessions(ctx context.Context, since time.Time) ([]Session, error)
}

// SessionKey names session id where the id itself must not go: the shared
// listing and the events that ask another replica to end a session. A
// digest, so it cannot be turned back into the id.
func SessionKey(id string) string {
	sum := sha256.Sum256([]byte("toolgate session key\x00" + id))
	return hex.EncodeToString(sum[:16])
}

// ReplicaDirectory is a Store through which replicas tell each other where
// they can be reached, so a request that belongs to a call or session
// living on another replica can be passed to it (OP-11). An address lives
// as long as its replica's beat (SharedSessions); DropReplica forgets it.
// Methods are safe for concurrent use, across goroutines and processes.
type ReplicaDirectory interface {
	// AdvertiseReplica records that replica is reached at addr (host:port).
	AdvertiseReplica(ctx context.Context, replica, addr string, now time.Time) error
	// ReplicaAddrs maps every replica alive at since or later that
	// advertised an address to that address.
	ReplicaAddrs(ctx context.Context, since time.Time) (map[string]string, error)
}
