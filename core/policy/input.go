package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/toolgate/toolgate/core"
)

// Input is what one decision reads. Build it once per call (or per listed
// tool); it is not safe for concurrent use, since it converts its values
// for CEL on first use and keeps them.
type Input struct {
	Actor core.Actor
	// Claims, when set, replace Actor.Claims (the verified credential's
	// claims); nil for both reads as an empty map.
	Claims   map[string]any
	Tool     *core.Tool
	Endpoint EndpointVars
	Client   ClientVars
	// Args is the validated arguments object as JSON.
	Args json.RawMessage
	// Now is the decision's time; zero is time.Now().
	Now time.Time
	// ToolLabels and SessionLabels are tool.labels and session.labels
	// (IN-3); nil reads as an empty list.
	ToolLabels, SessionLabels []string

	vars *vars
}

// vars is Input as CEL values, each converted on its first use.
type vars struct {
	in                            *Input
	actor, tool, endpoint, client any
	session                       any
	args                          any
	now                           any
	argsDone                      bool
	// goArgs is the arguments decoded once, as the guards read them and
	// as args is built from; goErr why they are not an object.
	decoded    map[string]any
	goErr      error
	goArgsDone bool
}

// goArgs decodes the arguments once: false when they are not a JSON
// object.
func (v *vars) goArgs() (map[string]any, bool) {
	if !v.goArgsDone {
		v.goArgsDone = true
		raw := v.in.Args
		if len(bytes.TrimSpace(raw)) == 0 {
			raw = json.RawMessage(`{}`)
		}
		if m, ok := decodeFast(raw); ok {
			v.decoded = m
			return m, true
		}
		a, err := decodeJSON(raw)
		m, ok := a.(map[string]any)
		if err == nil && !ok {
			err = fmt.Errorf("the arguments are not an object")
		}
		v.decoded, v.goErr = m, err
	}
	return v.decoded, v.goErr == nil
}

var _ interpreter.Activation = (*vars)(nil)

func (in *Input) activation() *vars {
	if in.vars == nil {
		in.vars = &vars{in: in}
	}
	return in.vars
}

// ResolveName implements interpreter.Activation.
func (v *vars) ResolveName(name string) (any, bool) {
	// Every rule resolves its variables again: a converted one is
	// answered before anything else is looked at.
	switch name {
	case "actor":
		if v.actor != nil {
			return v.actor, true
		}
	case "tool":
		if v.tool != nil {
			return v.tool, true
		}
	case "args":
		if v.argsDone {
			return v.args, true
		}
	}
	e, _ := env()
	adapt := e.CELTypeAdapter()
	switch name {
	case "actor":
		if v.actor == nil {
			a := v.in.Actor
			claims := v.in.Claims
			if claims == nil {
				claims = a.Claims
			}
			if claims == nil {
				claims = map[string]any{}
			}
			cm, _ := celValue(adapt, claims).(traits.Mapper)
			rl, _ := stringList(adapt, a.Roles).(traits.Lister)
			o := &struct {
				v ActorVars
				c fieldCache
			}{v: ActorVars{ID: a.ID, Roles: StringList{rl}, Tenant: a.Tenant, Claims: DynMap{cm}}}
			o.v.cache = &o.c
			v.actor = adapt.NativeToValue(&o.v)
		}
		return v.actor, true
	case "tool":
		if v.tool == nil {
			annotations := map[string]any{}
			o := &struct {
				v ToolVars
				c fieldCache
			}{}
			tv := &o.v
			tv.cache = &o.c
			if t := v.in.Tool; t != nil {
				tv.Name, tv.Source, tv.RemoteName, tv.Kind = t.Name, t.Source, t.RemoteName, string(t.Kind)
				if len(t.Annotations) > 0 {
					if m, err := decodeJSON(t.Annotations); err == nil {
						if mm, ok := m.(map[string]any); ok {
							annotations = mm
						}
					}
				}
			}
			am, _ := celValue(adapt, annotations).(traits.Mapper)
			tv.Annotations = DynMap{am}
			ll, _ := stringList(adapt, v.in.ToolLabels).(traits.Lister)
			tv.Labels = StringList{ll}
			v.tool = adapt.NativeToValue(tv)
		}
		return v.tool, true
	case "endpoint":
		if v.endpoint == nil {
			o := &struct {
				v EndpointVars
				c fieldCache
			}{v: v.in.Endpoint}
			o.v.cache = &o.c
			v.endpoint = adapt.NativeToValue(&o.v)
		}
		return v.endpoint, true
	case "client":
		if v.client == nil {
			o := &struct {
				v ClientVars
				c fieldCache
			}{v: v.in.Client}
			o.v.cache = &o.c
			v.client = adapt.NativeToValue(&o.v)
		}
		return v.client, true
	case "session":
		if v.session == nil {
			o := &struct {
				v SessionVars
				c fieldCache
			}{}
			ll, _ := stringList(adapt, v.in.SessionLabels).(traits.Lister)
			o.v.Labels = StringList{ll}
			o.v.cache = &o.c
			v.session = adapt.NativeToValue(&o.v)
		}
		return v.session, true
	case "args":
		if !v.argsDone {
			v.argsDone = true
			if a, ok := v.goArgs(); !ok {
				// An error value: every rule reading args fails, and so
				// denies.
				v.args = types.NewErr("reading the arguments: %v", v.goErr)
			} else {
				v.args = celValue(adapt, a)
			}
		}
		return v.args, true
	case "now":
		if v.now == nil {
			t := v.in.Now
			if t.IsZero() {
				t = time.Now()
			}
			v.now = types.Timestamp{Time: t}
		}
		return v.now, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (v *vars) Parent() interpreter.Activation { return nil }

// decodeJSON decodes one JSON value with integers as int64 (CEL int) and
// other numbers as float64 (CEL double), so `args.count == 3` and
// `args.amount > 99.5` both read as written.
func decodeJSON(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if !strings.ContainsAny(s, ".eE") {
			if i, err := x.Int64(); err == nil {
				return i
			}
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}
