package policy

import (
	"sort"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// maxFields is the most fields a variable's type has.
const maxFields = 8

// fieldCache keeps a variable's fields as CEL values once read: the native
// types provider reads a field by reflection and converts it on every read,
// which allocates, and 50 rules read tool.name 50 times a call.
type fieldCache struct{ vals [maxFields]ref.Val }

// cached is a variable whose fields are kept in its fieldCache, when it
// has one: a variable gets its cache where a call's inputs are converted
// (Input.activation), so the Input itself stays small; nil reads every
// field afresh.
type cached interface{ fields() *fieldCache }

func (a *ActorVars) fields() *fieldCache    { return a.cache }
func (t *ToolVars) fields() *fieldCache     { return t.cache }
func (e *EndpointVars) fields() *fieldCache { return e.cache }
func (c *ClientVars) fields() *fieldCache   { return c.cache }
func (s *SessionVars) fields() *fieldCache  { return s.cache }

// cacheFields wraps the environment's type provider so the fields of the
// variables' types are read through their caches. It comes after
// ext.NativeTypes, which declares the types.
func cacheFields(typeNames ...string) cel.EnvOption {
	return func(e *cel.Env) (*cel.Env, error) {
		p := &cachingProvider{Provider: e.CELTypeProvider(), adapter: e.CELTypeAdapter(), slots: map[string]map[string]int{}}
		for _, t := range typeNames {
			names, ok := p.Provider.FindStructFieldNames(t)
			if !ok || len(names) > maxFields {
				continue
			}
			sort.Strings(names)
			slots := map[string]int{}
			for i, n := range names {
				slots[n] = i
			}
			p.slots[t] = slots
		}
		return cel.CustomTypeProvider(p)(e)
	}
}

type cachingProvider struct {
	types.Provider
	adapter types.Adapter
	// slots is, per type, each field's index in its fieldCache; read
	// only once the environment is built.
	slots map[string]map[string]int
}

// FindStructFieldType implements types.Provider: the field's reader goes
// through the variable's cache when the value has one.
func (p *cachingProvider) FindStructFieldType(structType, fieldName string) (*types.FieldType, bool) {
	ft, ok := p.Provider.FindStructFieldType(structType, fieldName)
	slot, known := p.slots[structType][fieldName]
	if !ok || !known || ft.GetFrom == nil {
		return ft, ok
	}
	get := ft.GetFrom
	out := *ft
	out.GetFrom = func(obj any) (any, error) {
		c, ok := obj.(cached)
		if !ok {
			return get(obj)
		}
		fc := c.fields()
		if fc == nil {
			return get(obj)
		}
		if v := fc.vals[slot]; v != nil {
			return v, nil
		}
		raw, err := get(obj)
		if err != nil {
			return nil, err
		}
		v := p.adapter.NativeToValue(raw)
		fc.vals[slot] = v
		return v, nil
	}
	return &out, true
}

// celValue converts a decoded JSON value to CEL once, all the way down:
// a map or list left native would convert its elements on every read.
func celValue(adapt types.Adapter, v any) ref.Val {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = celValue(adapt, e)
		}
		return types.NewStringInterfaceMap(adapt, m)
	case []any:
		l := make([]ref.Val, len(x))
		for i, e := range x {
			l[i] = celValue(adapt, e)
		}
		return types.NewRefValList(adapt, l)
	}
	return adapt.NativeToValue(v)
}

// stringList is a list of strings as CEL values.
func stringList(adapt types.Adapter, ss []string) ref.Val {
	l := make([]ref.Val, len(ss))
	for i, s := range ss {
		l[i] = types.String(s)
	}
	return types.NewRefValList(adapt, l)
}
