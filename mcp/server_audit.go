package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/canonjson"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/schema"
)

// audit records one call (OP-6) and publishes it for the activity feed
// (CO-7). Argument values are only ever kept as a hash.
func (e *Endpoint) audit(ctx context.Context, call core.Call, actor core.Actor, name string, kind core.Kind, args json.RawMessage, res core.Result, err error, latency time.Duration) {
	if e.opts.Audit == nil {
		return
	}
	toolArgs, confirming, token := auditConfirmArgs(args)
	rec := core.AuditRecord{
		Time: time.Now(), Endpoint: e.opts.Path, ActorID: actor.ID, Tenant: actor.Tenant, Session: call.Session,
		Tool: name, ArgsHash: e.argsHash(toolArgs), Outcome: outcome(kind, confirming, res, err), Latency: latency, CallID: call.CallID,
	}
	if t, ok := e.opts.Registry.Get(name); ok {
		rec.Source, rec.RemoteName = t.Source, t.RemoteName
	}
	if confirming && token != "" {
		rec.ConfirmTokenID = confirm.TokenID(token)
	} else if kind == core.KindAction && err == nil {
		rec.ConfirmTokenID = issuedTokenID(res)
	}
	// The caller's context may end the moment the answer is written; the
	// record must still land. A call of an action tool may have changed
	// something, so it is answered only once its record is committed; for
	// the others a store that can queue the record writes it moments later,
	// off the call's path (losing it takes a crash in those moments).
	actx := context.WithoutCancel(ctx)
	if q, ok := e.opts.Audit.(core.AuditQueuer); ok && kind != core.KindAction {
		if aerr := q.QueueAudit(actx, rec); errors.Is(aerr, core.ErrAuditLost) {
			e.opts.Logger.Error("audit records lost", "err", aerr)
		} else if aerr != nil {
			e.opts.Logger.Error("audit record lost", "tool", name, "call", call.CallID, "err", aerr)
		}
	} else if aerr := e.opts.Audit.AppendAudit(actx, rec); aerr != nil {
		e.opts.Logger.Error("audit record lost", "tool", name, "call", call.CallID, "err", aerr)
	}
	e.opts.Registry.Bus().Publish(core.CallFinished{Record: rec})
}

func (e *Endpoint) argsHash(canonicalish json.RawMessage) string {
	canon, err := canonjson.CanonicalJSON(canonicalish)
	if err != nil {
		canon = canonicalish
	}
	if e.opts.AuditKey != nil {
		m := hmac.New(sha256.New, e.opts.AuditKey)
		m.Write(canon)
		return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// auditConfirmArgs is core.ConfirmArgs without its parse when the gate's
// fields cannot be there: no key can read "confirm" unless those bytes, or
// an escape, appear.
func auditConfirmArgs(args json.RawMessage) (toolArgs json.RawMessage, confirming bool, token string) {
	if len(bytes.TrimSpace(args)) > 0 && !bytes.Contains(args, []byte("confirm")) && bytes.IndexByte(args, '\\') < 0 {
		return args, false, ""
	}
	toolArgs, confirming, token, _ = confirm.ConfirmArgs(args)
	return toolArgs, confirming, token
}

// outcome names what happened in the audit's words.
func outcome(kind core.Kind, confirming bool, res core.Result, err error) string {
	var refused *confirm.RefusedError
	var invalid *schema.ValidationError
	switch {
	case errors.As(err, &refused):
		return "refused"
	case errors.As(err, &invalid):
		return "invalid"
	case errors.Is(err, core.ErrUnknownTool), errors.Is(err, core.ErrNotPermitted), errors.Is(err, core.ErrToolDisabled):
		return "not-found"
	case errors.Is(err, core.ErrOutcomeUnknown):
		return "outcome-unknown"
	case err != nil:
		return "failed"
	case kind == core.KindAction && !confirming && issuedTokenID(res) != "":
		return "preview"
	case res.IsError:
		return "error"
	}
	return "ok"
}

// issuedTokenID finds the confirm token a preview answer carries.
func issuedTokenID(res core.Result) string {
	var body struct {
		StructuredContent struct {
			ConfirmToken string `json:"confirmToken"`
		} `json:"structuredContent"`
	}
	if json.Unmarshal(res.JSON, &body) != nil {
		return ""
	}
	return confirm.TokenID(body.StructuredContent.ConfirmToken)
}
