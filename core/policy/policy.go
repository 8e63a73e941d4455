// Package policy decides, per call, whether an actor may run a tool with
// the arguments it sent: rules in CEL over actor, tool, args, endpoint,
// client and now, each with an effect (PO-1). It is compiled and
// type-checked once per config, evaluated per call with a cost limit, and
// answers tools/list with what a rule denies whatever the arguments (PO-2).
//
// A *Policy is immutable once built; a reload builds another and swaps it
// in, so Decide and Hides are safe for concurrent use without locks.
package policy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
)

// Effect is what a matching rule does to a call (PO-1).
type Effect string

const (
	// Allow lets the call through.
	Allow Effect = "allow"
	// Approve sends the call to an operator first, reads included (CF-5).
	Approve Effect = "approve"
	// Deny refuses the call with the rule's reason.
	Deny Effect = "deny"
)

// rank orders effects: deny overrides approve overrides allow.
func (e Effect) rank() int {
	switch e {
	case Deny:
		return 3
	case Approve:
		return 2
	case Allow:
		return 1
	}
	return 0
}

// Valid reports whether e is an effect a rule may have.
func (e Effect) Valid() bool { return e.rank() > 0 }

// DefaultRule is the Decision.Rule of a call no rule matched.
const DefaultRule = "default"

const (
	// CostLimit bounds one rule's evaluation (cel-go's cost units, about
	// one per operation): past it the rule errs, and so denies, instead of
	// stalling the call.
	CostLimit = 100_000
	// assumedInputSize is the size a rule's cost estimate assumes for
	// every list, map and string it reads from its inputs. A rule whose
	// estimate at that size passes CostLimit is refused at load: nested
	// loops over the arguments are, one loop is not.
	assumedInputSize = 1000
	// evalDeadline bounds a rule with a loop (a comprehension) as well as
	// the cost limit: cel-go's cost tracking slows down with the length of
	// a loop, so a long one could take seconds to reach the limit.
	evalDeadline = 100 * time.Millisecond
)

// Rule is one configured rule. Path is its key path in the config
// (`policies.rules[1]`), for errors.
type Rule struct {
	ID     string `json:"id"`
	When   string `json:"when"`
	Effect Effect `json:"effect"`
	Reason string `json:"reason,omitempty"`
	Path   string `json:"-"`
}

// Layer is one list of rules with its default: the global policies, then
// an endpoint's (which run after the global ones). An empty Default
// inherits the layer before's.
type Layer struct {
	// Path is the layer's key path (`policies`, `endpoints[0].policies`).
	Path    string
	Default Effect
	Rules   []Rule
}

// Error is a rule that cannot be used: Path names the key
// (`policies.rules[1].when`), Message says why, with the position in the
// expression.
type Error struct {
	Path    string
	Message string
}

func (e *Error) Error() string { return e.Path + ": " + e.Message }

// Policy is the compiled rule set of one endpoint.
type Policy struct {
	def   Effect
	rules []*rule
	// slots is how many inputs the rules' guards read (guards.slots).
	slots int
	// evalAll evaluates the rules a call's tool excludes as well, for the
	// tests that hold the skipping to the evaluation's decisions.
	evalAll bool
}

// settled is what r's guard says of c's call (unknown when every rule is
// to be evaluated): no and yes need no evaluation.
func (p *Policy) settled(r *rule, c *guardIn) tri {
	switch {
	case p.evalAll:
		return unknown
	case !r.filter.holds(c.in):
		return no
	case r.guard == nil:
		return unknown
	}
	return r.guard(c)
}

type rule struct {
	Rule
	// prg evaluates with every input known; partial with args unknown,
	// for tools/list.
	prg, partial cel.Program
	// usesArgs: the rule reads args; one that does not decides a listing
	// exactly as it decides a call.
	usesArgs bool
	// loops: the rule has a comprehension (see evalDeadline).
	loops bool
	// filter is what a call must satisfy for the rule to hold (see dnf),
	// checked first; guard settles the rule on a call's plain values where
	// it can (see guard); nil when it never can.
	filter dnf
	guard  guard
}

// eval runs prg on act, under evalDeadline when the rule loops.
func (r *rule) eval(prg cel.Program, act cel.Activation) (ref.Val, error) {
	if !r.loops {
		out, _, err := prg.Eval(act)
		return out, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), evalDeadline)
	defer cancel()
	out, _, err := prg.ContextEval(ctx, act)
	return out, err
}

// The variables' types, as CEL sees them (field names from the cel tags).
type (
	ActorVars struct {
		ID     string     `cel:"id"`
		Roles  StringList `cel:"roles"`
		Tenant string     `cel:"tenant"`
		Claims DynMap     `cel:"claims"`
		cache  *fieldCache
	}
	ToolVars struct {
		Name        string `cel:"name"`
		Source      string `cel:"source"`
		RemoteName  string `cel:"remoteName"`
		Kind        string `cel:"kind"`
		Annotations DynMap `cel:"annotations"`
		// Labels are the tool's flow labels (IN-3): configured for its
		// upstream and by glob, and open-world, read-only, destructive from
		// its annotations.
		Labels StringList `cel:"labels"`
		cache  *fieldCache
	}
	// SessionVars is what the calling session gathered (IN-3): the labels
	// of the tools it called, untrusted and private from what it read.
	SessionVars struct {
		Labels StringList `cel:"labels"`
		cache  *fieldCache
	}
	EndpointVars struct {
		Path  string `cel:"path"`
		Name  string `cel:"name"`
		cache *fieldCache
	}
	ClientVars struct {
		Name    string `cel:"name"`
		Version string `cel:"version"`
		// Era is "legacy" or "modern" (the 2026-07-28 revision).
		Era   string `cel:"era"`
		cache *fieldCache
	}
)

// DynMap is a JSON object as CEL's map(string, dyn): the native types
// provider has no mapping for Go's map[string]any fields, but takes a field
// that is a CEL value of its own.
type DynMap struct{ traits.Mapper }

var mapStringDyn = types.NewMapType(types.StringType, types.DynType)

// StringList is a list(string) converted for CEL once per decision, not
// on every read of the field.
type StringList struct{ traits.Lister }

var listString = types.NewListType(types.StringType)

// Type implements ref.Val; it is asked of the zero value as well.
func (StringList) Type() ref.Type { return listString }

// Type implements ref.Val; it is asked of the zero value as well.
func (DynMap) Type() ref.Type { return mapStringDyn }

var (
	envOnce sync.Once
	celEnv  *cel.Env
	envErr  error
)

// env is the one CEL environment every rule compiles in.
func env() (*cel.Env, error) {
	envOnce.Do(func() {
		celEnv, envErr = cel.NewEnv(
			ext.NativeTypes(reflect.TypeFor[ActorVars](), reflect.TypeFor[ToolVars](),
				reflect.TypeFor[EndpointVars](), reflect.TypeFor[ClientVars](), reflect.TypeFor[SessionVars](), ext.ParseStructTags(true)),
			cel.Variable("actor", cel.ObjectType("policy.ActorVars")),
			cel.Variable("tool", cel.ObjectType("policy.ToolVars")),
			cel.Variable("endpoint", cel.ObjectType("policy.EndpointVars")),
			cel.Variable("client", cel.ObjectType("policy.ClientVars")),
			cel.Variable("session", cel.ObjectType("policy.SessionVars")),
			cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("now", cel.TimestampType),
			ext.Strings(),
			cacheFields("policy.ActorVars", "policy.ToolVars", "policy.EndpointVars", "policy.ClientVars", "policy.SessionVars"),
		)
	})
	return celEnv, envErr
}

// Check compiles and type-checks one `when` expression: it must be a
// boolean, name only the declared variables and fields, and cost at most
// CostLimit at the assumed input size. The error says where, as
// "line L, column C: …"; it carries no config path (New's errors do).
func Check(when string) error {
	_, err := compile(when)
	return err
}

func compile(when string) (*cel.Ast, error) {
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("the rule environment: %w", err)
	}
	if strings.TrimSpace(when) == "" {
		return nil, errors.New("empty expression")
	}
	ast, iss := e.Compile(when)
	if iss != nil && iss.Err() != nil {
		return nil, issuesError(iss)
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("the expression is a %s, not a bool", t)
	}
	est, err := e.EstimateCost(ast, sizeEstimator{})
	if err != nil {
		return nil, fmt.Errorf("estimating its cost: %w", err)
	}
	if est.Max > CostLimit {
		return nil, fmt.Errorf("the expression may cost %s at inputs of %d elements, more than the limit of %d; nested loops over inputs cannot be bounded",
			costText(est.Max), assumedInputSize, CostLimit)
	}
	return ast, nil
}

func costText(n uint64) string {
	if n == ^uint64(0) {
		return "without bound"
	}
	return fmt.Sprint(n)
}

// issuesError is the compiler's issues, one per line, each with its
// position and without the source line the compiler quotes.
func issuesError(iss *cel.Issues) error {
	var lines []string
	for _, e := range iss.Errors() {
		loc := e.Location
		if loc != nil && loc.Line() > 0 {
			lines = append(lines, fmt.Sprintf("line %d, column %d: %s", loc.Line(), loc.Column()+1, e.Message))
		} else {
			lines = append(lines, e.Message)
		}
	}
	return errors.New(strings.Join(lines, "; "))
}

// sizeEstimator assumes assumedInputSize for every size CEL cannot see.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: assumedInputSize}
}

func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// New compiles the layers into one endpoint's policy: the rules of every
// layer in order, and the last default set (allow when none is). Every
// problem is reported, each as an *Error with its key path.
func New(layers ...Layer) (*Policy, error) {
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("the rule environment: %w", err)
	}
	p := &Policy{def: Allow}
	var gs guards
	var errs []error
	for _, l := range layers {
		switch {
		case l.Default == "":
		case l.Default == Allow || l.Default == Deny:
			p.def = l.Default
		default:
			errs = append(errs, &Error{Path: l.Path + ".default", Message: fmt.Sprintf("%q is not allow or deny", l.Default)})
		}
		for i, r := range l.Rules {
			path := r.Path
			if path == "" {
				path = fmt.Sprintf("%s.rules[%d]", l.Path, i)
			}
			if !r.Effect.Valid() {
				errs = append(errs, &Error{Path: path + ".effect", Message: fmt.Sprintf("%q is not deny, approve or allow", r.Effect)})
				continue
			}
			ast, err := compile(r.When)
			if err != nil {
				errs = append(errs, &Error{Path: path + ".when", Message: err.Error()})
				continue
			}
			// Without a loop a rule's work is linear in its inputs, which
			// the request size bounds: only loops pay for cost tracking.
			// OptOptimize folds constant operations and makes constant
			// lists of `in` sets, once at load instead of on every call.
			opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
			loops := hasLoop(ast)
			if loops {
				opts = append(opts, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
			}
			prg, err := e.Program(ast, opts...)
			if err != nil {
				errs = append(errs, &Error{Path: path + ".when", Message: err.Error()})
				continue
			}
			partial, err := e.Program(ast, append(opts, cel.EvalOptions(cel.OptPartialEval))...)
			if err != nil {
				errs = append(errs, &Error{Path: path + ".when", Message: err.Error()})
				continue
			}
			r.Path = path
			p.rules = append(p.rules, &rule{Rule: r, prg: prg, partial: partial, usesArgs: readsArgs(ast), loops: loops, filter: dnfOf(ast), guard: gs.of(ast)})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	p.slots = len(gs.slots)
	return p, nil
}

// readsArgs reports whether the expression names args at all.
func readsArgs(ast *cel.Ast) bool {
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == "args" {
			return true
		}
	}
	return false
}

// hasLoop reports whether the expression has a comprehension.
func hasLoop(ast *cel.Ast) bool {
	found := false
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.ComprehensionKind {
			found = true
		}
	}))
	return found
}

// Default is the effect of a call no rule matches.
func (p *Policy) Default() Effect { return p.def }

// Rules are the compiled rules in evaluation order.
func (p *Policy) Rules() []Rule {
	out := make([]Rule, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.Rule
	}
	return out
}

// Empty reports whether the policy can refuse nothing: no rule and an
// allowing default. The gateway then skips building a call's inputs.
func (p *Policy) Empty() bool { return p == nil || len(p.rules) == 0 && p.def == Allow }

// Decision is what the policy made of one call.
type Decision struct {
	Effect Effect
	// Rule is the deciding rule's id, or DefaultRule.
	Rule string
	// Reason is the deciding rule's reason; for a default deny or an
	// evaluation error, the gateway's own.
	Reason string
	// Err is the evaluation error that denied the call, for the log; it
	// may quote parts of the inputs, so it is never shown to the client.
	Err error
}

// DeniedError is a call the policy refused; Reason is what the client
// reads (never the rule's expression).
type DeniedError struct {
	Rule   string
	Reason string
}

func (e *DeniedError) Error() string { return e.Reason }

// Err is the refusal of a deny decision, nil for any other.
func (d Decision) Refusal() error {
	if d.Effect != Deny {
		return nil
	}
	return &DeniedError{Rule: d.Rule, Reason: d.Reason}
}

// Reasons the gateway gives itself.
const (
	ReasonDefault     = "not permitted by this endpoint's policy"
	reasonNoReason    = "not permitted by policy rule %s"
	reasonEvalFailure = "not permitted: policy rule %s could not be evaluated for this call"
)

func denyReason(r *rule) string {
	if r.Reason != "" {
		return r.Reason
	}
	return fmt.Sprintf(reasonNoReason, r.ID)
}

// Decide evaluates every rule for one call: deny overrides approve
// overrides allow; an error or a non-boolean result denies; no match is the
// default. A deny ends the evaluation: nothing overrides it.
func (p *Policy) Decide(in *Input) Decision {
	if p == nil {
		return Decision{Effect: Allow, Rule: DefaultRule}
	}
	act := in.activation()
	c := getGuardIn(in, false, p.slots)
	defer putGuardIn(c)
	var best *rule
	for _, r := range p.rules {
		var matched bool
		var err error
		switch p.settled(r, c) {
		case no:
			continue
		case yes:
			matched = true
		default:
			matched, err = result(r.eval(r.prg, act))
		}
		switch {
		case err != nil:
			return Decision{Effect: Deny, Rule: r.ID, Reason: fmt.Sprintf(reasonEvalFailure, r.ID), Err: err}
		case !matched:
			continue
		case r.Effect == Deny:
			return Decision{Effect: Deny, Rule: r.ID, Reason: denyReason(r)}
		case best == nil || r.Effect.rank() > best.Effect.rank():
			best = r
		}
	}
	if best != nil {
		return Decision{Effect: best.Effect, Rule: best.ID, Reason: best.Reason}
	}
	d := Decision{Effect: p.def, Rule: DefaultRule}
	if p.def == Deny {
		d.Reason = ReasonDefault
	}
	return d
}

// result reads a rule's outcome: matched, or an error for anything but a
// boolean.
func result(out ref.Val, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the rule gave a %s, not a bool", out.Type().TypeName())
	}
	return b, nil
}

// Hides reports whether the policy denies the tool to the actor whatever
// the arguments (PO-2): evaluated with args unknown, some deny rule holds
// (or some rule fails) regardless, or the default denies and no allowing
// rule can hold. in.Args is ignored.
func (p *Policy) Hides(in *Input) bool {
	if p.Empty() {
		return false
	}
	act := in.activation()
	c := getGuardIn(in, true, p.slots)
	defer putGuardIn(c)
	var partial cel.Activation
	mayPass := p.def != Deny
	for _, r := range p.rules {
		switch p.settled(r, c) {
		case no:
			continue
		case yes:
			if r.Effect == Deny {
				return true
			}
			mayPass = true
			continue
		}
		var out ref.Val
		var err error
		if r.usesArgs {
			if partial == nil {
				if partial, err = cel.PartialVars(act, cel.AttributePattern("args")); err != nil {
					return false
				}
			}
			out, err = r.eval(r.partial, partial)
		} else {
			out, err = r.eval(r.prg, act)
		}
		if err == nil && types.IsUnknown(out) {
			// Depends on the arguments: an allowing rule may hold, a
			// denying one may not.
			if r.Effect != Deny {
				mayPass = true
			}
			continue
		}
		matched, err := result(out, err)
		switch {
		case err != nil:
			return true
		case matched && r.Effect == Deny:
			return true
		case matched:
			mayPass = true
		}
	}
	return !mayPass
}
