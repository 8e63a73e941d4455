package policy

import (
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// A guard is what a rule's expression gives on a call's plain Go values,
// read at load and checked before any CEL runs: yes or no when the
// comparisons it can read settle the expression the way CEL would, unknown
// otherwise. A rule whose guard says no is false, so is not evaluated; one
// whose guard says yes holds, so is not evaluated either. 50 rules on other
// tools, roles or argument values then cost a few comparisons each, not an
// evaluation.
//
// It reads the top-level &&, || and ! and, beneath them, comparisons of
// inputs with literals that cannot err: a string field of actor, tool,
// endpoint or client (==, !=, startsWith, endsWith, contains, size, in a
// list of literals); a literal in actor.roles, tool.labels or
// session.labels; an argument reached by field names (args.a.b,
// args["a"]) compared with a literal of its own JSON type (==, !=, <, <=,
// >, >=, startsWith, endsWith, contains, size, in a list of strings, a
// boolean alone) and has() of one. An argument that is absent or of
// another type makes its comparison unknown, since CEL may err there or
// compare across types; so does every argument in a listing (PO-2), where
// the arguments are not known. CEL's && is false when one side is false
// and true when all are true, || true when one side is, whatever the other
// sides give, errors and unknowns included, so a settled guard is the
// rule's value, for a call and for a listing alike. Anything else (a
// loop, a ternary, claims, now) is unknown: evaluated by CEL. A rule with
// a loop whose guard settles it skips the loop, and with it the cost
// limit the loop might have reached: the loop could not change the value.
type guard func(c *guardIn) tri

// tri is what a guard knows of a value.
type tri uint8

const (
	unknown tri = iota
	no
	yes
)

func triOf(b bool) tri {
	if b {
		return yes
	}
	return no
}

// guardIn is one call's inputs as the guards read them.
type guardIn struct {
	in *Input
	// listing: the arguments are unknown (Hides).
	listing bool
	// vals are the inputs read so far, by slot (guards.slots): 50 rules
	// on args.message read it once. buf holds them when few.
	vals []value
	buf  [4]value
}

// guards builds the guards of one rule set, and numbers the inputs they
// read so that a call reads each once.
type guards struct{ slots map[string]int }

func newGuardIn(in *Input, listing bool, slots int) *guardIn {
	c := &guardIn{in: in, listing: listing}
	if slots <= len(c.buf) {
		c.vals = c.buf[:slots]
	} else {
		c.vals = make([]value, slots)
	}
	return c
}

// guardIns keeps guardIn values between decisions: a decision's guards
// keep none of theirs once it returns.
var guardIns = sync.Pool{New: func() any { return new(guardIn) }}

// getGuardIn is newGuardIn from the pool; putGuardIn gives it back.
func getGuardIn(in *Input, listing bool, slots int) *guardIn {
	c := guardIns.Get().(*guardIn)
	c.in, c.listing = in, listing
	if slots <= len(c.buf) {
		c.vals = c.buf[:slots]
	} else {
		c.vals = make([]value, slots)
	}
	return c
}

func putGuardIn(c *guardIn) {
	clear(c.vals) // drops the values read, and marks every slot unread
	c.in, c.vals = nil, nil
	guardIns.Put(c)
}

// slot reads key through c.vals.
func (b *guards) slot(key string, read func(c *guardIn) value) reader {
	if b.slots == nil {
		b.slots = map[string]int{}
	}
	i, ok := b.slots[key]
	if !ok {
		i = len(b.slots)
		b.slots[key] = i
	}
	return func(c *guardIn) *value {
		v := &c.vals[i]
		if v.k == kUnread {
			*v = read(c)
		}
		return v
	}
}

// of reads e's guard; nil when it can settle nothing.
func (b *guards) of(ast *cel.Ast) guard { return b.expr(ast.NativeRep().Expr()) }

func (b *guards) expr(e celast.Expr) guard {
	switch e.Kind() {
	case celast.LiteralKind:
		if b, ok := e.AsLiteral().(types.Bool); ok {
			t := triOf(bool(b))
			return func(*guardIn) tri { return t }
		}
		return nil
	case celast.SelectKind:
		if e.AsSelect().IsTestOnly() {
			return b.has(e)
		}
		// A boolean argument read alone.
		rd := b.reader(e)
		if rd == nil {
			return nil
		}
		return func(c *guardIn) tri {
			if v := rd(c); v.k == kBool {
				return triOf(v.n != 0)
			}
			return unknown
		}
	case celast.CallKind:
	default:
		return nil
	}
	call := e.AsCall()
	args := call.Args()
	if call.IsMemberFunction() {
		return b.member(call)
	}
	switch call.FunctionName() {
	case "_&&_", "_||_":
		and := call.FunctionName() == "_&&_"
		// The settling value: one side no settles &&, one yes ||.
		settle, rest := no, yes
		if !and {
			settle, rest = yes, no
		}
		var gs []guard
		whole := true
		for _, a := range args {
			if g := b.expr(a); g != nil {
				gs = append(gs, g)
			} else {
				whole = false
			}
		}
		if len(gs) == 0 {
			return nil
		}
		return func(c *guardIn) tri {
			all := whole
			for _, g := range gs {
				switch g(c) {
				case settle:
					return settle
				case unknown:
					all = false
				}
			}
			if all {
				return rest
			}
			return unknown
		}
	case "!_":
		g := b.expr(args[0])
		if g == nil {
			return nil
		}
		return func(c *guardIn) tri {
			switch g(c) {
			case yes:
				return no
			case no:
				return yes
			}
			return unknown
		}
	case "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_":
		return b.compare(call.FunctionName(), args[0], args[1])
	case "@in":
		return b.in(args[0], args[1])
	}
	return nil
}

// member reads x.startsWith(lit), x.endsWith(lit), x.contains(lit) on a
// string.
func (b *guards) member(call celast.CallExpr) guard {
	args := call.Args()
	if len(args) != 1 {
		return nil
	}
	lit, ok := stringLiteral(args[0])
	if !ok {
		return nil
	}
	var f func(s, lit string) bool
	switch call.FunctionName() {
	case "startsWith":
		f = strings.HasPrefix
	case "endsWith":
		f = strings.HasSuffix
	case "contains":
		f = strings.Contains
	default:
		return nil
	}
	if sf := stringField(call.Target()); sf != nil {
		return func(c *guardIn) tri { return triOf(f(sf(c.in), lit)) }
	}
	rd := b.reader(call.Target())
	if rd == nil {
		return nil
	}
	return func(c *guardIn) tri {
		if v := rd(c); v.k == kString {
			return triOf(f(v.s, lit))
		}
		return unknown
	}
}

// compare reads a comparison of an input with a literal, either way
// round.
func (b *guards) compare(fn string, x, y celast.Expr) guard {
	for _, p := range [2][2]celast.Expr{{x, y}, {y, x}} {
		sf, lit := stringField(p[0]), literalOf(p[1])
		if sf == nil || lit.k != kString || fn != "_==_" && fn != "_!=_" {
			continue
		}
		if fn == "_==_" {
			return func(c *guardIn) tri { return triOf(sf(c.in) == lit.s) }
		}
		return func(c *guardIn) tri { return triOf(sf(c.in) != lit.s) }
	}
	rd, lit := b.reader(x), literalOf(y)
	if rd == nil || lit.k == kUnread {
		rd, lit = b.reader(y), literalOf(x)
		if rd == nil || lit.k == kUnread {
			return nil
		}
		fn = flipped[fn]
	}
	var want func(cmp int) bool
	switch fn {
	case "_==_":
		want = func(c int) bool { return c == 0 }
	case "_!=_":
		want = func(c int) bool { return c != 0 }
	case "_<_":
		want = func(c int) bool { return c < 0 }
	case "_<=_":
		want = func(c int) bool { return c <= 0 }
	case "_>_":
		want = func(c int) bool { return c > 0 }
	default:
		want = func(c int) bool { return c >= 0 }
	}
	ordered := fn != "_==_" && fn != "_!=_"
	if ordered && lit.k == kBool {
		return nil
	}
	return func(c *guardIn) tri {
		v := rd(c)
		if v.k != lit.k {
			// Another type: CEL errs, or compares numbers across types.
			return unknown
		}
		return triOf(want(v.compare(&lit)))
	}
}

// flipped is a comparison with its sides swapped.
var flipped = map[string]string{"_==_": "_==_", "_!=_": "_!=_", "_<_": "_>_", "_<=_": "_>=_", "_>_": "_<_", "_>=_": "_<=_"}

// in reads `lit in list` (a list field of strings) and `x in [lits]`
// (strings).
func (b *guards) in(elem, list celast.Expr) guard {
	if lit, ok := stringLiteral(elem); ok {
		if lf := listField(list); lf != nil {
			return func(c *guardIn) tri { return triOf(slices.Contains(lf(c.in), lit)) }
		}
		if rd := b.reader(list); rd != nil {
			return func(c *guardIn) tri {
				if v := rd(c); v.k == kStrings {
					for _, s := range v.ss {
						if s == lit {
							return yes
						}
					}
					return no
				}
				return unknown
			}
		}
		return nil
	}
	if list.Kind() == celast.ListKind {
		if sf := stringField(elem); sf != nil {
			var lits []string
			for _, e := range list.AsList().Elements() {
				s, ok := stringLiteral(e)
				if !ok || len(list.AsList().OptionalIndices()) > 0 {
					return nil
				}
				lits = append(lits, s)
			}
			return func(c *guardIn) tri { return triOf(slices.Contains(lits, sf(c.in))) }
		}
	}
	rd := b.reader(elem)
	if rd == nil || list.Kind() != celast.ListKind || len(list.AsList().OptionalIndices()) > 0 {
		return nil
	}
	var lits []string
	for _, e := range list.AsList().Elements() {
		s, ok := stringLiteral(e)
		if !ok {
			return nil
		}
		lits = append(lits, s)
	}
	return func(c *guardIn) tri {
		v := rd(c)
		if v.k != kString {
			return unknown
		}
		for _, s := range lits {
			if s == v.s {
				return yes
			}
		}
		return no
	}
}

// has reads has(args.a.b): settled when args.a is an object.
func (b *guards) has(e celast.Expr) guard {
	s := e.AsSelect()
	parent, ok := argsPath(s.Operand())
	if !ok {
		return nil
	}
	rd := b.slot("args\x00"+strings.Join(parent, "\x00"), func(c *guardIn) value { return c.arg(parent) })
	field := s.FieldName()
	return func(c *guardIn) tri {
		v := rd(c)
		if v.k != kMap {
			return unknown
		}
		_, ok := v.raw.(map[string]any)[field]
		return triOf(ok)
	}
}

// kind is the type of a value a guard reads.
type kind uint8

const (
	kUnread kind = iota // not read yet
	kNone               // unknown
	kString
	kInt
	kDouble
	kBool
	kStrings // a list field of strings
	kList    // an argument's array
	kMap     // an argument's object
	kNull
)

// value is one input or literal, without boxing a string.
type value struct {
	k kind
	s string
	// n is an int, a bool (1 is true) or a double's bits.
	n   int64
	ss  []string
	raw any
}

func (v *value) f() float64 { return math.Float64frombits(uint64(v.n)) }

// compare orders v and w, of one kind among string, int, double and bool.
func (v *value) compare(w *value) int {
	switch v.k {
	case kString:
		return strings.Compare(v.s, w.s)
	case kInt, kBool:
		return cmp3(v.n < w.n, v.n > w.n)
	case kDouble:
		return cmp3(v.f() < w.f(), v.f() > w.f())
	}
	return 0
}

func doubleValue(f float64) value { return value{k: kDouble, n: int64(math.Float64bits(f))} }

func boolValue(b bool) value {
	if b {
		return value{k: kBool, n: 1}
	}
	return value{k: kBool}
}

func cmp3(less, more bool) int {
	switch {
	case less:
		return -1
	case more:
		return 1
	}
	return 0
}

func literalOf(e celast.Expr) value {
	if e.Kind() != celast.LiteralKind {
		return value{}
	}
	switch l := e.AsLiteral().(type) {
	case types.String:
		return value{k: kString, s: string(l)}
	case types.Int:
		return value{k: kInt, n: int64(l)}
	case types.Double:
		return doubleValue(float64(l))
	case types.Bool:
		return boolValue(bool(l))
	}
	return value{}
}

func stringLiteral(e celast.Expr) (string, bool) {
	v := literalOf(e)
	return v.s, v.k == kString
}

// reader reads one input of a call; kind kNone when it is not known.
type reader func(c *guardIn) *value

// reader reads a field of a variable, an argument by its path, or the
// size of either; nil for anything else.
func (b *guards) reader(e celast.Expr) reader {
	rd, _ := b.readerKey(e)
	return rd
}

// readerKey is reader and the key of its slot.
func (b *guards) readerKey(e celast.Expr) (reader, string) {
	if e.Kind() == celast.CallKind && e.AsCall().FunctionName() == "size" {
		call := e.AsCall()
		var of celast.Expr
		switch {
		case call.IsMemberFunction() && len(call.Args()) == 0:
			of = call.Target()
		case !call.IsMemberFunction() && len(call.Args()) == 1:
			of = call.Args()[0]
		}
		if of == nil {
			return nil, ""
		}
		rd, key := b.readerKey(of)
		if rd == nil {
			return nil, ""
		}
		key = "size\x00" + key
		return b.slot(key, func(c *guardIn) value {
			switch v := rd(c); v.k {
			case kString:
				return value{k: kInt, n: int64(utf8.RuneCountInString(v.s))}
			case kStrings:
				return value{k: kInt, n: int64(len(v.ss))}
			case kList:
				return value{k: kInt, n: int64(len(v.raw.([]any)))}
			case kMap:
				return value{k: kInt, n: int64(len(v.raw.(map[string]any)))}
			}
			return value{k: kNone}
		}), key
	}
	if path, ok := argsPath(e); ok {
		key := "args\x00" + strings.Join(path, "\x00")
		return b.slot(key, func(c *guardIn) value { return c.arg(path) }), key
	}
	if e.Kind() != celast.SelectKind || e.AsSelect().IsTestOnly() || e.AsSelect().Operand().Kind() != celast.IdentKind {
		return nil, ""
	}
	key := e.AsSelect().Operand().AsIdent() + "." + e.AsSelect().FieldName()
	if f := fieldReaders[key]; f != nil {
		return b.slot(key, f), key
	}
	return nil, ""
}

// stringField is the reader of e when it is a string field of a
// variable: the guards on those read it straight from the Input, which
// costs less than a slot.
func stringField(e celast.Expr) func(*Input) string {
	if e.Kind() != celast.SelectKind || e.AsSelect().IsTestOnly() || e.AsSelect().Operand().Kind() != celast.IdentKind {
		return nil
	}
	return stringFields[e.AsSelect().Operand().AsIdent()+"."+e.AsSelect().FieldName()]
}

// listField is stringField for the list fields.
func listField(e celast.Expr) func(*Input) []string {
	if e.Kind() != celast.SelectKind || e.AsSelect().IsTestOnly() || e.AsSelect().Operand().Kind() != celast.IdentKind {
		return nil
	}
	return listFields[e.AsSelect().Operand().AsIdent()+"."+e.AsSelect().FieldName()]
}

// fieldReaders read the fields of the variables every call has, as the
// rule sees them (Input.activation): a nil tool reads as empty fields, nil
// labels as an empty list.
var (
	stringFields = map[string]func(*Input) string{
		"actor.id":        func(in *Input) string { return in.Actor.ID },
		"actor.tenant":    func(in *Input) string { return in.Actor.Tenant },
		"tool.name":       func(in *Input) string { return toolField(in, 0) },
		"tool.source":     func(in *Input) string { return toolField(in, 1) },
		"tool.remoteName": func(in *Input) string { return toolField(in, 2) },
		"tool.kind":       func(in *Input) string { return toolField(in, 3) },
		"endpoint.path":   func(in *Input) string { return in.Endpoint.Path },
		"endpoint.name":   func(in *Input) string { return in.Endpoint.Name },
		"client.name":     func(in *Input) string { return in.Client.Name },
		"client.version":  func(in *Input) string { return in.Client.Version },
		"client.era":      func(in *Input) string { return in.Client.Era },
	}
	listFields = map[string]func(*Input) []string{
		"actor.roles":    func(in *Input) []string { return in.Actor.Roles },
		"tool.labels":    func(in *Input) []string { return in.ToolLabels },
		"session.labels": func(in *Input) []string { return in.SessionLabels },
	}
	fieldReaders = map[string]func(c *guardIn) value{}
)

func init() {
	for k, f := range stringFields {
		fieldReaders[k] = func(c *guardIn) value { return value{k: kString, s: f(c.in)} }
	}
	for k, f := range listFields {
		fieldReaders[k] = func(c *guardIn) value { return value{k: kStrings, ss: f(c.in)} }
	}
}

func toolField(in *Input, i int) string {
	t := in.Tool
	if t == nil {
		return ""
	}
	switch i {
	case 0:
		return t.Name
	case 1:
		return t.Source
	case 2:
		return t.RemoteName
	}
	return string(t.Kind)
}

// argsPath is the field names of args.a.b or args["a"]["b"] (none for
// args alone); false for anything else.
func argsPath(e celast.Expr) ([]string, bool) {
	path := []string{}
	for {
		switch e.Kind() {
		case celast.IdentKind:
			if e.AsIdent() != "args" {
				return nil, false
			}
			// Built from the outside in.
			for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
				path[i], path[j] = path[j], path[i]
			}
			return path, true
		case celast.SelectKind:
			s := e.AsSelect()
			if s.IsTestOnly() {
				return nil, false
			}
			path = append(path, s.FieldName())
			e = s.Operand()
		case celast.CallKind:
			call := e.AsCall()
			if call.FunctionName() != "_[_]" || call.IsMemberFunction() || len(call.Args()) != 2 {
				return nil, false
			}
			key, ok := stringLiteral(call.Args()[1])
			if !ok {
				return nil, false
			}
			path = append(path, key)
			e = call.Args()[0]
		default:
			return nil, false
		}
	}
}

// arg reads the argument at path: unknown in a listing, when the
// arguments are not an object, or when a step is absent or not an object
// (CEL errs there).
func (c *guardIn) arg(path []string) value {
	if c.listing {
		return value{k: kNone}
	}
	m, ok := c.in.activation().goArgs()
	if !ok {
		return value{k: kNone}
	}
	var v any = m
	for _, p := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return value{k: kNone}
		}
		if v, ok = obj[p]; !ok {
			return value{k: kNone}
		}
	}
	switch x := v.(type) {
	case string:
		return value{k: kString, s: x}
	case int64:
		return value{k: kInt, n: x}
	case float64:
		return doubleValue(x)
	case bool:
		return boolValue(x)
	case []any:
		return value{k: kList, raw: x}
	case map[string]any:
		return value{k: kMap, raw: x}
	case nil:
		return value{k: kNull}
	}
	return value{k: kNone}
}
