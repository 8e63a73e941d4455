package policy

import (
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
)

// A dnf is a condition a rule cannot hold without, read from its
// expression at load: a disjunction of conjunctions of atoms, each a
// comparison of a string field every call has with a literal, checked
// with a few plain comparisons before the rule's guard (which settles
// more, at more cost): a rule whose dnf fails is false.
//
// It is read through the top-level && and || only: CEL's && is false
// when one side is false and || when both are, whatever the other sides
// give, errors and unknowns included, so a failed dnf means false, for a
// call and for a listing alike. Anything else gives no dnf.
type dnf [][]atom

// atom is one comparison: field == lit, or lit in actor.roles.
type atom struct {
	field guardField
	lit   string
}

// guardField is a field an atom compares.
type guardField uint8

const (
	toolName guardField = iota
	toolSource
	toolKind
	actorID
	actorTenant
	endpointPath
	actorRoles // membership: lit in actor.roles
)

var guardFieldNames = [...]string{"tool.name", "tool.source", "tool.kind", "actor.id", "actor.tenant", "endpoint.path", "actor.roles"}

// maxGuardTerms bounds a dnf's disjuncts, and so the work of checking
// it; a larger one is dropped (the rule is evaluated).
const maxGuardTerms = 16

// dnfOf reads e's dnf; nil when it has none.
func dnfOf(ast *cel.Ast) dnf {
	g, _ := dnfExpr(ast.NativeRep().Expr())
	return g
}

func dnfExpr(e celast.Expr) (dnf, bool) {
	if a, ok := atomOf(e); ok {
		return dnf{{a}}, true
	}
	if e.Kind() != celast.CallKind || e.AsCall().IsMemberFunction() {
		return nil, false
	}
	call := e.AsCall()
	switch call.FunctionName() {
	case "_&&_":
		// Any side's guard is necessary; two are combined when small.
		var out dnf
		found := false
		for _, arg := range call.Args() {
			g, ok := dnfExpr(arg)
			switch {
			case !ok:
			case !found:
				out, found = g, true
			case len(out)*len(g) <= maxGuardTerms:
				out = cross(out, g)
			case len(g) < len(out):
				out = g
			}
		}
		return out, found
	case "_||_":
		// Every side must be guarded: one that is not may hold.
		var out dnf
		for _, arg := range call.Args() {
			g, ok := dnfExpr(arg)
			if !ok || len(out)+len(g) > maxGuardTerms {
				return nil, false
			}
			out = append(out, g...)
		}
		return out, len(out) > 0
	}
	return nil, false
}

// cross is a && b in disjunctive form.
func cross(a, b dnf) dnf {
	out := make(dnf, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, append(slices.Clip(x), y...))
		}
	}
	return out
}

// guardFields are the fields an atom may compare with ==: string fields
// of the variables that every call has, which never err.
var guardFields = map[string]guardField{
	"tool.name": toolName, "tool.source": toolSource, "tool.kind": toolKind,
	"actor.id": actorID, "actor.tenant": actorTenant, "endpoint.path": endpointPath,
}

// atomOf matches `field == "lit"` (either way round) or `"lit" in
// actor.roles`.
func atomOf(e celast.Expr) (atom, bool) {
	if e.Kind() != celast.CallKind || e.AsCall().IsMemberFunction() {
		return atom{}, false
	}
	call := e.AsCall()
	args := call.Args()
	if len(args) != 2 {
		return atom{}, false
	}
	switch call.FunctionName() {
	case "_==_":
		for _, pair := range [][2]celast.Expr{{args[0], args[1]}, {args[1], args[0]}} {
			field, ok := selected(pair[0])
			lit, isLit := stringLiteral(pair[1])
			if f, known := guardFields[field]; ok && isLit && known {
				return atom{field: f, lit: lit}, true
			}
		}
	case "@in":
		field, ok := selected(args[1])
		lit, isLit := stringLiteral(args[0])
		if ok && isLit && field == "actor.roles" {
			return atom{field: actorRoles, lit: lit}, true
		}
	}
	return atom{}, false
}

// selected names a select of a variable's field, "actor.id".
func selected(e celast.Expr) (string, bool) {
	if e.Kind() != celast.SelectKind {
		return "", false
	}
	s := e.AsSelect()
	if s.IsTestOnly() || s.Operand().Kind() != celast.IdentKind {
		return "", false
	}
	return s.Operand().AsIdent() + "." + s.FieldName(), true
}

// holds reports whether in may satisfy the guard: some conjunction's
// atoms all hold. No guard always may.
func (g dnf) holds(in *Input) bool {
	if g == nil {
		return true
	}
	for _, conj := range g {
		all := true
		for _, a := range conj {
			if !a.holds(in) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// holds compares as the rule would see the field: a nil tool reads as
// empty fields.
func (a atom) holds(in *Input) bool {
	var v string
	switch a.field {
	case toolName, toolSource, toolKind:
		if t := in.Tool; t != nil {
			switch a.field {
			case toolName:
				v = t.Name
			case toolSource:
				v = t.Source
			default:
				v = string(t.Kind)
			}
		}
	case actorID:
		v = in.Actor.ID
	case actorTenant:
		v = in.Actor.Tenant
	case endpointPath:
		v = in.Endpoint.Path
	case actorRoles:
		return slices.Contains(in.Actor.Roles, a.lit)
	}
	return v == a.lit
}

// String shows the guard as CEL, for tests and debugging.
func (g dnf) String() string {
	if g == nil {
		return "true"
	}
	var ors []string
	for _, conj := range g {
		var ands []string
		for _, a := range conj {
			if a.field == actorRoles {
				ands = append(ands, `"`+a.lit+`" in actor.roles`)
			} else {
				ands = append(ands, guardFieldNames[a.field]+` == "`+a.lit+`"`)
			}
		}
		ors = append(ors, strings.Join(ands, " && "))
	}
	return strings.Join(ors, " || ")
}
