package tui

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/core"
)

// ErrNotConnected answers a console action while the link to a gateway in
// another process is down: the action is not sent, so nothing was done.
var ErrNotConnected = errors.New("not connected to the gateway (reconnecting): nothing was done")

// lostLink is implemented by the error a remote subscription's Resync
// returns while the link is down; the console shows it like the
// ConnectionLost event it stands for.
type lostLink interface {
	ConnectionLost() core.ConnectionLost
}

// linkGuard is the Console the panes call. While the link is down it fails
// every command at once, so an action gets a clear answer instead of a
// timeout, and a decision is never sent against a view that is not live.
// down is set and cleared by the root model only.
type linkGuard struct {
	core.Console
	down atomic.Bool
}

func (g *linkGuard) check() error {
	if g.down.Load() {
		return ErrNotConnected
	}
	return nil
}

func (g *linkGuard) PlanRefresh(ctx context.Context, upstream string) (core.RefreshPlan, error) {
	if err := g.check(); err != nil {
		return core.RefreshPlan{}, err
	}
	return g.Console.PlanRefresh(ctx, upstream)
}

func (g *linkGuard) ApplyRefresh(ctx context.Context, planID string) (core.Diff, error) {
	if err := g.check(); err != nil {
		return core.Diff{}, err
	}
	return g.Console.ApplyRefresh(ctx, planID)
}

func (g *linkGuard) CancelRefresh(ctx context.Context, planID string) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.Console.CancelRefresh(ctx, planID)
}

func (g *linkGuard) RefreshAll(ctx context.Context) ([]core.Diff, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	return g.Console.RefreshAll(ctx)
}

func (g *linkGuard) Ping(ctx context.Context, upstream string) (time.Duration, error) {
	if err := g.check(); err != nil {
		return 0, err
	}
	return g.Console.Ping(ctx, upstream)
}

func (g *linkGuard) ApproveTool(ctx context.Context, name, by string) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.Console.ApproveTool(ctx, name, by)
}

func (g *linkGuard) RejectTool(ctx context.Context, name, by string) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.Console.RejectTool(ctx, name, by)
}

func (g *linkGuard) ToolFlags(ctx context.Context, name string) ([]core.Flag, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	return g.Console.ToolFlags(ctx, name)
}

func (g *linkGuard) AuditOf(ctx context.Context, callID string) ([]core.AuditCheck, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	return g.Console.AuditOf(ctx, callID)
}

func (g *linkGuard) ReviewStates(ctx context.Context) (map[string]core.ReviewState, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	return g.Console.ReviewStates(ctx)
}

func (g *linkGuard) ReviewEntries(ctx context.Context) ([]core.ReviewEntry, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	return g.Console.ReviewEntries(ctx)
}

func (g *linkGuard) ApproveConfirmation(ctx context.Context, id, by string) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.Console.ApproveConfirmation(ctx, id, by)
}

func (g *linkGuard) RejectConfirmation(ctx context.Context, id, by, reason string) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.Console.RejectConfirmation(ctx, id, by, reason)
}

func (g *linkGuard) EndSession(ctx context.Context, id string) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.Console.EndSession(ctx, id)
}
