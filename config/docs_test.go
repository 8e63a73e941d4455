package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configKeys walks a config type by its koanf tags and returns the path of
// every leaf key a file can set: nested structs joined with ".", slices of
// structs as "[]", maps and types without koanf tags of their own (Secret,
// Audience, durations) as leaves. A struct already on the path (Auth's
// anyOf) is a leaf, not entered again.
func configKeys(prefix string, t reflect.Type, onPath map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
		if name == "" || name == "-" {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice {
			el := ft.Elem()
			for el.Kind() == reflect.Pointer {
				el = el.Elem()
			}
			if hasKoanfFields(el) {
				key += "[]"
				ft = el
			}
		}
		if !hasKoanfFields(ft) || onPath[ft] {
			keys = append(keys, key)
			continue
		}
		onPath[ft] = true
		keys = append(keys, configKeys(key, ft, onPath)...)
		delete(onPath, ft)
	}
	return keys
}

// hasKoanfFields reports whether t is a struct the decoder enters: one
// with koanf-tagged fields.
func hasKoanfFields(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("koanf"); tag != "" && tag != "-" {
			return true
		}
	}
	return false
}

// OP-1: every key the config accepts is in docs/configuration.md, written
// as `key.path` (slices of structs as `[]`), so the reference cannot fall
// behind the struct it describes.
func TestConfigurationDocCoversEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := configKeys("", reflect.TypeFor[Config](), map[reflect.Type]bool{reflect.TypeFor[Config](): true})
	if len(keys) < 50 {
		t.Fatalf("the walk found only %d keys: %q", len(keys), keys)
	}
	for _, k := range keys {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/configuration.md does not document `%s`", k)
		}
	}
}

// The walk itself: nested structs, slices of structs, pointers, the
// recursion of anyOf, and leaves that have no koanf tags of their own.
func TestConfigKeysWalk(t *testing.T) {
	keys := configKeys("", reflect.TypeFor[Config](), map[reflect.Type]bool{reflect.TypeFor[Config](): true})
	has := map[string]bool{}
	for _, k := range keys {
		has[k] = true
	}
	for _, want := range []string{
		"gateway.listen", "gateway.confirm.ttl", "gateway.admin.keys[].operator",
		"endpoints[].auth.anyOf[]", "endpoints[].auth.oauth.audience", "endpoints[].auth.apiKeys[].actor.roles",
		"upstreams[].env", "upstreams[].signing.hmacSha256.secret", "upstreams[].health.interval", "upstreamsFrom",
	} {
		if !has[want] {
			t.Errorf("walk lacks %s; got %q", want, keys)
		}
	}
	for _, bad := range []string{"upstreams[].From", "upstreams[].from", "endpoints[].auth.oauth.audience.Any", "endpoints[].auth.anyOf[].anyOf[]", "gateway.confirm", "endpoints[]"} {
		if has[bad] {
			t.Errorf("walk has %s", bad)
		}
	}
}

// docRow is one row of a key table in docs/configuration.md.
type docRow struct{ def, reload, meaning string }

// docRows reads the `| key | default | reload | meaning |` rows.
func docRows(t *testing.T, doc string) map[string]docRow {
	t.Helper()
	rows := map[string]docRow{}
	for _, m := range docRowRE.FindAllStringSubmatch(doc, -1) {
		if _, ok := rows[m[1]]; ok {
			t.Errorf("docs/configuration.md has two rows for `%s`", m[1])
		}
		rows[m[1]] = docRow{m[2], m[3], m[4]}
	}
	return rows
}

var (
	docRowRE = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| (.*?) \\| (.*?) \\| (.*) \\|$")
	docEnvRE = regexp.MustCompile("(?m)^\\| `(TOOLGATE_[A-Z_]+)` \\| `([^`]+)`(.*)\\|$")
)

// OP-1: docs/configuration.md says of every key what the key table says:
// its default, its reload behaviour, its unit and minimum, and what 0 or
// a negative value means where that is not the general rule; and it lists
// no key the table lacks.
func TestConfigurationDocFollowsKeyTable(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := docRows(t, string(b))
	for _, k := range Keys() {
		row, ok := rows[k.Path]
		if !ok {
			t.Errorf("`%s` has no row", k.Path)
			continue
		}
		if got, _, _ := strings.Cut(row.reload, " "); got != string(k.Reload) {
			t.Errorf("`%s`: reload %q, the table says %s", k.Path, row.reload, k.Reload)
		}
		if k.Default != nil {
			if want := "`" + FormatValue(k.Default) + "`"; !strings.Contains(row.def, want) {
				t.Errorf("`%s`: default %q, the table says %s", k.Path, row.def, want)
			}
		}
		text := row.def + " " + row.meaning
		if k.Unit != "" && !strings.Contains(text, k.Unit) {
			t.Errorf("`%s`: the row does not say it counts %s", k.Path, k.Unit)
		}
		if k.Min != nil && !strings.Contains(text, "at least "+FormatValue(k.Min)) {
			t.Errorf("`%s`: the row does not say at least %s", k.Path, FormatValue(k.Min))
		}
		if k.Zero != "" && !strings.Contains(row.meaning, "`0`: "+k.Zero) {
			t.Errorf("`%s`: the row does not say `0`: %s", k.Path, k.Zero)
		}
		if k.Negative == NegativeNever && !strings.Contains(row.meaning, "negative: never") {
			t.Errorf("`%s`: the row does not say negative: never", k.Path)
		}
	}
	for key := range rows {
		if _, ok := KeyByPath(key); ok {
			continue
		}
		// A block may have a row of its own (endpoints[].policies).
		block := false
		for _, k := range Keys() {
			block = block || strings.HasPrefix(k.Path, key+".")
		}
		if !block {
			t.Errorf("docs/configuration.md documents `%s`, which is no key", key)
		}
	}
}

// OP-1: the Environment table of docs/configuration.md lists every
// override of the key table with its key, old names marked, and nothing
// else; no user doc or example names an override the loader does not read.
func TestConfigurationDocListsEveryEnvOverride(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, m := range docEnvRE.FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = m[2] + m[3]
	}
	overrides := map[string]bool{}
	for _, o := range EnvOverrides() {
		overrides[o.Name] = true
		row, ok := documented[o.Name]
		switch {
		case !ok:
			t.Errorf("`%s` (overrides %s) is not in the Environment table", o.Name, o.Key.Path)
		case !strings.HasPrefix(row, o.Key.Path):
			t.Errorf("`%s`: the doc says it sets %q, the table %s", o.Name, row, o.Key.Path)
		case o.Deprecated != strings.Contains(row, "deprecated"):
			t.Errorf("`%s`: deprecated %v, the doc says %q", o.Name, o.Deprecated, row)
		}
	}
	for name := range documented {
		if !overrides[name] {
			t.Errorf("the Environment table lists `%s`, which the loader does not read", name)
		}
	}
	// Variables in the overrides' namespace (TOOLGATE_ and a top-level
	// key) that the loader does not read would be silently ignored.
	var tops []string
	for _, k := range Keys() {
		top, _, _ := strings.Cut(k.Path, ".")
		top = strings.ToUpper(strings.TrimSuffix(top, "[]"))
		if !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	namespace := regexp.MustCompile(`\bTOOLGATE_(?:` + strings.Join(tops, "|") + `)_[A-Z_]+\b`)
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md", "../testdata/toolgate.example.yaml", "../testdata/serve.yaml", "../deploy/Containerfile", "../deploy/toolgate.service")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range namespace.FindAllString(string(b), -1) {
			if !overrides[name] {
				t.Errorf("%s names %s, which the loader does not read", f, name)
			}
		}
	}
}
