package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/inspect"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/core/schema"
	"github.com/toolgate/toolgate/telemetry"
)

// audit records one call (OP-6) and publishes it for the activity feed
// (CO-7). Argument values are only ever kept as a hash.
func (e *Endpoint) audit(ctx context.Context, call core.Call, actor core.Actor, c *core.ToolCall, res core.Result, err error, latency time.Duration, found []inspect.Reported) {
	if len(found) > 0 {
		inspectTelemetry(ctx, found) // IN-2
	}
	if e.opts.Audit == nil {
		return
	}
	kind := c.Tool.Kind
	rec := e.auditRecord(call, actor, c)
	rec.Outcome, rec.Latency = outcome(kind, c, err, res), latency
	rec.Connection = core.ConnectionUsed(ctx) // UI-3
	rec.Findings = findingsText(found)        // IN-2
	switch {
	case c.Confirm && c.Token != "":
		rec.ConfirmTokenID = confirm.TokenID(c.Token)
	case kind == core.KindAction && err == nil && c.Issued != "":
		rec.ConfirmTokenID = confirm.TokenID(c.Issued)
	}
	// The caller's context may end the moment the answer is written; the
	// record must still land. A call of an action tool may have changed
	// something, so it is answered only once its record is committed (a
	// confirmed one also has its intent in the log from before it ran); for
	// the others a store that can queue the record writes it moments later,
	// off the call's path (losing it takes a crash in those moments).
	actx := context.WithoutCancel(ctx)
	if q, ok := e.opts.Audit.(core.AuditQueuer); ok && kind != core.KindAction {
		if aerr := q.QueueAudit(actx, rec); errors.Is(aerr, core.ErrAuditLost) {
			e.opts.Logger.Error("audit records lost", "err", aerr)
		} else if aerr != nil {
			e.opts.Logger.Error("audit record lost", "tool", c.Tool.Name, "call", call.CallID, "err", aerr)
		}
	} else if aerr := e.opts.Audit.AppendAudit(actx, rec); aerr != nil {
		e.opts.Logger.Error("audit record lost", "tool", c.Tool.Name, "call", call.CallID, "err", aerr)
	}
	e.opts.Registry.Bus().Publish(core.CallFinished{Record: rec, TraceID: telemetry.TraceID(ctx)})
}

// auditRecord is the record of one call (OP-6) without its outcome.
func (e *Endpoint) auditRecord(call core.Call, actor core.Actor, c *core.ToolCall) core.AuditRecord {
	return core.AuditRecord{
		Time: time.Now(), Endpoint: e.opts.Path, ActorID: actor.ID, Tenant: actor.Tenant, Session: call.Session,
		Tool: c.Tool.Name, Source: c.Tool.Source, RemoteName: c.Tool.RemoteName,
		ArgsHash: e.argsHash(c), CallID: call.CallID, Rule: c.Rule, Via: c.Via,
	}
}

// intent is the gate's hook for a confirmed action (CF-3): it commits the
// call's intent record before the action runs, so a call that ran is in the
// log whatever becomes of its outcome, and if the record cannot be written
// the action does not run. The outcome follows under the same call id. Not
// published: the activity feed shows calls once, when they finish.
func (e *Endpoint) intent(call core.Call, actor core.Actor, c *core.ToolCall) confirm.Intent {
	if e.opts.Audit == nil {
		return nil
	}
	return func(ctx context.Context) error {
		rec := e.auditRecord(call, actor, c)
		rec.Outcome, rec.ConfirmTokenID = core.AuditIntent, confirm.TokenID(c.Token)
		// Committed, never only queued: the action waits on it.
		return e.opts.Audit.AppendAudit(context.WithoutCancel(ctx), rec)
	}
}

// argsHash keys the call's canonical arguments (the ones the gate bound, if
// it ran): computed once per call, shared with the gate.
func (e *Endpoint) argsHash(c *core.ToolCall) string {
	canon, err := c.Canonical()
	if err != nil {
		canon = c.Args
	}
	const keyed, plain = "hmac-sha256:", "sha256:"
	var buf [len(keyed) + 2*sha256.Size]byte
	if e.opts.AuditKey != nil {
		m := e.auditMAC()
		m.h.Write(canon)
		sum := m.h.Sum(m.sum[:0])
		n := copy(buf[:], keyed)
		hex.Encode(buf[n:], sum)
		e.macs.Put(m)
		return string(buf[:n+hex.EncodedLen(len(sum))])
	}
	sum := sha256.Sum256(canon)
	n := copy(buf[:], plain)
	hex.Encode(buf[n:], sum[:])
	return string(buf[:n+hex.EncodedLen(len(sum))])
}

// auditMAC is an argument-hash HMAC kept from call to call in the
// endpoint's macs: a new one costs seven allocations, a reset one none.
type auditMAC struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

// auditMAC returns a reset HMAC-SHA256 under the endpoint's audit key;
// give it back to e.macs once its sum is read.
func (e *Endpoint) auditMAC() *auditMAC {
	if m, ok := e.macs.Get().(*auditMAC); ok {
		m.h.Reset()
		return m
	}
	return &auditMAC{h: hmac.New(sha256.New, e.opts.AuditKey)}
}

// outcome names what happened in the audit's words.
func outcome(kind core.Kind, c *core.ToolCall, err error, res core.Result) string {
	if err != nil {
		return errOutcome(err)
	}
	switch {
	case kind == core.KindAction && !c.Confirm && c.Issued != "":
		return "preview"
	case res.IsError:
		return "error"
	}
	return "ok"
}

func errOutcome(err error) string {
	if _, ok := errors.AsType[*confirm.RefusedError](err); ok {
		return "refused"
	}
	if _, ok := errors.AsType[*schema.ValidationError](err); ok {
		return "invalid"
	}
	if _, ok := errors.AsType[*policy.DeniedError](err); ok {
		return "denied"
	}
	if _, ok := errors.AsType[*policy.LimitedError](err); ok {
		return "limited"
	}
	switch {
	case errors.Is(err, core.ErrUnknownTool), errors.Is(err, core.ErrNotPermitted), errors.Is(err, core.ErrToolDisabled):
		return "not-found"
	case errors.Is(err, core.ErrOutcomeUnknown):
		return "outcome-unknown"
	}
	return "failed"
}
