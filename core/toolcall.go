package core

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/toolgate/toolgate/core/canonjson"
	"github.com/toolgate/toolgate/core/schema"
)

// ToolCall is one tools/call, parsed once by the transport and handed down
// every step that follows: the tool resolved once (one registry lookup, the
// actor's gates applied), the arguments as the client sent them, the tool's
// own arguments with the confirm gate's fields split off once, their
// canonical form computed once and validation run once. Later steps read it
// and never decode the request again.
//
// A ToolCall belongs to one call; its methods are safe for the concurrent
// use a single call makes of it.
type ToolCall struct {
	Tool Tool
	// Raw is the arguments object as sent ({} when none was).
	Raw json.RawMessage
	// Args is Raw without "confirm" and "confirmToken" (CF-1); the same
	// bytes as Raw when neither was there.
	Args json.RawMessage
	// Confirm and Token are the confirm gate's fields.
	Confirm bool
	Token   string
	// ArgsErr says the gate's fields were malformed (not a boolean, not a
	// string); the call is refused before validation.
	ArgsErr error
	// Issued is the confirm token a preview answer of this call carries, set
	// by the gate; the audit records its id.
	Issued string
	// RequestID is the JSON-RPC id of the request that carried the call, as
	// written (SV-7).
	RequestID string
	// Rule is the id of the policy rule that decided the call ("default"
	// when none matched; empty without a policy), for the audit (PO-4).
	Rule string
	// NeedsOperator: a policy rule sends the call to an operator before it
	// runs, as `approval: operator` does (PO-1, CF-5).
	NeedsOperator bool
	// Via names the meta-tool the call came through ("call_tool", DS-2);
	// empty for a direct call. Every gate reads the inner call alike.
	Via string

	schema *schema.Schema

	validOnce sync.Once
	validErr  error
	canonOnce sync.Once
	canon     []byte
	canonErr  error
}

// Resolve finds name for actor, under the endpoint's allow-list (nil allows
// all), with every gate of SV-4: enabled, policy, the custom check (review).
// It answers with the error kinds Invoke does, so a call off the actor's list
// reads exactly like an unknown tool (SV-5). raw is the arguments object.
func (r *Registry) Resolve(ctx context.Context, actor Actor, allow []string, name string, raw json.RawMessage) (*ToolCall, error) {
	if len(allow) > 0 && !MatchAny(allow, name) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	// e is never mutated after it is stored, so it is safe to use unlocked.
	if err := r.usable(ctx, actor, &e.tool); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	return &ToolCall{Tool: e.tool, Raw: raw, Args: raw, schema: e.schema}, nil
}

// Validate checks the tool's own arguments against its schema, once
// (*schema.ValidationError with JSON pointers).
func (c *ToolCall) Validate() error {
	c.validOnce.Do(func() {
		args := c.Args
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		c.validErr = c.schema.Validate(args)
	})
	return c.validErr
}

// Canonical is the canonical form of the tool's own arguments, computed
// once: what confirm tokens bind and audit hashes cover.
func (c *ToolCall) Canonical() ([]byte, error) {
	c.canonOnce.Do(func() { c.canon, c.canonErr = canonjson.CanonicalJSON(c.Args) })
	return c.canon, c.canonErr
}

// Run validates the call (once) and runs the tool's handler with the call in
// its context. The gates were applied by Resolve, moments before.
func (r *Registry) Run(ctx context.Context, actor Actor, c *ToolCall) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	call, _ := CallFromContext(ctx)
	call.Actor = actor
	call.Tool = c.Tool.Name
	call.Source = c.Tool.Source
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return c.Tool.Handler(WithCall(ctx, call), args)
}
