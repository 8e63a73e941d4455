package core

import (
	"context"
	"fmt"
	"time"
)

// Console is everything the operator's console needs of a gateway: state,
// events and commands. The console talks to a gateway only through it, so
// an in-process gateway (LocalConsole) and a remote one behind an admin API
// (CO-9, later) are interchangeable. Methods may block on I/O: the console
// calls them from commands, never from its update loop.
type Console interface {
	// Subscribe returns the current state and the events after it.
	Subscribe() (Snapshot, *Subscription)
	Info() ConsoleInfo

	PlanRefresh(ctx context.Context, upstream string) (*RefreshPlan, error)
	ApplyRefresh(plan *RefreshPlan) (Diff, error)
	RefreshAll(ctx context.Context) ([]Diff, error)
	Ping(ctx context.Context, upstream string) (time.Duration, error)

	ApproveTool(ctx context.Context, name, by string) error
	RejectTool(ctx context.Context, name, by string) error
	// ToolFlags scans one tool's description and schema (RV-2).
	ToolFlags(name string) ([]Flag, error)
	// ReviewStates is every imported tool's review state now. A tool whose
	// definition changed may change state (a rug pull becomes "changed")
	// without a review event, so the console asks after tool events.
	ReviewStates() map[string]ReviewState

	ApproveConfirmation(id, by string) error
	RejectConfirmation(id, by, reason string) error

	EndSession(id string) error
}

// ConsoleInfo is fixed for the console's life: what it is looking at.
type ConsoleInfo struct {
	// Endpoints are the URLs clients connect to.
	Endpoints []string
	// OpenEndpoints run without authentication (AU-7): the console warns.
	OpenEndpoints []string
	// Demo is true for the built-in demo (OP-4).
	Demo bool
	// Notice is a line the header shows, e.g. the demo's generated secret.
	Notice string
	// ReviewMode is the review mode in force (RV-3).
	ReviewMode ReviewMode
}

// LocalConsole is the Console of an in-process gateway.
type LocalConsole struct {
	Registry  *Registry
	Importer  *Importer
	Reviewer  *Reviewer // nil: review commands fail
	Approvals *ApprovalQueue
	Sessions  *Sessions
	Details   ConsoleInfo
}

var _ Console = (*LocalConsole)(nil)

func (c *LocalConsole) Subscribe() (Snapshot, *Subscription) { return c.Registry.Bus().Subscribe(0) }
func (c *LocalConsole) Info() ConsoleInfo                    { return c.Details }

func (c *LocalConsole) PlanRefresh(ctx context.Context, upstream string) (*RefreshPlan, error) {
	return c.Importer.PlanRefresh(ctx, upstream)
}

func (c *LocalConsole) ApplyRefresh(plan *RefreshPlan) (Diff, error) {
	return c.Importer.ApplyRefresh(plan)
}

func (c *LocalConsole) RefreshAll(ctx context.Context) ([]Diff, error) {
	return c.Importer.RefreshAll(ctx)
}

func (c *LocalConsole) Ping(ctx context.Context, upstream string) (time.Duration, error) {
	return c.Importer.Ping(ctx, upstream)
}

func (c *LocalConsole) tool(name string) (ToolInfo, error) {
	t, ok := c.Registry.Get(name)
	if !ok {
		return ToolInfo{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	return t.Info(), nil
}

func (c *LocalConsole) ApproveTool(ctx context.Context, name, by string) error {
	if c.Reviewer == nil {
		return fmt.Errorf("review is not configured")
	}
	t, err := c.tool(name)
	if err != nil {
		return err
	}
	return c.Reviewer.Approve(ctx, t, by)
}

func (c *LocalConsole) RejectTool(ctx context.Context, name, by string) error {
	if c.Reviewer == nil {
		return fmt.Errorf("review is not configured")
	}
	t, err := c.tool(name)
	if err != nil {
		return err
	}
	return c.Reviewer.Reject(ctx, t, by)
}

func (c *LocalConsole) ToolFlags(name string) ([]Flag, error) {
	t, err := c.tool(name)
	if err != nil {
		return nil, err
	}
	return ReviewFlags(t, c.Registry.Bus().Snapshot().Tools), nil
}

func (c *LocalConsole) ReviewStates() map[string]ReviewState {
	if c.Reviewer == nil {
		return nil
	}
	return c.Reviewer.States(c.Registry.Bus().Snapshot().Tools)
}

func (c *LocalConsole) ApproveConfirmation(id, by string) error {
	if c.Approvals == nil {
		return fmt.Errorf("%w: %q", ErrUnknownConfirmation, id)
	}
	return c.Approvals.Approve(id, by)
}

func (c *LocalConsole) RejectConfirmation(id, by, reason string) error {
	if c.Approvals == nil {
		return fmt.Errorf("%w: %q", ErrUnknownConfirmation, id)
	}
	return c.Approvals.Reject(id, by, reason)
}

func (c *LocalConsole) EndSession(id string) error {
	if c.Sessions == nil {
		return fmt.Errorf("%w: %q", ErrUnknownSession, id)
	}
	return c.Sessions.End(id)
}
