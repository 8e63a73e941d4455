package config

import (
	"os"
	"reflect"
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
