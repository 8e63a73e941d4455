package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/review"
	"github.com/toolgate/toolgate/core/upstreams"
)

// LocalConsole is the Console of an in-process gateway: each method is a
// direct call into the gateway's parts, so none of them blocks on more than
// the part it calls.
type LocalConsole struct {
	Registry  *core.Registry
	Importer  *upstreams.Importer
	Reviewer  *review.Reviewer // nil: review commands fail
	Approvals *confirm.ApprovalQueue
	Sessions  *core.Sessions
	Details   core.ConsoleInfo
	// Shared, when the store is shared with other replicas, is told of
	// every refresh applied, so they refresh too (IM-20, OP-5).
	Shared core.Broadcaster
	// EndElsewhere, when other replicas' sessions are listed, ends one of
	// them by its SessionKey (CO-5).
	EndElsewhere func(ctx context.Context, key string) error
	// Policy reads the policy in force (PO-4); nil: those reads fail.
	Policy PolicyDesk
	// OAuth lists and revokes upstream connections (UI-3); nil when no
	// upstream has oauth.
	OAuth ConnectionDesk
	// Audit checks one call's audit records (OP-10); nil: the store keeps
	// no audit chain.
	Audit func(ctx context.Context, callID string) ([]core.AuditCheck, error)
}

// AuditOf is the call's audit records with their chain checks.
func (c *LocalConsole) AuditOf(ctx context.Context, callID string) ([]core.AuditCheck, error) {
	if c.Audit == nil {
		return nil, errors.New("this gateway's store keeps no audit chain")
	}
	return c.Audit(ctx, callID)
}

var _ core.Console = (*LocalConsole)(nil)

// errNoReview answers review commands of a gateway built without a store.
var errNoReview = errors.New("review is not configured")

func (c *LocalConsole) Subscribe(context.Context) (core.Snapshot, core.Subscription, error) {
	snap, sub := c.Registry.Bus().Subscribe(0)
	return snap, localSubscription{sub}, nil
}

// localSubscription adapts the bus's subscription, which never does I/O, to
// the console's.
type localSubscription struct{ *core.BusSubscription }

func (s localSubscription) Resync(context.Context) (core.Snapshot, error) {
	return s.BusSubscription.Resync(), nil
}

func (c *LocalConsole) Info(context.Context) (core.ConsoleInfo, error) { return c.Details, nil }

func (c *LocalConsole) PlanRefresh(ctx context.Context, upstream string) (core.RefreshPlan, error) {
	p, err := c.Importer.PlanRefresh(ctx, upstream)
	if err != nil {
		return core.RefreshPlan{}, err
	}
	return *p, nil
}

func (c *LocalConsole) ApplyRefresh(ctx context.Context, planID string) (core.Diff, error) {
	d, err := c.Importer.ApplyRefresh(planID)
	if err == nil {
		broadcastRefresh(ctx, c.Shared, d.Upstream)
	}
	return d, err
}

func (c *LocalConsole) CancelRefresh(_ context.Context, planID string) error {
	return c.Importer.CancelRefresh(planID)
}

func (c *LocalConsole) RefreshAll(ctx context.Context) ([]core.Diff, error) {
	ds, err := c.Importer.RefreshAll(ctx)
	if err == nil {
		broadcastRefresh(ctx, c.Shared, "")
	}
	return ds, err
}

func (c *LocalConsole) Ping(ctx context.Context, upstream string) (time.Duration, error) {
	return c.Importer.Ping(ctx, upstream)
}

func (c *LocalConsole) tool(name string) (core.ToolInfo, error) {
	t, ok := c.Registry.Get(name)
	if !ok {
		return core.ToolInfo{}, fmt.Errorf("%w: %q", core.ErrUnknownTool, name)
	}
	return t.Info(), nil
}

// target resolves what a review command names (as report.Targets does): a
// tool's name; else a prompt's served name; else a resource's URI or URI
// template; or a ref (core.ReviewRef) saying which. entry is nil for a
// tool.
func (c *LocalConsole) target(ref string) (core.ToolInfo, *review.Entry, error) {
	kind, name := core.ParseReviewRef(ref)
	if kind == core.EntryTool {
		if t, err := c.tool(ref); err == nil {
			return t, nil, nil
		}
	}
	for _, e := range review.EntriesOf(c.Importer.Catalog()) {
		if e.Name == name && (kind == core.EntryTool || e.Kind == kind) {
			return core.ToolInfo{}, &e, nil
		}
	}
	switch kind {
	case core.EntryPrompt:
		return core.ToolInfo{}, nil, fmt.Errorf("%w: %q", core.ErrUnknownPrompt, name)
	case core.EntryResource:
		return core.ToolInfo{}, nil, fmt.Errorf("%w: %q", core.ErrUnknownResource, name)
	}
	return core.ToolInfo{}, nil, fmt.Errorf("%w: %q", core.ErrUnknownTool, ref)
}

// ApproveTool approves a tool, a prompt or a resource (see target).
func (c *LocalConsole) ApproveTool(ctx context.Context, name, by string) error {
	return c.decide(ctx, name, by, c.Reviewer.Approve, c.Reviewer.ApproveEntry)
}

// RejectTool rejects what ApproveTool approves.
func (c *LocalConsole) RejectTool(ctx context.Context, name, by string) error {
	return c.decide(ctx, name, by, c.Reviewer.Reject, c.Reviewer.RejectEntry)
}

func (c *LocalConsole) decide(ctx context.Context, ref, by string,
	tool func(context.Context, core.ToolInfo, string) error, entry func(context.Context, review.Entry, string) error) error {
	if c.Reviewer == nil {
		return errNoReview
	}
	t, e, err := c.target(ref)
	switch {
	case err != nil:
		return err
	case e != nil:
		return entry(ctx, *e, by)
	}
	return tool(ctx, t, by)
}

func (c *LocalConsole) ToolFlags(_ context.Context, name string) ([]core.Flag, error) {
	tools := c.Registry.Bus().Snapshot().Tools
	t, e, err := c.target(name)
	switch {
	case err != nil:
		return nil, err
	case e != nil:
		return review.EntryFlags(e.Source, e.Raw, tools), nil
	}
	return review.ReviewFlags(t, tools), nil
}

// ReviewStates holds the tools' states by name and the prompts' and
// resources' by ref.
func (c *LocalConsole) ReviewStates(context.Context) (map[string]core.ReviewState, error) {
	if c.Reviewer == nil {
		return nil, nil
	}
	states := c.Reviewer.States(c.Registry.Bus().Snapshot().Tools)
	for _, e := range review.EntriesOf(c.Importer.Catalog()) {
		states[e.Ref()] = c.Reviewer.EntryState(e)
	}
	return states, nil
}

func (c *LocalConsole) ReviewEntries(context.Context) ([]core.ReviewEntry, error) {
	if c.Reviewer == nil {
		return []core.ReviewEntry{}, nil
	}
	return reviewEntries(c.Reviewer, c.Importer, c.Registry.Bus().Snapshot().Tools), nil
}

func (c *LocalConsole) ApproveConfirmation(ctx context.Context, id, by string) error {
	if c.Approvals == nil {
		return fmt.Errorf("%w: %q", confirm.ErrUnknownConfirmation, id)
	}
	return c.Approvals.ApproveContext(ctx, id, by)
}

func (c *LocalConsole) RejectConfirmation(ctx context.Context, id, by, reason string) error {
	if c.Approvals == nil {
		return fmt.Errorf("%w: %q", confirm.ErrUnknownConfirmation, id)
	}
	return c.Approvals.RejectContext(ctx, id, by, reason)
}

func (c *LocalConsole) EndSession(ctx context.Context, id string) error {
	if c.Sessions == nil {
		return fmt.Errorf("%w: %q", core.ErrUnknownSession, id)
	}
	err := c.Sessions.End(id)
	if !errors.Is(err, core.ErrUnknownSession) {
		return err
	}
	// A SessionKey, as the Sessions pane and `toolgate sessions` name
	// sessions: one of this replica's, or another's.
	for _, s := range c.Sessions.List() {
		if core.SessionKey(s.ID) == id {
			return c.Sessions.End(s.ID)
		}
	}
	if c.EndElsewhere != nil {
		return c.EndElsewhere(ctx, id)
	}
	return err
}
