package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// OP-1: the key table lists exactly the keys the config struct accepts,
// each once, and the environment names follow one rule.
func TestKeyTableMatchesConfig(t *testing.T) {
	walked := configKeys("", reflect.TypeFor[Config](), map[reflect.Type]bool{reflect.TypeFor[Config](): true})
	var table []string
	seen := map[string]bool{}
	envs := map[string]string{}
	for _, k := range Keys() {
		if seen[k.Path] {
			t.Errorf("%s is in the table twice", k.Path)
		}
		seen[k.Path] = true
		table = append(table, k.Path)
		if k.Reload != Live && k.Reload != Restart {
			t.Errorf("%s: reload %q", k.Path, k.Reload)
		}
		for _, name := range []string{k.Env, k.EnvDeprecated} {
			if name == "" {
				continue
			}
			if prev, ok := envs[name]; ok {
				t.Errorf("%s overrides both %s and %s", name, prev, k.Path)
			}
			envs[name] = k.Path
		}
		if k.Env != "" {
			if strings.Contains(k.Path, "[]") {
				t.Errorf("%s: a key in a list cannot have an override", k.Path)
			}
			// TOOLGATE_ and the path in capitals, "." as "_".
			if want := "TOOLGATE_" + strings.ToUpper(strings.ReplaceAll(k.Path, ".", "_")); k.Env != want {
				t.Errorf("%s: override %s, want %s", k.Path, k.Env, want)
			}
		}
		if k.EnvDeprecated != "" && k.Env == "" {
			t.Errorf("%s: an old name without a current one", k.Path)
		}
		ft := typeAt(reflect.TypeFor[Config](), strings.ReplaceAll(k.Path, "[]", "[0]"))
		if ft == nil {
			t.Errorf("%s: no such field", k.Path)
			continue
		}
		number := ft.Kind() == reflect.Int || ft.Kind() == reflect.Int64
		if !number && (k.Min != nil || k.Zero != "" || k.Negative != NegativeRefused || k.Unit != "") {
			t.Errorf("%s: number rules on a %s", k.Path, ft)
		}
		for what, v := range map[string]any{"default": k.Default, "min": k.Min} {
			if v != nil && !reflect.TypeOf(v).ConvertibleTo(ft) {
				t.Errorf("%s: %s is a %T, the key a %s", k.Path, what, v, ft)
			}
			if v != nil && reflect.TypeOf(v).Kind() != ft.Kind() {
				t.Errorf("%s: %s is a %T, the key a %s", k.Path, what, v, ft)
			}
		}
		if k.Zero != "" && (k.Default == nil || !reflect.ValueOf(k.Default).IsZero()) {
			t.Errorf("%s: says what 0 means, but its default is %v", k.Path, k.Default)
		}
	}
	slices.Sort(walked)
	slices.Sort(table)
	if diff := cmp.Diff(walked, table); diff != "" {
		t.Errorf("the table and the config struct differ (-struct +table):\n%s", diff)
	}
}

// overrideValue is a valid text of an override of type t, and the value
// it decodes to.
func overrideValue(t reflect.Type) (string, any) {
	switch {
	case t == durationType:
		return "7s", 7 * time.Second
	case t.Kind() == reflect.Bool:
		return "true", true
	case t.Kind() == reflect.Int:
		return "7", 7
	case t.Kind() == reflect.Int64:
		return "7", int64(7)
	case t == secretType:
		return "/override/SECRET-value-0123456789abcdef0123456789", Secret("/override/SECRET-value-0123456789abcdef0123456789")
	}
	return "/override/value", "/override/value"
}

// valueAt reads the key at path (no lists) from cfg, through pointers.
func valueAt(t *testing.T, cfg *Config, path string) any {
	t.Helper()
	f, ok := fieldAt(reflect.ValueOf(cfg).Elem(), path)
	if !ok {
		t.Fatalf("%s: not in the loaded config", path)
	}
	for f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return nil
		}
		f = f.Elem()
	}
	return f.Interface()
}

// OP-1: every override of the table, and only those, wins over the file:
// each sets its key to the value given, typed as the key.
func TestEveryEnvOverrideSetsItsKey(t *testing.T) {
	path := writeConfig(t, "gateway:\n  listen: 127.0.0.1:1\n  confirm: {secret: ${TOOLGATE_CONFIRM_SECRET}}\n")
	n := 0
	for _, o := range EnvOverrides() {
		if o.Deprecated {
			continue
		}
		n++
		t.Run(o.Name, func(t *testing.T) {
			text, want := overrideValue(typeAt(reflect.TypeFor[Config](), o.Key.Path))
			// Loaded whether or not the value validates (a path is no
			// listen address): the decoded config comes back with the error.
			cfg, _, err := Load(path, optionsFor(withEnv(map[string]string{o.Name: text})))
			if cfg == nil {
				t.Fatalf("not loaded: %v", err)
			}
			if got := valueAt(t, cfg, o.Key.Path); !reflect.DeepEqual(got, want) {
				t.Errorf("%s=%s: %s = %#v, want %#v", o.Name, text, o.Key.Path, got, want)
			}
			// Lower case names the same variable.
			cfg, _, _ = Load(path, optionsFor(withEnv(map[string]string{strings.ToLower(o.Name): text})))
			if got := valueAt(t, cfg, o.Key.Path); cfg == nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s in lower case: %s = %#v, want %#v", o.Name, o.Key.Path, got, want)
			}
		})
	}
	if n < 20 {
		t.Errorf("only %d overrides", n)
	}
}

// An override that is not of its key's type is an error naming the key
// and the variable, never a silent default. (OP-1)
func TestEnvOverrideOfTheWrongType(t *testing.T) {
	path := writeConfig(t, "gateway:\n  confirm: {secret: ${TOOLGATE_CONFIRM_SECRET}}\n")
	n := 0
	for _, o := range EnvOverrides() {
		ft := typeAt(reflect.TypeFor[Config](), o.Key.Path)
		if ft.Kind() == reflect.String {
			continue
		}
		n++
		_, _, err := Load(path, optionsFor(withEnv(map[string]string{o.Name: "bogus"})))
		if err == nil || !strings.Contains(err.Error(), o.Key.Path+": "+o.Name+" is not a") {
			t.Errorf("%s=bogus: err = %v", o.Name, err)
		}
	}
	if n < 10 {
		t.Errorf("only %d typed overrides", n)
	}
}

// The confirm secret's variable was once documented as
// TOOLGATE_CONFIRM_SECRET: that name still sets the secret, with a
// warning, where TOOLGATE_GATEWAY_CONFIRM_SECRET would, unless the
// current name or the file sets it (CF-3, OP-1).
func TestDeprecatedConfirmSecretName(t *testing.T) {
	const old, cur = "old-SECRET-0123456789abcdef-0123456789abcdef", "cur-SECRET-0123456789abcdef-0123456789abcdef"
	const file = "file-SECRET-0123456789abcdef-0123456789abcdef"
	for _, tt := range []struct {
		name, yaml string
		env        map[string]string
		want       string
		warned     bool
	}{
		{"old name alone", "", map[string]string{"TOOLGATE_CONFIRM_SECRET": old}, old, true},
		{"both names", "", map[string]string{"TOOLGATE_CONFIRM_SECRET": old, "TOOLGATE_GATEWAY_CONFIRM_SECRET": cur}, cur, false},
		{"current name", "", map[string]string{"TOOLGATE_GATEWAY_CONFIRM_SECRET": cur}, cur, false},
		{"file names the old variable", "gateway:\n  confirm: {secret: ${TOOLGATE_CONFIRM_SECRET}}\n", map[string]string{"TOOLGATE_CONFIRM_SECRET": old}, old, false},
		{"file sets it", "gateway:\n  confirm: {secret: " + file + "}\n", map[string]string{"TOOLGATE_CONFIRM_SECRET": old}, file, false},
		{"current name over the file", "gateway:\n  confirm: {secret: " + file + "}\n", map[string]string{"TOOLGATE_GATEWAY_CONFIRM_SECRET": cur}, cur, false},
		{"old name empty", "", map[string]string{"TOOLGATE_CONFIRM_SECRET": "", "TOOLGATE_GATEWAY_CONFIRM_SECRET": cur}, cur, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := withEnv(tt.env)
			if _, ok := tt.env["TOOLGATE_CONFIRM_SECRET"]; !ok {
				delete(env, "TOOLGATE_CONFIRM_SECRET")
			}
			cfg, warnings := mustLoad(t, writeConfig(t, tt.yaml), env)
			if got := cfg.Gateway.Confirm.Secret.Reveal(); got != tt.want {
				t.Errorf("secret = %q, want %q", got, tt.want)
			}
			var warned []string
			for _, w := range warnings {
				if strings.Contains(w.Message, "TOOLGATE_CONFIRM_SECRET") {
					warned = append(warned, w.String())
				}
				assertNoLeak(t, "warning", w.String())
			}
			want := []string(nil)
			if tt.warned {
				want = []string{"gateway.confirm.secret: TOOLGATE_CONFIRM_SECRET is an old name that will stop working: set TOOLGATE_GATEWAY_CONFIRM_SECRET instead"}
			}
			if diff := cmp.Diff(want, warned); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// numberConfig is a config with one of each list a number key lives in.
func numberConfig() *Config {
	// Every inspect block with a hook, so the number keys inside them exist.
	hooked := func() *Inspect { return &Inspect{Hooks: []InspectHook{{URL: "http://127.0.0.1:9000/inspect"}}} }
	return &Config{
		Gateway:   Gateway{Confirm: Confirm{Secret: goodSecret}},
		Endpoints: []Endpoint{{Path: "/mcp", Actor: &Actor{ID: "dev"}, Inspect: hooked()}},
		Upstreams: []Upstream{{Name: "github", Command: "mcp-github", Inspect: hooked()}},
		Limits:    []Limit{{ID: "l", Per: "actor", Rate: "10/s"}},
		Inspect:   *hooked(),
	}
}

// setNumber sets the number key at its table path (lists: their first
// element) in c and returns the path errors name.
func setNumber(t *testing.T, c *Config, k Key, n int64) string {
	t.Helper()
	path := strings.ReplaceAll(k.Path, "[]", "[0]")
	v := reflect.ValueOf(c).Elem()
	for _, seg := range strings.Split(path, ".") {
		name, idx, isList := strings.Cut(seg, "[")
		f, ok := fieldAt(v, name)
		if !ok {
			t.Fatalf("%s: no field %s", k.Path, name)
		}
		v = f
		if isList {
			var i int
			fmt.Sscanf(idx, "%d]", &i)
			v = v.Index(i)
		}
	}
	v.SetInt(n)
	return path
}

// OP-1: the rule for numbers stated once in the table holds in SetDefaults
// and Validate for every number key: 0 is the default (or what Zero says),
// a negative value is refused naming the default unless it means never,
// and below Min is refused.
func TestNumberRulesHoldForEveryKey(t *testing.T) {
	n := 0
	for _, k := range Keys() {
		ft := typeAt(reflect.TypeFor[Config](), strings.ReplaceAll(k.Path, "[]", "[0]"))
		if ft.Kind() != reflect.Int && ft.Kind() != reflect.Int64 {
			continue
		}
		n++
		t.Run(k.Path, func(t *testing.T) {
			c := numberConfig()
			path := setNumber(t, c, k, 0)
			c.SetDefaults("test")
			if _, err := c.Validate(); err != nil {
				t.Errorf("0: %v", err)
			}
			if k.Default != nil {
				c2 := numberConfig()
				c2.SetDefaults("test")
				want := reflect.ValueOf(k.Default).Int()
				if v := numberIn(t, c2, k); v != want {
					t.Errorf("unset: %d, want the default %d", v, want)
				}
				if v := numberIn(t, c, k); v != want {
					t.Errorf("0: %d, want the default %d", v, want)
				}
			}

			c = numberConfig()
			c.SetDefaults("test")
			setNumber(t, c, k, -1)
			_, err := c.Validate()
			switch k.Negative {
			case NegativeNever:
				if err != nil {
					t.Errorf("-1 (never): %v", err)
				}
			default:
				want := path + ": must not be negative ("
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("-1: err = %v, want %q…", err, want)
				}
			}
			if k.Min != nil {
				c = numberConfig()
				c.SetDefaults("test")
				setNumber(t, c, k, reflect.ValueOf(k.Min).Int()-1)
				if _, err := c.Validate(); err == nil || !strings.Contains(err.Error(), path+": must be at least "+FormatValue(k.Min)) {
					t.Errorf("below the minimum: err = %v", err)
				}
			}
		})
	}
	if n < 15 {
		t.Errorf("only %d number keys", n)
	}
}

// numberIn reads the number key k (lists: their first element) from c.
func numberIn(t *testing.T, c *Config, k Key) int64 {
	t.Helper()
	v := reflect.ValueOf(c).Elem()
	for _, seg := range strings.Split(k.Path, ".") {
		name, isList := strings.CutSuffix(seg, "[]")
		f, ok := fieldAt(v, name)
		if !ok {
			t.Fatalf("%s: no field %s", k.Path, name)
		}
		v = f
		if isList {
			v = v.Index(0)
		}
	}
	return v.Int()
}

// FormatValue writes what an operator would write in the file. (OP-1)
func TestFormatValue(t *testing.T) {
	for v, want := range map[any]string{
		30 * time.Minute: "30m", time.Second: "1s", 2 * time.Minute: "2m", 100 * time.Millisecond: "100ms",
		90 * time.Second: "1m30s", 2 * time.Hour: "2h", time.Duration(0): "0", int64(4194304): "4194304", "pin": "pin", false: "false",
	} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

// An override does not paper over a parent the file wrote as something
// else than a mapping: the error about the parent stays, whichever
// variable is set (QB-3).
func TestEnvOverrideKeepsParentTypeError(t *testing.T) {
	for _, tt := range []struct{ yaml, env, want string }{
		{"gateway: \"string\"\n", "TOOLGATE_GATEWAY_LISTEN", "gateway: expected a mapping, got a string"},
		{"gateway: \"string\"\n", "TOOLGATE_CONFIRM_SECRET", "gateway: expected a mapping, got a string"},
		{"gateway:\n  confirm: 42\n", "TOOLGATE_GATEWAY_CONFIRM_TTL", "gateway.confirm: expected a mapping, got an integer"},
		{"audit: [1]\n", "TOOLGATE_AUDIT_CHECKPOINTKEY", "audit: expected a mapping, got a list"},
	} {
		env := withEnv(map[string]string{tt.env: "0123456789abcdef0123456789abcdef-SECRET"})
		if tt.env == "TOOLGATE_GATEWAY_CONFIRM_TTL" {
			env[tt.env] = "5m"
		}
		_, _, err := Load(writeConfig(t, tt.yaml), optionsFor(env))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q with %s: err = %v, want %q", tt.yaml, tt.env, err, tt.want)
		}
	}
}
