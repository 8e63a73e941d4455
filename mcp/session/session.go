// Package session is the life of a legacy MCP session on one replica, as
// a written state machine (SV-2, OP-5): one State type, one Event type and
// one transition function, Step, that every change of a session's state
// goes through; one Table of sessions (table.go) whose methods are the
// events, each made under the table's one lock; the sealed ids that let
// another replica continue a session (seal.go), the ids ended here
// (tombstones.go) and the places under the caps (limits.go).
// docs/architecture.md draws the machine.
//
// The table (from → event → to; every pair not listed is refused, and
// leaves the phase as it was):
//
//	Absent     Open              Live        initialize, or an adoption of a sealed id
//	Live       Park              Parked      idle for the park delay: the object is let go
//	Parked     Wake              Live        a request: made again from the sealed id
//	Live       TakeIdle          TakenIdle   idle for the idle timeout: refused at once
//	Parked     TakeIdle          TakenIdle
//	Live       End(c)            Ending(c)   the end is claimed for cause c
//	Parked     End(c)            Ending(c)
//	TakenIdle  End(c)            Ending(c)
//	Ending(c)  End(c')           Ending(c')  only c not for good (Idle, Dropped) and c' for
//	                                         good (ByClient, Elsewhere): the end is upgraded
//	Ending(c)  Forget            Absent      what the session held is let go of
//
// Only Live and Parked serve: a session in any other phase is refused
// (404), and is never opened again under its id while it has a record. An
// end is claimed once (the first End wins); a second End of a phase that
// is Ending is refused unless it upgrades an end not for good to one for
// good, which is how a client's DELETE during a shutdown or an idle expiry
// is not lost.
package session

import "fmt"

// State is where a session is in its life on one replica.
type State uint8

const (
	// Absent: no session of the id here; never opened, or forgotten.
	Absent State = iota
	// Live: serving, its session object bound.
	Live
	// Parked: serving, its session object let go; the next request wakes
	// it.
	Parked
	// TakenIdle: the idle sweep took it; refused from now on, its end
	// comes next.
	TakenIdle
	// Ending: an end claimed it (Phase.Cause says which); what it holds is
	// being let go of.
	Ending
)

var stateNames = [...]string{Absent: "absent", Live: "live", Parked: "parked", TakenIdle: "taken idle", Ending: "ending"}

func (s State) String() string { return nameOf(stateNames[:], s, "state") }

// Cause is what ended a session, which decides whether it ended for good.
type Cause uint8

const (
	// ByClient: its DELETE, or an operator. For good, and told to the
	// other replicas, even during a shutdown.
	ByClient Cause = iota
	// Elsewhere: another replica's word. For good; the others know.
	Elsewhere
	// Idle: the idle sweep. Refused here, but not told: the idle clock is
	// this replica's, and a replica where the session is in use carries on.
	Idle
	// Dropped: a shutdown, or a session that could not be made again. Not
	// for good: another replica, or this gateway restarted, may continue it.
	Dropped
)

var causeNames = [...]string{ByClient: "by client", Elsewhere: "elsewhere", Idle: "idle", Dropped: "dropped"}

func (c Cause) String() string { return nameOf(causeNames[:], c, "cause") }

// ForGood reports whether an end of this cause is final everywhere: no
// replica continues the session after it.
func (c Cause) ForGood() bool { return c == ByClient || c == Elsewhere }

// Phase is a session's state, with the cause of its end while Ending.
type Phase struct {
	State State
	Cause Cause
}

func (p Phase) String() string {
	if p.State == Ending {
		return fmt.Sprintf("ending(%s)", p.Cause)
	}
	return p.State.String()
}

// Serves reports whether a request of the session is served in this phase.
func (p Phase) Serves() bool { return p.State == Live || p.State == Parked }

// Endable reports whether an end may still claim the session: it is live,
// parked, or taken by the idle sweep, and no end claimed it yet.
func (p Phase) Endable() bool { return p.Serves() || p.State == TakenIdle }

// Kind names an event.
type Kind uint8

const (
	Open Kind = iota
	Park
	Wake
	TakeIdle
	End
	Forget
)

var kindNames = [...]string{Open: "open", Park: "park", Wake: "wake", TakeIdle: "take idle", End: "end", Forget: "forget"}

func (k Kind) String() string { return nameOf(kindNames[:], k, "kind") }

// Event is what happens to a session; Cause is End's only.
type Event struct {
	Kind  Kind
	Cause Cause
}

// Outcome is what a transition made of a session, for the caller to
// finish outside the lock.
type Outcome uint8

const (
	// Refused: the event does not apply in the phase; nothing changed.
	Refused Outcome = iota
	// Moved: the phase changed, and nothing is to be let go of.
	Moved
	// Claimed: an End claimed the session's end; the caller lets go of
	// what it holds and then sends Forget.
	Claimed
	// Upgraded: an End for good made an end under way, not for good, one
	// for good; the end that claimed it still finishes it.
	Upgraded
)

var outcomeNames = [...]string{Refused: "refused", Moved: "moved", Claimed: "claimed", Upgraded: "upgraded"}

func (o Outcome) String() string { return nameOf(outcomeNames[:], o, "outcome") }

// Step is the transition function: the phase a session in p moves to on
// ev, and what the move was. A refused event leaves p as it was. It is the
// only place a phase changes; the caller holds the lock of the record p
// belongs to.
func Step(p Phase, ev Event) (Phase, Outcome) {
	switch ev.Kind {
	case Open:
		if p.State == Absent {
			return Phase{State: Live}, Moved
		}
	case Park:
		if p.State == Live {
			return Phase{State: Parked}, Moved
		}
	case Wake:
		if p.State == Parked {
			return Phase{State: Live}, Moved
		}
	case TakeIdle:
		if p.Serves() {
			return Phase{State: TakenIdle}, Moved
		}
	case End:
		switch {
		case p.Endable():
			return Phase{State: Ending, Cause: ev.Cause}, Claimed
		case p.State == Ending && !p.Cause.ForGood() && ev.Cause.ForGood():
			return Phase{State: Ending, Cause: ev.Cause}, Upgraded
		}
	case Forget:
		if p.State == Ending {
			return Phase{}, Moved
		}
	}
	return p, Refused
}

// nameOf is v's name in names, or kind(v) for a value it does not name.
func nameOf[T ~uint8](names []string, v T, kind string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, uint8(v))
}
