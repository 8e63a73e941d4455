package core

import (
	"context"
	"encoding/json"
	"slices"
)

// Kind says whether a tool has side effects.
type Kind string

const (
	// KindRead tools have no side effects: served directly, retried on
	// transient failures.
	KindRead Kind = "read"
	// KindAction tools have side effects: served behind the confirm gate and
	// never re-issued on an ambiguous failure.
	KindAction Kind = "action"
)

// NativeSource is how a native tool's provenance is spelled where a word is
// needed (collision reports, tables). Tool.Source itself stays empty.
const NativeSource = "native"

// Actor is who is calling, derived from authentication.
type Actor struct {
	ID     string   `json:"id"`
	Roles  []string `json:"roles,omitempty"`
	Tenant string   `json:"tenant,omitempty"`
	// Claims are the verified credential's claims (a JWT's payload, an
	// introspection answer) or an API key's configured ones, for policy
	// rules on actor.claims (PO-1); never the token itself. Read-only: a
	// strategy may share the map between requests. Not serialised, so
	// nothing that stores or shows an actor carries them.
	Claims map[string]any `json:"-"`
}

// Result is a tool call's answer in MCP's CallToolResult shape. It is kept as
// JSON so an upstream's answer passes through byte-for-byte (IM-32).
type Result struct {
	// JSON is a CallToolResult object: content, structuredContent, isError, _meta.
	JSON json.RawMessage
	// IsError mirrors the isError field: the tool failed on its own merits.
	IsError bool
}

// TextResult is a successful result with one text block.
func TextResult(text string) Result { return textResult(text, false) }

// ErrorResult is an isError result with one text block, the shape a model can
// read and recover from (SV-6).
func ErrorResult(text string) Result { return textResult(text, true) }

func textResult(text string, isError bool) Result {
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	body, _ := json.Marshal(struct {
		Content []block `json:"content"`
		IsError bool    `json:"isError,omitempty"`
	}{[]block{{"text", text}}, isError})
	return Result{JSON: body, IsError: isError}
}

// Handler runs a tool with arguments that already passed the tool's schema.
// The call's actor and identifiers are in ctx (CallFromContext). A returned
// error is a failure to run; a Result with IsError is the tool's own failure.
type Handler func(ctx context.Context, args json.RawMessage) (Result, error)

// Tool is one registry entry.
type Tool struct {
	// Name is the registry key, already within ^[a-zA-Z0-9_-]{1,64}$.
	Name string
	// Source is the upstream the tool was imported from; empty for native
	// tools (absent, not a name: IM-16).
	Source string
	// RemoteName is the tool's name on its upstream; empty for native tools.
	RemoteName string
	Kind       Kind
	// Description of an imported tool is third-party text.
	Description string
	// Title, Icons, Execution and Meta are the upstream's, passed through as
	// sent; absent (empty, nil) when it sent none (IM-17). Meta is its _meta
	// object, which the gateway serves merged with the tool's source.
	Title     string
	Icons     json.RawMessage
	Execution json.RawMessage
	Meta      json.RawMessage
	// InputSchema is kept verbatim and advertised as is (IM-17). Empty means
	// {"type":"object"}.
	InputSchema json.RawMessage
	// OutputSchema is the upstream's declared structuredContent schema,
	// verbatim; nil when it declared none. Results are passed on as they
	// come, so the gateway does not validate against it.
	OutputSchema json.RawMessage
	// Annotations are the upstream's MCP annotations, verbatim.
	Annotations json.RawMessage
	// Roles: an actor needs at least one of them; none means anyone.
	Roles []string
	// Disabled tools stay registered but are neither listed nor callable.
	Disabled bool
	Handler  Handler
	// Preview, for a native action tool, describes what a call would do
	// without doing it (CF-2); the confirm gate shows it. Imported tools get
	// a generated preview instead.
	Preview func(ctx context.Context, args json.RawMessage) (string, error)
	// Fingerprint is the review fingerprint of an imported tool's definition
	// (RV-1), computed once at registration when the registry is given a
	// way to; empty otherwise.
	Fingerprint string
}

// NativeAction is a side-effecting tool of the gateway itself, in the three
// steps the confirm gate needs (CF-2): Prepare checks the arguments and
// makes a plan, Preview says what the plan would do, Commit carries it out.
// Prepare runs again on the confirming call, so a plan is never kept
// between the two calls.
type NativeAction[P any] struct {
	Prepare func(ctx context.Context, args json.RawMessage) (P, error)
	Preview func(plan P) string
	Commit  func(ctx context.Context, plan P) (Result, error)
}

// ToolInfo is the handler-free view of a tool that snapshots and events carry.
type ToolInfo struct {
	Name         string          `json:"name"`
	Source       string          `json:"source,omitempty"`
	RemoteName   string          `json:"remoteName,omitempty"`
	Kind         Kind            `json:"kind"`
	Description  string          `json:"description"`
	Title        string          `json:"title,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Execution    json.RawMessage `json:"execution,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Roles        []string        `json:"roles,omitempty"`
	Disabled     bool            `json:"disabled,omitempty"`
	// Fingerprint is Tool.Fingerprint; views that show one compute it.
	Fingerprint string `json:"-"`
}

// Call describes one invocation to the handler and to policies (SV-7). The
// transport fills what it knows; the registry fills Actor and Tool.
type Call struct {
	Actor    Actor
	Tool     string
	Source   string
	Endpoint string
	Session  string
	// RequestID is the JSON-RPC id of the request that carried the call.
	RequestID string
	// CallID identifies this tool call in audit and events.
	CallID string
	// IdempotencyKey is minted once per call so an upstream that honours it
	// can recognise a repeat.
	IdempotencyKey string
	// Channel is how the call arrived ("mcp" for the MCP endpoints).
	Channel string
}

type callKey struct{}

// WithCall returns ctx carrying c.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(withConnectionNote(ctx), callKey{}, c)
}

// CallFromContext returns the call ctx carries, if any.
func CallFromContext(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool { return k == KindRead || k == KindAction }

// HasRole reports whether the actor holds role.
func (a Actor) HasRole(role string) bool { return slices.Contains(a.Roles, role) }

// Tool makes the registry entry of a native action.
func (a NativeAction[P]) Tool(name, description string, schema json.RawMessage, roles ...string) Tool {
	return Tool{
		Name: name, Kind: KindAction, Description: description, InputSchema: schema, Roles: roles,
		Handler: func(ctx context.Context, args json.RawMessage) (Result, error) {
			plan, err := a.Prepare(ctx, args)
			if err != nil {
				return Result{}, err
			}
			return a.Commit(ctx, plan)
		},
		Preview: func(ctx context.Context, args json.RawMessage) (string, error) {
			plan, err := a.Prepare(ctx, args)
			if err != nil {
				return "", err
			}
			return a.Preview(plan), nil
		},
	}
}

// Native reports whether the tool belongs to the gateway itself.
func (t *Tool) Native() bool { return t.Source == "" }

// Info returns the handler-free view of t.
func (t *Tool) Info() ToolInfo {
	return ToolInfo{
		Name:         t.Name,
		Source:       t.Source,
		RemoteName:   t.RemoteName,
		Kind:         t.Kind,
		Description:  t.Description,
		Title:        t.Title,
		Icons:        t.Icons,
		Execution:    t.Execution,
		Meta:         t.Meta,
		InputSchema:  t.InputSchema,
		OutputSchema: t.OutputSchema,
		Annotations:  t.Annotations,
		Roles:        slices.Clone(t.Roles),
		Disabled:     t.Disabled,
		Fingerprint:  t.Fingerprint,
	}
}
