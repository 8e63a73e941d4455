package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
)

const (
	// sharedWait bounds the work one event from another replica starts.
	sharedWait = 30 * time.Second
	// listenWait bounds how long New waits for the store to listen; past
	// it the subscription catches up by the resync that follows.
	listenWait = 5 * time.Second
)

// shared applies what other replicas on the same store changed (OP-5): a
// review decision, a confirmation waiting or decided, a refresh applied.
// Each event only names the change; the data is read from the store.
type shared struct {
	sub  core.SharedSubscription
	done chan struct{}
	// refreshes are the upstream refreshes in progress, run beside the
	// event loop so a slow upstream does not hold the approvals back.
	refreshes sync.WaitGroup
}

// startShared subscribes to the other replicas' events when the store
// carries them; the first event (a resync) reads the shared state.
func (g *Gateway) startShared(ctx context.Context) {
	b, ok := g.store.(core.Broadcaster)
	if !ok {
		return
	}
	if sa, ok := g.store.(core.SharedApprovals); ok && g.approvals != nil {
		g.approvals.Share(sa, b)
	}
	sctx, cancel := context.WithTimeout(ctx, listenWait)
	defer cancel()
	g.shared = &shared{sub: b.SubscribeShared(sctx), done: make(chan struct{})}
	go g.runShared(g.shared)
}

// runShared follows sh until its subscription closes; sh is handed over at
// start rather than read from g later.
func (g *Gateway) runShared(sh *shared) {
	defer close(sh.done)
	for e := range sh.sub.C() {
		ctx, cancel := context.WithTimeout(g.life, sharedWait)
		var err error
		switch e.Kind {
		case core.SharedResync:
			err = errors.Join(g.review.Reload(ctx), g.approvals.SharedResync(ctx))
			if g.sessionShare != nil {
				g.sessionShare.changedElsewhere()
			}
			g.flowsChangedElsewhere("") // IN-3
		case core.SharedFlow:
			g.flowsChangedElsewhere(e.ID)
		case core.SharedReview:
			err = g.review.Reload(ctx)
		case core.SharedPending, core.SharedDecided:
			err = g.approvals.SharedChanged(ctx, e.ID)
		case core.SharedSessionEnded:
			if eps := g.sessionEnds.Load(); eps != nil {
				for _, ep := range *eps {
					ep.EndedElsewhere(e.ID)
				}
			}
		case core.SharedSessionsChanged:
			if g.sessionShare != nil {
				g.sessionShare.changedElsewhere()
			}
		case core.SharedEndSession:
			if g.sessionShare != nil {
				g.sessionShare.endHere(e.ID)
			}
		case core.SharedRefresh:
			sh.refreshes.Go(func() { g.sharedRefresh(e.ID) })
		}
		cancel()
		if err != nil && g.life.Err() == nil {
			g.log.Warn("applying another replica's change", "event", e.Kind, "id", e.ID, "err", err)
		}
	}
}

// sharedRefresh refreshes an upstream another replica refreshed, through
// this replica's own connection, so both serve the same tools (IM-20).
func (g *Gateway) sharedRefresh(upstream string) {
	ctx, cancel := context.WithTimeout(g.life, sharedWait)
	defer cancel()
	var err error
	if upstream == "" {
		_, err = g.importer.RefreshAll(ctx)
	} else {
		_, err = g.importer.Refresh(ctx, upstream)
	}
	if err != nil && g.life.Err() == nil {
		g.log.Warn("refreshing as another replica did", "upstream", upstream, "err", err)
	}
}

// stopShared ends the subscription and waits for the work it started.
func (g *Gateway) stopShared() {
	if g.shared == nil {
		return
	}
	g.shared.sub.Close()
	<-g.shared.done
	g.shared.refreshes.Wait()
}

// broadcastRefresh tells the other replicas that a refresh was applied
// here ("" for all upstreams).
func broadcastRefresh(ctx context.Context, b core.Broadcaster, upstream string) {
	if b == nil {
		return
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedWait)
	defer cancel()
	_ = b.Broadcast(bctx, core.SharedEvent{Kind: core.SharedRefresh, ID: upstream})
}

// flowsChangedElsewhere tells the endpoints that another replica added
// labels to the flow named digest ("": any flow, events were missed), so
// they read it from the store again (IN-3).
func (g *Gateway) flowsChangedElsewhere(digest string) {
	if eps := g.sessionEnds.Load(); eps != nil {
		for _, ep := range *eps {
			ep.FlowChangedElsewhere(digest)
		}
	}
}
