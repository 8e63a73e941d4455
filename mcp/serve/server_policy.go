package serve

import (
	"context"
	"errors"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/policy"
)

// clientVars names the calling client for the policy: the session's
// clientInfo and the era of the protocol in use.
func (e *Endpoint) clientVars(ctx context.Context, session server.ClientSession) policy.ClientVars {
	var cv policy.ClientVars
	proto := server.RequestProtocolVersion(ctx)
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientInfo != nil {
		// A 2026-07-28 request names its client in its own _meta.
		cv.Name, cv.Version = info.ClientInfo.Name, info.ClientInfo.Version
	}
	if session != nil {
		if ci, ok := session.(server.SessionWithClientInfo); ok {
			info := ci.GetClientInfo()
			cv.Name, cv.Version = info.Name, info.Version
		}
		if proto == "" {
			proto = e.ids.Lookup(session.SessionID()).Protocol
		}
	}
	cv.Era = "legacy"
	if proto != "" && mcpgo.IsModernProtocol(proto) {
		cv.Era = "modern"
	}
	return cv
}

func (e *Endpoint) endpointVars() policy.EndpointVars {
	return policy.EndpointVars{Path: e.opts.Path, Name: e.opts.Name}
}

// listable returns the test a listing under rules r applies to each tool
// for actor:
// every gate of SV-4, then the policy, which hides a tool it denies to
// the actor whatever the arguments (PO-2). session may be nil. mcp-go
// applies the same test to a tools/call it dispatches (a stateless
// endpoint's): there the policy is left to the call's decision, so a
// hidden tool is refused with its rule's reason, not as unknown.
func (e *Endpoint) listable(ctx context.Context, r *Rules, actor core.Actor, session server.ClientSession) func(name string) bool {
	allow, p := r.Tools, r.Policy
	if p.Empty() {
		return func(name string) bool { return e.opts.Registry.Allowed(ctx, actor, allow, name) == nil }
	}
	ep, cv := e.endpointVars(), e.clientVars(ctx, session)
	return func(name string) bool {
		if e.opts.Registry.Allowed(ctx, actor, allow, name) != nil {
			return false
		}
		t, ok := e.opts.Registry.Get(name)
		return ok && !p.Hides(&policy.Input{Actor: actor, Tool: &t, Endpoint: ep, Client: cv})
	}
}

// decide applies policy p to a parsed call (PO-1): it records the
// deciding rule for the audit, marks a call an operator must approve, and
// answers the refusal of a denied one. A call whose arguments are invalid
// is left to the validation that refuses it, undecided.
func (e *Endpoint) decide(ctx context.Context, p *policy.Policy, actor core.Actor, c *core.ToolCall, fc *flowCall) (reason string, err error) {
	if p == nil {
		return "", nil
	}
	if c.ArgsErr != nil || c.Validate() != nil {
		return "", nil
	}
	if p.Empty() {
		c.Rule = policy.DefaultRule
		return "", nil
	}
	in := &policy.Input{Actor: actor, Tool: &c.Tool, Args: c.Args, Endpoint: e.endpointVars(),
		Client: e.clientVars(ctx, server.ClientSessionFromContext(ctx))}
	if fc != nil {
		in.ToolLabels, in.SessionLabels = fc.tool, fc.session // IN-3
	}
	d := p.Decide(in)
	c.Rule = d.Rule
	switch d.Effect {
	case policy.Deny:
		if d.Err != nil {
			// The error may quote argument values: the rule id is
			// enough to reproduce it with `toolgate policy test`.
			e.opts.Logger.Warn("a policy rule could not be evaluated; the call is denied",
				"rule", d.Rule, "tool", c.Tool.Name, "endpoint", e.opts.Path, "actor", actor.ID)
		}
		return d.Reason, d.Refusal()
	case policy.Approve:
		c.NeedsOperator = true
	}
	return d.Reason, nil
}

// waitOperator holds a read call a rule sends to an operator (PO-1, CF-5).
func (e *Endpoint) waitOperator(ctx context.Context, actor core.Actor, c *core.ToolCall, reason string) error {
	if e.opts.Gate == nil {
		return &confirm.RefusedError{Err: confirm.ErrNoOperator,
			Text: "Not run: this call needs an operator's approval, and this gateway has no confirm gate configured (gateway.confirm.secret)"}
	}
	return e.opts.Gate.WaitOperator(ctx, actor, c, reason)
}

// RetryAfterMetaKey carries, in a refused call's result _meta, the seconds
// after which the limit that refused it lets a call through (PO-3).
const RetryAfterMetaKey = "dev.toolgate/retryAfterSeconds"

// limit counts a call that is about to run against the limits l (PO-3): an
// action's preview runs nothing and is not counted. A refusal names the
// limit in the audit. What it counted in the store is answered, for
// giveBack.
func (e *Endpoint) limit(ctx context.Context, l *policy.Limits, actor core.Actor, c *core.ToolCall) (*policy.Counted, error) {
	if l.Empty() || c.Tool.Kind == core.KindAction && !c.Confirm || c.ArgsErr != nil || c.Validate() != nil {
		return nil, nil
	}
	counted, err := l.TakeCounted(ctx, &policy.Input{Actor: actor, Tool: &c.Tool, Args: c.Args, Endpoint: e.endpointVars(),
		Client: e.clientVars(ctx, server.ClientSessionFromContext(ctx))})
	var le *policy.LimitedError
	switch {
	case errors.As(err, &le):
		c.Rule = le.ID
	case err != nil:
		e.opts.Logger.Error("a quota could not be counted; the call is refused", "tool", c.Tool.Name, "endpoint", e.opts.Path, "err", err)
		err = &confirm.RefusedError{Err: err, Text: "Not run: the gateway could not count this call against its quota; try again shortly"}
	}
	return counted, err
}

// giveBack uncounts the quotas of a call refused before it ran (PO-3): a
// limit further down the list, a bad confirm token, an operator's
// rejection, a declined elicitation. A call that reached its upstream
// stays counted, whatever its outcome; rates are never given back.
func (e *Endpoint) giveBack(ctx context.Context, counted *policy.Counted, err error) {
	if counted == nil || err == nil {
		return
	}
	var refused *confirm.RefusedError
	var limited *policy.LimitedError
	if !errors.As(err, &refused) && !errors.As(err, &limited) {
		return
	}
	// The call's context may be ending with it; the give-back is short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if gerr := counted.GiveBack(ctx); gerr != nil {
		e.opts.Logger.Warn("a refused call's quota could not be given back; it stays counted", "endpoint", e.opts.Path, "err", gerr)
	}
}
