package core

import (
	"context"
	"time"
)

// FlowLabels is a Store that keeps the flow labels each session (and each
// sessionless client) gathered (IN-3), so that a session continued on
// another replica, woken after it was parked, or continued after a
// restart, keeps what it read: the labels live in memory where the
// session is served, and a replica that does not hold them reads them
// here. Labels only grow within a flow, so writers add only what is new.
//
// A flow is named by a digest of what it belongs to, never by a session id:
// an id with its actor's credentials continues the session, and the
// database is read by more than the gateways. Methods are safe for
// concurrent use, across goroutines and processes.
type FlowLabels interface {
	// AddFlowLabels adds labels to flow key's set, as a union: what
	// concurrent adds on several handles bring all stays. The flow is kept
	// at least until until (the later of this until and the one kept
	// wins). A flow that lapsed (its until before now) starts again from
	// labels alone. Labels may be empty: the flow's until is then moved
	// on only.
	AddFlowLabels(ctx context.Context, key string, labels []string, now, until time.Time) error
	// FlowLabels returns flow key's labels, sorted, and the time it is
	// kept until; none and a zero time when no flow is kept or it lapsed
	// before now. Lapsed flows may be forgotten.
	FlowLabels(ctx context.Context, key string, now time.Time) (labels []string, until time.Time, err error)
}
