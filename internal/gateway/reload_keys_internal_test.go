package gateway

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/mcp/serve"
)

// reloadBase is a defaulted config in which every key outside lists
// exists (the admin block, a traces endpoint), built afresh each call so
// two share no pointer.
func reloadBase() *config.Config {
	c := &config.Config{
		Gateway: config.Gateway{
			Admin: &config.Admin{Keys: []config.AdminKey{{Key: "admin-key-0123456789", Operator: "alice"}}},
		},
		Telemetry: config.Telemetry{Traces: config.Traces{Endpoint: "http://127.0.0.1:4318"}},
	}
	c.SetDefaults("test")
	return c
}

// fieldByKey follows a key path's koanf names from a struct value,
// allocating nil pointers on the way when alloc is set.
func fieldByKey(t *testing.T, v reflect.Value, path string, alloc bool) reflect.Value {
	t.Helper()
	for _, seg := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !alloc {
					return reflect.Value{}
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		found := false
		for i := range v.NumField() {
			if name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("koanf"), ","); name == seg {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			t.Fatalf("%s: no field %s", path, seg)
		}
	}
	return v
}

// change sets f to a value other than its own.
func change(t *testing.T, path string, f reflect.Value) {
	t.Helper()
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			f.Set(reflect.New(f.Type().Elem()))
		}
		f = f.Elem()
		if f.Kind() == reflect.Bool || f.Kind() == reflect.Float64 {
			// A nil *bool is on and a nil ratio 1: set one that differs.
			if f.Kind() == reflect.Bool {
				f.SetBool(false)
			} else {
				f.SetFloat(0.5)
			}
			return
		}
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(f.String() + "-changed-0123456789abcdef0123456789")
	case reflect.Bool:
		f.SetBool(!f.Bool())
	case reflect.Int, reflect.Int64:
		if f.Type() == reflect.TypeFor[time.Duration]() {
			f.SetInt(f.Int() + int64(time.Second))
		} else {
			f.SetInt(f.Int() + 1)
		}
	case reflect.Slice:
		if f.Type().Elem().Kind() != reflect.String {
			t.Fatalf("%s: cannot change a %s", path, f.Type())
		}
		f.Set(reflect.Append(f, reflect.ValueOf("changed").Convert(f.Type().Elem())))
	case reflect.Map:
		m := reflect.MakeMap(f.Type())
		m.SetMapIndex(reflect.ValueOf("x-changed").Convert(f.Type().Key()), reflect.ValueOf("v").Convert(f.Type().Elem()))
		f.Set(m)
	default:
		t.Fatalf("%s: cannot change a %s", path, f.Type())
	}
}

// OP-8: what the key table says of each key outside lists holds in a
// reload: a restart key is named and keeps its running value, a live key
// is not named and takes the new one.
func TestReloadFollowsKeyTableOP8(t *testing.T) {
	n := 0
	for _, k := range config.Keys() {
		if strings.Contains(k.Path, "[]") || k.Path == "upstreamsFrom" || strings.HasPrefix(k.Path, "policies.") {
			continue // lists and policies are compared whole, as their own diff
		}
		n++
		t.Run(k.Path, func(t *testing.T) {
			cur, next := reloadBase(), reloadBase()
			change(t, k.Path, fieldByKey(t, reflect.ValueOf(next).Elem(), k.Path, true))
			d := diffConfigs(cur, next)
			named := false
			for _, r := range append(append([]string{}, d.restart...), d.messages...) {
				if r == k.Path || strings.HasPrefix(k.Path, r+".") {
					named = slicesContains(d.restart, r)
				}
			}
			got := fieldByKey(t, reflect.ValueOf(d.effective).Elem(), k.Path, false)
			want := fieldByKey(t, reflect.ValueOf(next).Elem(), k.Path, false)
			if k.Reload == config.Restart {
				want = fieldByKey(t, reflect.ValueOf(cur).Elem(), k.Path, false)
			}
			if named != (k.Reload == config.Restart) {
				t.Errorf("reload %s, but named as needing a restart: %v (%q)", k.Reload, named, d.restart)
			}
			if !reflect.DeepEqual(valueOf(got), valueOf(want)) {
				t.Errorf("reload %s: in force after the reload %v, want %v", k.Reload, valueOf(got), valueOf(want))
			}
		})
	}
	if n < 35 {
		t.Errorf("only %d keys", n)
	}
}

func valueOf(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// OP-1: the endpoint's own defaults, which it takes for 0, are the key
// table's, so "0 means the default" means one value whichever reads it.
func TestEndpointDefaultsAreTheKeyTables(t *testing.T) {
	for path, endpoint := range map[string]any{
		"gateway.maxRequestBytes":      int64(serve.DefaultMaxRequestBytes),
		"gateway.sessionIdleTimeout":   serve.DefaultSessionIdleTimeout,
		"gateway.sessionParkAfter":     serve.DefaultSessionParkAfter,
		"gateway.maxSessions":          serve.DefaultMaxSessions,
		"gateway.maxSessionsPerActor":  serve.DefaultMaxSessionsPerActor,
		"gateway.maxStreamsPerSession": serve.DefaultMaxStreamsPerSession,
		"gateway.readTimeout":          serve.DefaultReadTimeout,
		"gateway.writeTimeout":         serve.DefaultWriteTimeout,
		"gateway.idleTimeout":          serve.DefaultIdleTimeout,
		"gateway.heartbeatInterval":    serve.DefaultHeartbeatInterval,
	} {
		k, ok := config.KeyByPath(path)
		if !ok {
			t.Fatalf("%s is not in the key table", path)
		}
		if !reflect.DeepEqual(k.Default, endpoint) {
			t.Errorf("%s: the table's default is %#v, the endpoint's %#v", path, k.Default, endpoint)
		}
	}
}
