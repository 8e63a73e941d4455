package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/toolgate/toolgate/core/schema"
)

var (
	// ErrUnknownTool: no tool of that name is registered.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrToolDisabled: the tool is registered but switched off.
	ErrToolDisabled = errors.New("tool is disabled")
	// ErrNotPermitted: the role policy or a custom check refused the actor.
	ErrNotPermitted = errors.New("not permitted")
	// ErrNameTaken: another claimant holds the name (IM-13). Register returns
	// it inside a *CollisionError.
	ErrNameTaken = errors.New("tool name already registered")
	// ErrNotOwner: only the claimant that registered a name may unregister or
	// replace it (IM-21).
	ErrNotOwner = errors.New("tool registered by another owner")
	// ErrInvalidTool: a definition the registry cannot serve (bad name, kind,
	// missing handler).
	ErrInvalidTool = errors.New("invalid tool")
)

// Claimant is one party to a name: an upstream and its remote name, or the
// gateway itself.
type Claimant struct {
	// Source is the upstream name, or NativeSource for a native tool.
	Source     string `json:"source"`
	RemoteName string `json:"remoteName,omitempty"`
}

func ClaimantOf(t *Tool) Claimant {
	if t.Native() {
		return Claimant{Source: NativeSource}
	}
	return Claimant{Source: t.Source, RemoteName: t.RemoteName}
}

// Collision records a refused claim: who kept the name and who was refused.
type Collision struct {
	Name    string   `json:"name"`
	Kept    Claimant `json:"kept"`
	Refused Claimant `json:"refused"`
}

// CollisionError is returned by Register when the name is held by another
// claimant. It wraps ErrNameTaken.
type CollisionError struct{ Collision Collision }

// Policy decides whether an actor may use a tool. The tool's Source is
// visible, so a policy can match on provenance (IM-16).
type Policy interface {
	Allows(actor Actor, tool *Tool) bool
}

// RolePolicy is the default policy: a tool without roles is open to every
// actor; otherwise the actor needs at least one of the tool's roles.
type RolePolicy struct{}

// RegistryOptions configures a Registry; the zero value is usable.
type RegistryOptions struct {
	// Policy defaults to RolePolicy.
	Policy Policy
	// CanUse is an extra check after Policy; nil allows.
	CanUse func(ctx context.Context, actor Actor, tool *Tool) bool
	// Bus receives registry events; nil creates a private one.
	Bus *Bus
	// Fingerprint, if set, is computed once when an imported tool is
	// registered and kept in Tool.Fingerprint, so review decides each call
	// by comparing two strings rather than hashing the definition (RV-1).
	Fingerprint func(t *Tool) string
}

// Registry is the set of tools the gateway serves, keyed by name only.
// All methods are safe for concurrent use; reads (List, Get, Invoke) take a
// shared lock and never wait for a handler.
type Registry struct {
	policy Policy
	canUse func(ctx context.Context, actor Actor, tool *Tool) bool
	fp     func(t *Tool) string
	bus    *Bus

	mu         sync.RWMutex
	tools      map[string]*entry
	collisions []Collision
}

type entry struct {
	tool   Tool
	schema *schema.Schema
}

// NewRegistry returns an empty registry. opts may be nil.
func NewRegistry(opts *RegistryOptions) *Registry {
	if opts == nil {
		opts = &RegistryOptions{}
	}
	r := &Registry{policy: opts.Policy, canUse: opts.CanUse, fp: opts.Fingerprint, bus: opts.Bus, tools: make(map[string]*entry)}
	if r.policy == nil {
		r.policy = RolePolicy{}
	}
	if r.bus == nil {
		r.bus = NewBus()
	}
	r.bus.AddSnapshotPart(r.fillSnapshot)
	return r
}

func checkTool(t *Tool) error {
	switch {
	case !ValidToolName(t.Name):
		return fmt.Errorf("%w: name %q breaks ^[a-zA-Z0-9_-]{1,64}$", ErrInvalidTool, t.Name)
	case !t.Kind.Valid():
		return fmt.Errorf("%w: tool %q has kind %q, want read or action", ErrInvalidTool, t.Name, t.Kind)
	case t.Handler == nil:
		return fmt.Errorf("%w: tool %q has no handler", ErrInvalidTool, t.Name)
	}
	return nil
}

func (c Claimant) String() string {
	if c.RemoteName == "" {
		return c.Source
	}
	return c.Source + "/" + c.RemoteName
}

func (e *CollisionError) Error() string {
	c := e.Collision
	return fmt.Sprintf("tool name %q is held by %s; %s was refused", c.Name, c.Kept, c.Refused)
}

func (e *CollisionError) Unwrap() error { return ErrNameTaken }

// Allows implements Policy.
func (RolePolicy) Allows(actor Actor, tool *Tool) bool {
	if len(tool.Roles) == 0 {
		return true
	}
	return slices.ContainsFunc(tool.Roles, actor.HasRole)
}

// Bus returns the bus the registry publishes on.
func (r *Registry) Bus() *Bus { return r.bus }

// Register claims t.Name for t's source. The first claimant keeps a name: a
// different claimant gets a *CollisionError (also recorded and published),
// and the live handler is untouched. The same source registering the name
// again replaces its own definition, which is how a refresh updates a tool
// without colliding with itself (IM-21).
func (r *Registry) Register(t Tool) error {
	if err := checkTool(&t); err != nil {
		return err
	}
	compiled, err := schema.CompileSchema(t.InputSchema)
	if err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, err)
	}
	return r.RegisterCompiled(t, compiled)
}

// sameInfo reports whether two views of a tool are the same definition,
// byte for byte, fingerprint included.
func sameInfo(a, b *ToolInfo) bool {
	return a.Fingerprint == b.Fingerprint && sameDefinition(a, b)
}

// sameDefinition is sameInfo without the fingerprint, which is derived
// from the rest.
func sameDefinition(a, b *ToolInfo) bool {
	return a.Name == b.Name && a.Source == b.Source && a.RemoteName == b.RemoteName && a.Kind == b.Kind &&
		a.Description == b.Description && a.Title == b.Title && a.Disabled == b.Disabled &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		bytes.Equal(a.Annotations, b.Annotations) && bytes.Equal(a.Icons, b.Icons) &&
		bytes.Equal(a.Execution, b.Execution) && bytes.Equal(a.Meta, b.Meta) && slices.Equal(a.Roles, b.Roles)
}

// fingerprint is t's fingerprint: the one its current entry already has
// when a refresh registers it unchanged, else computed.
func (r *Registry) fingerprint(t *Tool) string {
	r.mu.RLock()
	old, ok := r.tools[t.Name]
	r.mu.RUnlock()
	if ok && old.tool.Fingerprint != "" {
		a, b := old.tool.Info(), t.Info()
		if sameDefinition(&a, &b) {
			return old.tool.Fingerprint
		}
	}
	return r.fp(t)
}

// RegisterCompiled stores t with its compiled schema; t has passed
// CheckTool. The importer compiles while listing, in parallel.
func (r *Registry) RegisterCompiled(t Tool, compiled *schema.Schema) error {
	t.InputSchema = compiled.Raw()
	if r.fp != nil && t.Source != "" {
		t.Fingerprint = r.fingerprint(&t)
	}
	t.Roles = slices.Clone(t.Roles)

	var result error
	r.bus.Commit(func() []EventData {
		r.mu.Lock()
		defer r.mu.Unlock()
		old, taken := r.tools[t.Name]
		switch {
		case !taken:
			r.tools[t.Name] = &entry{tool: t, schema: compiled}
			return []EventData{ToolRegistered{Tool: t.Info()}}
		case old.tool.Source == t.Source && old.tool.RemoteName == t.RemoteName:
			r.tools[t.Name] = &entry{tool: t, schema: compiled}
			oldInfo, newInfo := old.tool.Info(), t.Info()
			if sameInfo(&oldInfo, &newInfo) {
				// A refresh re-registers every tool it lists: one that did
				// not change is no change to announce (IM-25).
				return nil
			}
			return []EventData{ToolUpdated{Old: oldInfo, New: newInfo}}
		default:
			c := Collision{Name: t.Name, Kept: ClaimantOf(&old.tool), Refused: ClaimantOf(&t)}
			result = &CollisionError{Collision: c}
			if slices.Contains(r.collisions, c) {
				return nil
			}
			r.collisions = append(r.collisions, c)
			return []EventData{CollisionRecorded{Collision: c}}
		}
	})
	return result
}

// Unregister frees name. Only the source that registered it may (IM-21):
// source is the upstream name, or "" for native tools.
func (r *Registry) Unregister(source, name string) error {
	var result error
	r.bus.Commit(func() []EventData {
		r.mu.Lock()
		defer r.mu.Unlock()
		e, ok := r.tools[name]
		switch {
		case !ok:
			result = fmt.Errorf("%w: %q", ErrUnknownTool, name)
			return nil
		case e.tool.Source != source:
			result = fmt.Errorf("%w: %q belongs to %s", ErrNotOwner, name, ClaimantOf(&e.tool).Source)
			return nil
		}
		delete(r.tools, name)
		return []EventData{ToolUnregistered{Tool: e.tool.Info()}}
	})
	return result
}

// SetDisabled switches a tool off or on.
func (r *Registry) SetDisabled(name string, disabled bool) error {
	var result error
	r.bus.Commit(func() []EventData {
		r.mu.Lock()
		defer r.mu.Unlock()
		e, ok := r.tools[name]
		if !ok {
			result = fmt.Errorf("%w: %q", ErrUnknownTool, name)
			return nil
		}
		if e.tool.Disabled == disabled {
			return nil
		}
		old := e.tool.Info()
		updated := *e
		updated.tool.Disabled = disabled
		r.tools[name] = &updated
		return []EventData{ToolUpdated{Old: old, New: updated.tool.Info()}}
	})
	return result
}

// ForgetCollisions drops the recorded collisions in which source took part,
// before that source is imported again.
func (r *Registry) ForgetCollisions(source string) {
	r.bus.Commit(func() []EventData {
		r.mu.Lock()
		defer r.mu.Unlock()
		n := len(r.collisions)
		r.collisions = slices.DeleteFunc(r.collisions, func(c Collision) bool {
			return c.Kept.Source == source || c.Refused.Source == source
		})
		if len(r.collisions) == n {
			return nil
		}
		return []EventData{CollisionsForgotten{Source: source}}
	})
}

// RecordCollision records a refused claim the registry did not see, such as
// two tools of one upstream whose names reshape alike (IM-13): it is
// listed and published like one the registry refused itself.
func (r *Registry) RecordCollision(c Collision) {
	r.bus.Commit(func() []EventData {
		r.mu.Lock()
		defer r.mu.Unlock()
		if slices.Contains(r.collisions, c) {
			return nil
		}
		r.collisions = append(r.collisions, c)
		return []EventData{CollisionRecorded{Collision: c}}
	})
}

// Collisions returns the recorded collisions in the order they happened.
func (r *Registry) Collisions() []Collision {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.collisions)
}

// Get returns the tool registered under name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok {
		return Tool{}, false
	}
	return e.tool, true
}

// notHeld returns the tools whose names source does not hold, under one
// read lock.
func (r *Registry) NotHeld(source string, tools []Tool) []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Tool
	for _, t := range tools {
		if e, ok := r.tools[t.Name]; !ok || e.tool.Source != source {
			out = append(out, t)
		}
	}
	return out
}

// Names returns every registered name that source owns ("" for native), sorted.
func (r *Registry) Names(source string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var names []string
	for name, e := range r.tools {
		if e.tool.Source == source {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// List returns what actor may call, sorted by name: the tools matching the
// allow-list (nil or empty allows all), then enabled, then the policy and
// the custom check (SV-4 up to review state).
func (r *Registry) List(ctx context.Context, actor Actor, allow []string) []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Tool
	for name, e := range r.tools {
		if len(allow) > 0 && !MatchAny(allow, name) {
			continue
		}
		if r.usable(ctx, actor, &e.tool) != nil {
			continue
		}
		out = append(out, e.tool)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Allowed reports whether actor may call name under allow, answering with
// the same error kinds as Invoke. A transport uses it to answer a call off
// the actor's list exactly like an unknown tool (SV-5).
func (r *Registry) Allowed(ctx context.Context, actor Actor, allow []string, name string) error {
	if len(allow) > 0 && !MatchAny(allow, name) {
		return fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	return r.usable(ctx, actor, &e.tool)
}

func (r *Registry) usable(ctx context.Context, actor Actor, t *Tool) error {
	switch {
	case t.Disabled:
		return fmt.Errorf("%w: %q", ErrToolDisabled, t.Name)
	case !r.policy.Allows(actor, t):
		return fmt.Errorf("%w: actor %q may not use %q", ErrNotPermitted, actor.ID, t.Name)
	case r.canUse != nil && !r.canUse(ctx, actor, t):
		return fmt.Errorf("%w: actor %q may not use %q", ErrNotPermitted, actor.ID, t.Name)
	}
	return nil
}

// Invoke runs one call: unknown names fail with ErrUnknownTool; then the
// enabled flag, the policy and the custom check are checked (the list a
// client saw may be stale); then args are validated against the tool's schema
// (*ValidationError with JSON pointers); then the handler runs with the call
// in its context. Transports that parse a call once use Resolve and Run.
func (r *Registry) Invoke(ctx context.Context, actor Actor, name string, args json.RawMessage) (Result, error) {
	c, err := r.Resolve(ctx, actor, nil, name, args)
	if err != nil {
		return Result{}, err
	}
	return r.Run(ctx, actor, c)
}

// Check runs every gate of Invoke except the handler, and returns the tool.
func (r *Registry) Check(ctx context.Context, actor Actor, name string, args json.RawMessage) (Tool, error) {
	c, err := r.Resolve(ctx, actor, nil, name, args)
	if err != nil {
		return Tool{}, err
	}
	if err := c.Validate(); err != nil {
		return Tool{}, err
	}
	return c.Tool, nil
}

func (r *Registry) fillSnapshot(s *Snapshot) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s.Tools = make([]ToolInfo, 0, len(r.tools))
	for _, e := range r.tools {
		s.Tools = append(s.Tools, e.tool.Info())
	}
	sort.Slice(s.Tools, func(i, j int) bool { return s.Tools[i].Name < s.Tools[j].Name })
	s.Collisions = slices.Clone(r.collisions)
}
