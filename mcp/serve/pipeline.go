package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/inspect"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/core/schema"
	ds "github.com/toolgate/toolgate/mcp/downstream"
	"github.com/toolgate/toolgate/telemetry"
)

// The tools pipeline (SV-1). Every tools/call — a legacy session's, a
// stateless endpoint's, a 2026-07-28 client's, direct or through
// call_tool — goes through these steps, in this order, each a function:
//
//	resolve           the tool looked up once, under the allow-list and the
//	                  actor's gates; the arguments split (serveToolsCall)
//	admit             policy rules (PO-1), then rates and quotas (PO-3)
//	validate          the arguments against the tool's own schema, once
//	inspectArguments  what the arguments carry (IN-1, IN-4), before anything runs
//	run               an action through the confirm gate (CF-1), a read upstream
//	inspectResult     what the result carries (IN-1, IN-4), before the client sees it
//	settle            the flow's labels (IN-3), limits given back, the audit (OP-6)
//
// invoke runs them from admit on. A call loads the endpoint's rules once,
// before resolve, and every step reads that set (OP-8): a reload swapped
// in mid-call applies from the next call on.

// resolve parses one tools/call into the value every later step reads:
// the tool looked up once under the endpoint's allow-list and the actor's
// gates, the arguments split once into the tool's own and the confirm
// gate's (CF-1).
func (e *Endpoint) resolve(ctx context.Context, r *Rules, actor core.Actor, name string, args json.RawMessage) (*core.ToolCall, error) {
	if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		// No arguments at all is an empty object, as the schema sees it.
		args = json.RawMessage(`{}`)
	}
	c, err := e.opts.Registry.Resolve(ctx, actor, r.Tools, name, args)
	if err != nil {
		return nil, err
	}
	if !e.served(core.ToolInfo{Kind: c.Tool.Kind, Disabled: c.Tool.Disabled}) {
		return nil, fmt.Errorf("%w: %q", core.ErrUnknownTool, name)
	}
	confirm.Split(c)
	return c, nil
}

// invoke runs one resolved tools/call under rules r, the set it was
// resolved under, for the session in ctx and returns
// the result as JSON: the upstream's own bytes, or an isError result the
// model can read. asks carries requests to the client on the call's own
// stream; nil without a session.
func (e *Endpoint) invoke(ctx context.Context, r *Rules, actor core.Actor, c *core.ToolCall, token any, asks *pendingRequests) json.RawMessage {
	ctx, call, down, insp := e.callContext(ctx, r, c, token, asks)
	start := time.Now()
	// The request span's stages are its attributes, not spans (OP-9);
	// tr is nil, and notes nothing, when the request is not traced.
	tr := telemetry.RequestOf(ctx)
	telemetry.ToolCall(ctx, c.Tool.Name, c.RequestID)
	reason, fc, counted, err := e.admit(ctx, r, actor, c, call, tr)
	if err == nil {
		validate(c, tr)
	}
	var found []inspect.Reported
	if err == nil && insp != nil {
		err = e.inspectArguments(ctx, actor, c, insp, &found)
	}
	var res core.Result
	if err == nil {
		// Only what policy and the limits admitted runs (PO-1, PO-3).
		res, err = e.run(ctx, actor, c, call, reason, tr)
	}
	if down.filter != nil {
		found = append(found, down.filter.taken()...)
	}
	if err == nil && insp != nil && (c.Tool.Kind != core.KindAction || c.Confirm) {
		res, err = e.inspectResult(ctx, actor, c, insp, res, &found)
	}
	err = e.settle(ctx, actor, c, call, fc, counted, res, err, found, start, tr)
	if err != nil {
		raw, _ := json.Marshal(toolError(c.Tool.Name, err))
		return raw
	}
	return res.JSON
}

// callContext is ctx for the call: its record (core.Call), and the
// downstream what the upstream sends during the call comes back through
// (filtered by the source's inspection, insp).
func (e *Endpoint) callContext(ctx context.Context, r *Rules, c *core.ToolCall, token any, asks *pendingRequests) (context.Context, core.Call, *downstream, *Inspect) {
	callID, idemKey := randomIDPair()
	call := core.Call{Endpoint: e.opts.Path, Channel: "mcp", RequestID: c.RequestID, CallID: callID, IdempotencyKey: idemKey}
	if s := server.ClientSessionFromContext(ctx); s != nil {
		call.Session = s.SessionID()
	}
	if e.opts.Sessions != nil && call.Session != "" {
		e.opts.Sessions.Touch(call.Session, true)
	}
	ctx = core.WithCall(ctx, call)
	logLevel := e.levels.getter(call.Session)
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		// 2026-07-28: the level is the request's own _meta's, and a
		// request that names none is sent no log message ("" is below
		// none).
		level := info.LogLevel
		logLevel = func() (mcpgo.LoggingLevel, bool) { return level, true }
	}
	down := &downstream{ctx: ctx, srv: e.mcp, session: call.Session, logLevel: logLevel, asks: asks}
	insp := r.inspectFor(c.Tool.Source)
	if insp != nil && insp.Policy != nil {
		down.filter = &streamFilter{pol: insp.Policy} // IN-1
	}
	if token != nil {
		down.progressToken = token
		ctx = confirm.WithProgress(ctx, operatorWaitProgress(down, e.opts.Gate, c.Tool))
	}
	return ds.With(ctx, down), call, down, insp
}

// admit decides the call by the policy rules, with the labels its flow
// gathered (fc, IN-3), then counts it under the rates and quotas; reason
// is the rule's, for an operator asked to approve.
func (e *Endpoint) admit(ctx context.Context, r *Rules, actor core.Actor, c *core.ToolCall, call core.Call, tr *telemetry.Request) (reason string, fc *flowCall, counted *policy.Counted, err error) {
	t0 := tr.Now()
	if in := r.Inspection; in != nil {
		fc, err = e.flowOf(ctx, in, e.clientVars(ctx, server.ClientSessionFromContext(ctx)).Name, actor, call.Session, c.Tool)
	}
	if err == nil {
		reason, err = e.decide(ctx, r.Policy, actor, c, fc)
	}
	if err == nil {
		counted, err = e.limit(ctx, r.Limits, actor, c)
	}
	tr.Took(telemetry.StagePolicy, t0)
	return reason, fc, counted, err
}

// validate checks the arguments once for a traced call, timed so the span
// tells validation from the rest; the gate and Run reuse the answer, and
// check them themselves when no span asked.
func validate(c *core.ToolCall, tr *telemetry.Request) {
	if tr != nil {
		t0 := tr.Now()
		_ = c.Validate()
		tr.Took(telemetry.StageValidate, t0)
	}
}

// run runs an admitted call: an action through the confirm gate (preview,
// then the confirmed run, CF-1), asked in the same call where the client
// can be (CF-6); a read on the upstream, after an operator's approval if a
// rule asked for one.
func (e *Endpoint) run(ctx context.Context, actor core.Actor, c *core.ToolCall, call core.Call, reason string, tr *telemetry.Request) (core.Result, error) {
	if c.Tool.Kind != core.KindAction {
		if c.NeedsOperator {
			if err := e.waitOperator(ctx, actor, c, reason); err != nil {
				return core.Result{}, err
			}
		}
		return e.opts.Registry.Run(ctx, actor, c)
	}
	intent := e.intent(call, actor, c)
	t0 := tr.Now()
	res, err := e.opts.Gate.Call(ctx, e.opts.Registry, actor, c, intent)
	if err == nil && !c.Confirm && e.opts.ElicitConfirm && sessionElicitation(ctx) != nil {
		res, err = e.confirmByElicitation(ctx, actor, c, res, intent)
	}
	tr.Took(telemetry.StageConfirm, t0)
	if errors.Is(err, core.ErrStoreLost) {
		// The client reads that actions are refused; the operator needs
		// the path and what happened to it.
		e.opts.Logger.Error("the store is lost: action calls are refused until a restart", "tool", c.Tool.Name, "err", err)
	}
	return res, err
}

// settle ends the call: what reached the client joins its flow's labels
// (IN-3), a refused or failed call gives its count back (PO-3), the span
// notes the outcome, and the call is audited (OP-6). It returns the call's
// error: err, or why the result is withheld when its labels could not be
// recorded.
func (e *Endpoint) settle(ctx context.Context, actor core.Actor, c *core.ToolCall, call core.Call, fc *flowCall, counted *policy.Counted,
	res core.Result, err error, found []inspect.Reported, start time.Time, tr *telemetry.Request) error {
	if fc != nil && err == nil {
		err = e.finishFlow(ctx, fc, found)
	}
	e.giveBack(ctx, counted, err)
	if tr != nil {
		out := outcome(c.Tool.Kind, c, err, res)
		tr.Outcome(out, out != "ok" && out != "preview")
	}
	var t0 time.Time
	if e.opts.Audit != nil {
		t0 = tr.Now()
	}
	e.audit(ctx, call, actor, c, res, err, time.Since(start), found)
	tr.Took(telemetry.StageAudit, t0)
	return err
}

// operatorWaitProgress sends notifications/progress to the calling session
// while a confirmation of tool waits for an operator (CF-5), with the
// gate's waiting message (CF-7). Only the gate waits, so gate is set
// whenever it is called.
func operatorWaitProgress(down *downstream, gate *confirm.Gate, tool core.Tool) confirm.Progress {
	return func(waited, total time.Duration) {
		down.notify(string(mcpgo.MethodNotificationProgress), map[string]any{
			"progressToken": down.progressToken,
			"progress":      waited.Seconds(),
			"total":         total.Seconds(),
			"message":       gate.WaitingText(tool),
		})
	}
}

// toolError turns a refusal or failure into an isError result the model can
// read and recover from (SV-6). A tool that vanished or was refused between
// the list check and the call reads like an unknown tool (SV-5).
func toolError(name string, err error) *mcpgo.CallToolResult {
	var ve *schema.ValidationError
	var refused *confirm.RefusedError
	var denied *policy.DeniedError
	var limited *policy.LimitedError
	switch {
	case errors.As(err, &refused):
		return mcpgo.NewToolResultError(refused.Text)
	case errors.As(err, &denied):
		return mcpgo.NewToolResultError(denied.Reason)
	case errors.As(err, &limited):
		res := mcpgo.NewToolResultError(limited.Error())
		res.Meta = mcpgo.NewMetaFromMap(map[string]any{RetryAfterMetaKey: limited.RetrySeconds()})
		return res
	case errors.Is(err, core.ErrUnknownTool), errors.Is(err, core.ErrNotPermitted), errors.Is(err, core.ErrToolDisabled):
		return mcpgo.NewToolResultError(unknownToolText(name))
	case errors.As(err, &ve):
		return mcpgo.NewToolResultError("invalid arguments: " + ve.Error())
	}
	return mcpgo.NewToolResultError(err.Error())
}
