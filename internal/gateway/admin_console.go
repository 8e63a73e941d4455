package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
)

// AdminEndpoint is the Endpoint of the audit records of operator actions
// (CO-9, OP-6): Tool is the action (core.Action…), RemoteName its target,
// ActorID the operator.
const AdminEndpoint = "admin"

// localOperator names the in-process console's operator when neither
// Options.Operator nor the caller says who it is.
const localOperator = "console"

// auditWait bounds writing an operator action's audit record.
const auditWait = 5 * time.Second

// ConsoleAs is the gateway's console acting for operator: every action
// taken through it is done as operator (whatever `by` its caller passes),
// published as a core.OperatorAction and recorded in the audit log, so
// every console shows who did what. The admin API serves
// each request through the console of the request key's operator.
func (g *Gateway) ConsoleAs(operator string) core.Console {
	if operator == "" {
		operator = localOperator
	}
	return &accountedConsole{g: g, local: g.localConsole(), operator: operator}
}

// accountedConsole wraps the local console with the accounting of its
// actions. Reads (Subscribe, Info, ToolFlags, ReviewStates,
// ReviewEntries) pass through.
type accountedConsole struct {
	g     *Gateway
	local *LocalConsole
	// operator is who acts. "" (the in-process console without
	// Options.Operator) trusts the caller's `by`, as the console passes the
	// name of the user running it.
	operator string
}

var _ core.Console = (*accountedConsole)(nil)

// who is the operator of an action whose caller said by.
func (c *accountedConsole) who(by string) string {
	switch {
	case c.operator != "":
		return c.operator
	case by != "":
		return by
	}
	return localOperator
}

// account publishes the action of route r and appends its audit record.
func (c *accountedConsole) account(ctx context.Context, r admin.Route, op, target, detail string, start time.Time, err error) {
	action := r.Action
	ev := core.OperatorAction{Operator: op, Action: action, Target: target, Detail: detail}
	rec := core.AuditRecord{Time: start, Endpoint: AdminEndpoint, ActorID: op, Tool: action, RemoteName: target,
		Outcome: "ok", Latency: time.Since(start)}
	if err != nil {
		ev.Error = err.Error()
		rec.Outcome = "error"
	}
	c.g.reg.Bus().Publish(ev)
	// The request may be gone by now (a console quit); the record must
	// still land.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWait)
	defer cancel()
	if aerr := c.g.store.AppendAudit(actx, rec); aerr != nil {
		c.g.log.Error("audit record of an operator action lost", "operator", op, "action", action, "target", target, "err", aerr)
	}
	level := c.g.log.Info
	if err != nil {
		level = c.g.log.Warn
	}
	level("operator action", "operator", op, "action", action, "target", target, "detail", detail, "err", ev.Error)
}

func diffSize(d core.Diff) string {
	return fmt.Sprintf("%s: %d added, %d removed, %d changed", d.Upstream, len(d.Added), len(d.Removed), len(d.Changed))
}

func (c *accountedConsole) Subscribe(ctx context.Context) (core.Snapshot, core.Subscription, error) {
	return c.local.Subscribe(ctx)
}

func (c *accountedConsole) Info(ctx context.Context) (core.ConsoleInfo, error) {
	return c.local.Info(ctx)
}

func (c *accountedConsole) PlanRefresh(ctx context.Context, upstream string) (core.RefreshPlan, error) {
	start := time.Now()
	p, err := c.local.PlanRefresh(ctx, upstream)
	detail := ""
	if err == nil {
		detail = "plan " + p.ID + ", " + diffSize(p.Diff)
	}
	c.account(ctx, admin.RoutePlanRefresh, c.who(""), upstream, detail, start, err)
	return p, err
}

func (c *accountedConsole) ApplyRefresh(ctx context.Context, planID string) (core.Diff, error) {
	start := time.Now()
	d, err := c.local.ApplyRefresh(ctx, planID)
	// The upstream is what the other operators recognise; a plan that did
	// not apply names only its ID.
	target, detail := planID, ""
	if err == nil {
		target, detail = d.Upstream, diffSize(d)
	}
	c.account(ctx, admin.RouteApplyRefresh, c.who(""), target, detail, start, err)
	return d, err
}

func (c *accountedConsole) CancelRefresh(ctx context.Context, planID string) error {
	start := time.Now()
	err := c.local.CancelRefresh(ctx, planID)
	c.account(ctx, admin.RouteCancelRefresh, c.who(""), planID, "", start, err)
	return err
}

func (c *accountedConsole) RefreshAll(ctx context.Context) ([]core.Diff, error) {
	start := time.Now()
	ds, err := c.local.RefreshAll(ctx)
	c.account(ctx, admin.RouteRefreshAll, c.who(""), "", fmt.Sprintf("%d upstream(s)", len(ds)), start, err)
	return ds, err
}

func (c *accountedConsole) Ping(ctx context.Context, upstream string) (time.Duration, error) {
	start := time.Now()
	d, err := c.local.Ping(ctx, upstream)
	detail := ""
	if err == nil {
		detail = d.Round(time.Microsecond).String()
	}
	c.account(ctx, admin.RoutePing, c.who(""), upstream, detail, start, err)
	return d, err
}

func (c *accountedConsole) ApproveTool(ctx context.Context, name, by string) error {
	start := time.Now()
	op := c.who(by)
	err := c.local.ApproveTool(ctx, name, op)
	c.account(ctx, admin.RouteApproveTool, op, name, "", start, err)
	return err
}

func (c *accountedConsole) RejectTool(ctx context.Context, name, by string) error {
	start := time.Now()
	op := c.who(by)
	err := c.local.RejectTool(ctx, name, op)
	c.account(ctx, admin.RouteRejectTool, op, name, "", start, err)
	return err
}

func (c *accountedConsole) ToolFlags(ctx context.Context, name string) ([]core.Flag, error) {
	return c.local.ToolFlags(ctx, name)
}

func (c *accountedConsole) ReviewStates(ctx context.Context) (map[string]core.ReviewState, error) {
	return c.local.ReviewStates(ctx)
}

func (c *accountedConsole) ReviewEntries(ctx context.Context) ([]core.ReviewEntry, error) {
	return c.local.ReviewEntries(ctx)
}

// pendingTool names the tool a pending confirmation would call, for the
// action's detail; "" once it is no longer pending.
func (c *accountedConsole) pendingTool(id string) string {
	if c.g.approvals == nil {
		return ""
	}
	for _, p := range c.g.approvals.Pending() {
		if p.ID == id {
			return p.Tool
		}
	}
	return ""
}

func (c *accountedConsole) ApproveConfirmation(ctx context.Context, id, by string) error {
	start := time.Now()
	op := c.who(by)
	tool := c.pendingTool(id)
	err := c.local.ApproveConfirmation(ctx, id, op)
	c.account(ctx, admin.RouteApproveConfirmation, op, id, tool, start, err)
	return err
}

func (c *accountedConsole) RejectConfirmation(ctx context.Context, id, by, reason string) error {
	start := time.Now()
	op := c.who(by)
	tool := c.pendingTool(id)
	err := c.local.RejectConfirmation(ctx, id, op, reason)
	detail := tool
	if reason != "" {
		detail = joinDetail(tool, "reason: "+reason)
	}
	c.account(ctx, admin.RouteRejectConfirmation, op, id, detail, start, err)
	return err
}

func (c *accountedConsole) EndSession(ctx context.Context, id string) error {
	start := time.Now()
	// The audit and the consoles name the session by its key: the id
	// itself continues the session (SV-2).
	target, detail := id, ""
	for _, s := range c.g.allSessions() {
		if s.ID == id || s.Key() == id {
			target, detail = s.Key(), "actor "+s.Actor.ID+" on "+s.Endpoint+" at "+s.Replica
			break
		}
	}
	err := c.local.EndSession(ctx, id)
	c.account(ctx, admin.RouteEndSession, c.who(""), target, detail, start, err)
	return err
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
