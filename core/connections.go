package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Connection is one account connected to an upstream that toolgate calls
// as an OAuth client (UI-2): an actor's own, or the gateway's shared one
// (ActorID SharedActor). Its tokens are in Sealed, encrypted with the
// gateway's credentials key and bound to ID, Upstream and ActorID (UI-3);
// nothing else in it is secret.
type Connection struct {
	ID       string `json:"id"`
	Upstream string `json:"upstream"`
	ActorID  string `json:"actor"`
	// Scopes were granted by the authorization server.
	Scopes []string `json:"scopes,omitempty"`
	// Expiry is the access token's; zero when the server gave none.
	Expiry time.Time `json:"expiry,omitzero"`
	// Broken says why the connection no longer works (its refresh token
	// was refused); "" while it works. A broken connection is replaced by
	// the actor's next connect.
	Broken    string    `json:"broken,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	LastUsed  time.Time `json:"lastUsed,omitzero"`
	// Sealed is the token set, encrypted; KeyID names the key that sealed
	// it, so a rotation knows what to re-seal. Never shown.
	Sealed []byte `json:"-"`
	KeyID  string `json:"-"`
	// Version counts the connection's updates: a refresh writes its new
	// tokens only over the version it read (UpdateConnection), so of two
	// replicas refreshing at once one wins and the other reads its result.
	Version int64 `json:"-"`
}

// SharedActor is the ActorID of an upstream's shared connection (UI-2):
// authentication never yields an empty actor id.
const SharedActor = ""

// ActorLabel is how an actor id is shown: "shared" for SharedActor.
func ActorLabel(id string) string {
	if id == SharedActor {
		return "(shared)"
	}
	return id
}

// ConnectionStore keeps upstream connections (UI-3). A Store implements it
// when it can; stores shared by replicas share their connections, so a
// connection made through one replica serves on every other.
//
// Implementations are safe for concurrent use.
type ConnectionStore interface {
	// PutConnection stores c with Version 1, replacing any connection of
	// the same upstream and actor (a reconnect) and returning the id of
	// the one replaced ("" if none).
	PutConnection(ctx context.Context, c Connection) (replaced string, err error)
	// UpdateConnection writes c over the connection of c.ID only if that is
	// still at version; the stored version becomes version+1. ok is false
	// when another writer came first or the connection is gone.
	UpdateConnection(ctx context.Context, c Connection, version int64) (ok bool, err error)
	// ConnectionFor returns the connection of an upstream and actor, or an
	// error wrapping ErrNoConnection.
	ConnectionFor(ctx context.Context, upstream, actor string) (Connection, error)
	// ConnectionByID returns a connection, or an error wrapping
	// ErrNoConnection.
	ConnectionByID(ctx context.Context, id string) (Connection, error)
	// Connections lists every connection, sorted by upstream, then actor.
	Connections(ctx context.Context) ([]Connection, error)
	// DeleteConnection forgets a connection; false when there was none.
	DeleteConnection(ctx context.Context, id string) (bool, error)
	// TouchConnection records a use at the given time, without changing
	// the version.
	TouchConnection(ctx context.Context, id string, at time.Time) error
}

// ErrNoConnection: no connection of that id, or of that upstream and actor.
var ErrNoConnection = errors.New("no such upstream connection")

// ErrNotConnected: the actor has no working connection to an OAuth
// upstream; the error wrapping it says how to connect (UI-2).
var ErrNotConnected = errors.New("not connected to the upstream")

// Validate reports what makes c unfit to store.
func (c Connection) Validate() error {
	switch {
	case c.ID == "":
		return errors.New("connection: id is required")
	case c.Upstream == "":
		return errors.New("connection: upstream is required")
	case len(c.Sealed) == 0:
		return errors.New("connection: sealed tokens are required")
	}
	return nil
}

// ConnectionChanged is published when a connection is made, refreshed into
// a broken state, revoked or disconnected (UI-3). It carries no token.
type ConnectionChanged struct {
	Connection Connection `json:"connection"`
	// Change is "connected", "broken", "revoked" or "disconnected".
	Change string `json:"change"`
}

func (ConnectionChanged) EventName() string { return "connection.changed" }

func (e ConnectionChanged) String() string {
	return fmt.Sprintf("%s %s on %s (%s)", e.Change, ActorLabel(e.Connection.ActorID), e.Connection.Upstream, e.Connection.ID)
}

type connNoteKey struct{}

// connNote is where a call's upstream notes the connection it went with,
// for the call's audit record (UI-3). WithCall makes one per served call;
// contexts derived from it share it.
type connNote struct {
	mu sync.Mutex
	id string
}

func withConnectionNote(ctx context.Context) context.Context {
	if _, ok := ctx.Value(connNoteKey{}).(*connNote); ok {
		return ctx
	}
	return context.WithValue(ctx, connNoteKey{}, &connNote{})
}

// NoteConnection records that the call in ctx went upstream with the
// connection id (UI-3). Without a call in ctx it does nothing.
func NoteConnection(ctx context.Context, id string) {
	if n, ok := ctx.Value(connNoteKey{}).(*connNote); ok {
		n.mu.Lock()
		n.id = id
		n.mu.Unlock()
	}
}

// ConnectionUsed is the connection the call in ctx went upstream with; ""
// when none was noted.
func ConnectionUsed(ctx context.Context) string {
	if n, ok := ctx.Value(connNoteKey{}).(*connNote); ok {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.id
	}
	return ""
}
