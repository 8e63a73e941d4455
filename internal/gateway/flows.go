package gateway

import (
	"context"

	"github.com/toolgate/toolgate/core"
)

// flowLabels is where the endpoints keep the labels flows gathered beyond
// memory (IN-3): the store, when it can; and, over a shared store, a
// function that tells the other replicas a flow grew, so one holding it
// reads it again.
func (g *Gateway) flowLabels() (core.FlowLabels, func(digest string)) {
	fl, ok := g.store.(core.FlowLabels)
	if !ok {
		return nil, nil
	}
	b, ok := g.store.(core.Broadcaster)
	if !ok {
		return fl, nil
	}
	return fl, func(digest string) {
		// Sent before the call's result goes back; bounded as a session's
		// end is, and a failure only delays the others' reading it.
		ctx, cancel := context.WithTimeout(g.life, sessionEndedWait)
		defer cancel()
		if err := b.Broadcast(ctx, core.SharedEvent{Kind: core.SharedFlow, ID: digest}); err != nil && g.life.Err() == nil {
			g.log.Warn("telling other replicas a session's flow labels grew", "err", err)
		}
	}
}
