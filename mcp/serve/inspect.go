package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/flows"
	"github.com/toolgate/toolgate/core/inspect"
	"github.com/toolgate/toolgate/core/jsontree"
	"github.com/toolgate/toolgate/core/schema"
	"github.com/toolgate/toolgate/telemetry"
)

// FindingsMetaKey carries, in a result's _meta, what inspection found and
// did: kinds, detectors, places and actions, never values (IN-2).
const FindingsMetaKey = "dev.toolgate/findings"

// Inspection is the inspection in force at an endpoint (IN-1): a policy per
// upstream (by name) and one for native tools (""). A nil Inspection, or
// a source without a policy, inspects nothing.
type Inspection struct {
	BySource map[string]*Inspect
	// Labels are each upstream's configured flow labels (IN-3).
	Labels map[string]*flows.Rules
	// FlowWindow is how long a sessionless client's labels are kept.
	FlowWindow time.Duration
}

// Inspect is what applies to one source's calls: the detectors' policy
// (nil: none) and the external guards, in order (IN-4).
type Inspect struct {
	Policy *inspect.Policy
	Hooks  []Hook
}

// ErrInspectBlocked marks a call or result refused for what it carried.
var ErrInspectBlocked = errors.New("blocked by inspection")

// resultBlockedError is a result withheld for what it held; its text is
// what the model reads (toolError's default), kinds and places only.
type resultBlockedError struct{ text string }

func (e *resultBlockedError) Error() string { return e.text }
func (e *resultBlockedError) Unwrap() error { return ErrInspectBlocked }

// inspectArguments applies the argument rules to c before it runs (IN-1):
// block refuses it (the upstream is never called), approve waits for an
// operator who sees kinds and places, redact rewrites the arguments sent.
// An action's preview is not held for an operator; its confirmed call is.
func (e *Endpoint) inspectArguments(ctx context.Context, actor core.Actor, c *core.ToolCall, in *Inspect, found *[]inspect.Reported) error {
	pol := in.Policy
	r, err := pol.Check(inspect.Arguments, c.Args)
	if err != nil {
		return nil // not JSON: validation refuses the call
	}
	*found = append(*found, r.Reported...)
	switch r.Action {
	case inspect.ActionBlock:
		return &confirm.RefusedError{Err: ErrInspectBlocked, Text: "Not run: " + r.Summary(inspect.Arguments) + "; the call was not sent"}
	case inspect.ActionApprove:
		if c.Tool.Kind != core.KindAction || c.Confirm {
			if err := e.waitOperator(ctx, actor, concealedCall(c, r.Findings), r.Summary(inspect.Arguments)); err != nil {
				return err
			}
		}
	}
	if red := r.Redactable(pol, inspect.Arguments); len(red) > 0 {
		args, err := inspect.RedactJSON(c.Args, red)
		if err != nil {
			return &confirm.RefusedError{Err: ErrInspectBlocked, Text: "Not run: " + r.Summary(inspect.Arguments) + " and could not be redacted"}
		}
		c.Args = args
	}
	if len(in.Hooks) > 0 {
		args, err := e.runHooks(ctx, actor, c, in.Hooks, inspect.Arguments, c.Args, found)
		if err != nil {
			return err
		}
		c.Args = args
	}
	return nil
}

// concealedCall is c with every found span replaced, for an operator's
// approval: the console shows the arguments, and must not show what was
// found in them.
func concealedCall(c *core.ToolCall, fs []inspect.Finding) *core.ToolCall {
	args, err := inspect.RedactJSON(c.Args, fs)
	if err != nil {
		args = json.RawMessage(`{}`)
	}
	return &core.ToolCall{Tool: c.Tool, Raw: args, Args: args, RequestID: c.RequestID, Rule: c.Rule, Via: c.Via}
}

// inspectResult applies the result rules to what the upstream answered
// (IN-1, IN-2): block answers isError naming kinds and places, approve
// waits for an operator, redact replaces spans (and blocks when that would
// break the tool's output schema); every finding is listed in _meta.
func (e *Endpoint) inspectResult(ctx context.Context, actor core.Actor, c *core.ToolCall, in *Inspect, res core.Result, found *[]inspect.Reported) (core.Result, error) {
	pol := in.Policy
	r, err := pol.Check(inspect.Results, res.JSON)
	if err != nil {
		return res, nil
	}
	*found = append(*found, r.Reported...)
	// Not a RefusedError: the upstream ran, so its quota stays counted.
	blocked := func(why string) (core.Result, error) {
		return core.Result{}, &resultBlockedError{text: "Blocked: " + why}
	}
	switch r.Action {
	case inspect.ActionBlock:
		return blocked(r.Summary(inspect.Results))
	case inspect.ActionApprove:
		if err := e.waitOperator(ctx, actor, concealedCall(c, nil), r.Summary(inspect.Results)); err != nil {
			return core.Result{}, err
		}
	}
	out := res.JSON
	if red := r.Redactable(pol, inspect.Results); len(red) > 0 {
		out, err = inspect.RedactJSON(res.JSON, red)
		if err != nil {
			return blocked(r.Summary(inspect.Results) + ", which could not be redacted")
		}
		if !structuredStillValid(c.Tool.OutputSchema, out, red) {
			return blocked(r.Summary(inspect.Results) + ", and redacting it would break the tool's output schema")
		}
	}
	if len(in.Hooks) > 0 {
		if out, err = e.runHooks(ctx, actor, c, in.Hooks, inspect.Results, out, found); err != nil {
			return core.Result{}, err
		}
	}
	if len(*found) == 0 {
		res.JSON = out
		return res, nil
	}
	out, err = withFindings(out, *found)
	if err != nil {
		return blocked(r.Summary(inspect.Results))
	}
	res.JSON = out
	return res, nil
}

// structuredStillValid: a redacted structuredContent still satisfies the
// tool's output schema (a pattern, format, enum or length may refuse the
// placeholder). Without an output schema, or with nothing redacted there,
// there is nothing to break.
func structuredStillValid(outputSchema json.RawMessage, result []byte, red []inspect.Finding) bool {
	if len(outputSchema) == 0 {
		return true
	}
	touched := false
	for _, f := range red {
		touched = touched || len(f.Path) >= len("/structuredContent") && f.Path[:len("/structuredContent")] == "/structuredContent"
	}
	if !touched {
		return true
	}
	s, err := schema.CompileSchema(outputSchema)
	if err != nil {
		return false
	}
	root, err := jsontree.DecodeJSONTree(result)
	if err != nil || root.Kind != 'o' {
		return false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return false
	}
	return s.Validate(m["structuredContent"]) == nil
}

// withFindings puts the findings in the result's _meta, beside what the
// upstream put there.
func withFindings(result []byte, found []inspect.Reported) ([]byte, error) {
	var m map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(result))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	list, err := json.Marshal(found)
	if err != nil {
		return nil, err
	}
	meta[FindingsMetaKey] = list
	if m["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// findingsText is the audit's form of the findings (IN-2): a JSON array,
// "" for none.
func findingsText(found []inspect.Reported) string {
	if len(found) == 0 {
		return ""
	}
	b, err := json.Marshal(found)
	if err != nil {
		return ""
	}
	return string(b)
}

// inspectTelemetry puts the findings on the call's span (IN-2).
func inspectTelemetry(ctx context.Context, found []inspect.Reported) {
	types, dets, paths, acts := make([]string, len(found)), make([]string, len(found)), make([]string, len(found)), make([]string, len(found))
	for i, f := range found {
		types[i], dets[i], paths[i], acts[i] = string(f.Type), f.Detector, f.In+":"+f.Path, string(f.Action)
	}
	telemetry.Findings(ctx, types, dets, paths, acts)
}
