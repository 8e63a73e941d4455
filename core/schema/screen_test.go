package schema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/core/schema/schematest"
)

// IM-19: the walk finds patterns at any depth of the evil schemas, and
// exactly there.
func TestIM19ScreenSchemaEvil(t *testing.T) {
	want := map[string][]string{
		"anyof-branch.json":           {"/properties/query/anyOf/1/pattern"},
		"defs-2020-12.json":           {"/$defs/slug/pattern"},
		"draft07-definitions.json":    {"/definitions/word/pattern", "/properties/pair/items/1/pattern", "/dependencies/words/properties/sep/pattern"},
		"duplicate-keys.json":         {"/properties/code/pattern"},
		"items-nested.json":           {"/properties/matrix/items/items/pattern"},
		"pattern-properties-key.json": {"/properties/labels/patternProperties/^([a-z]+~1?)+$"},
		"ref-into-const.json":         {"/$defs/doc/const/pattern"},
		"ref-into-extension.json":     {"/x-shared/token/pattern"},
		"applicators.json": {
			"/propertyNames/pattern",
			"/additionalProperties/not/pattern",
			"/then/properties/items/prefixItems/0/pattern",
			"/then/properties/items/contains/pattern",
			"/dependentSchemas/kind/properties/tag/pattern",
		},
	}
	files, err := filepath.Glob(filepath.Join(schematest.Corpus(), "evil", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("%d evil schemas, want at least 4", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		exp, ok := want[name]
		if !ok {
			t.Errorf("%s: no expectation in this test", name)
			continue
		}
		found := ScreenSchema(raw)
		var got []string
		for _, d := range found {
			got = append(got, d.Pointer)
			if d.Reason == "" || d.Pattern == "" {
				t.Errorf("%s: finding %+v lacks pattern or reason", name, d)
			}
		}
		if diff := cmp.Diff(exp, got); diff != "" {
			t.Errorf("%s: pointers (-want +got):\n%s", name, diff)
		}
		// The schemas compile; only the screen refuses them.
		_, err = CompileSchema(raw)
		var dpe *DangerousPatternError
		if !errors.As(err, &dpe) || dpe.Pointer != exp[0] {
			t.Errorf("%s: CompileSchema error = %v; want a DangerousPatternError at %s", name, err, exp[0])
		}
	}
}

// IM-19: the reference servers' schemas and the other real-world ones
// compile and pass the screen.
func TestIM19ScreenSchemaBenign(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(schematest.Corpus(), "benign", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("%d benign schemas, want at least 30", len(files))
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ScreenSchema(raw) {
			t.Errorf("%s: %v", filepath.Base(f), d)
		}
		if _, err := CompileSchema(raw); err != nil {
			t.Errorf("%s: CompileSchema: %v", filepath.Base(f), err)
		}
	}
}

// IM-19: names and data are not patterns.
func TestIM19ScreenSchemaTraps(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{"property named pattern", `{"properties":{"pattern":{"type":"string"}}}`, nil},
		{"property named pattern with its own pattern",
			`{"properties":{"pattern":{"type":"string","pattern":"(a+)+$"}}}`,
			[]string{"/properties/pattern/pattern"}},
		{"string under properties is not a regex", `{"properties":{"pattern":"(a+)+$"}}`, nil},
		{"definition named pattern", `{"$defs":{"pattern":{"pattern":"(a|a)*"}},"definitions":{"pattern":"(a|a)*"}}`,
			[]string{"/$defs/pattern/pattern"}},
		{"property named patternProperties",
			`{"properties":{"patternProperties":{"type":"object","properties":{"(a+)+":{}}}}}`, nil},
		{"const, enum, default and examples are data",
			`{"properties":{"x":{"const":{"pattern":"(a+)+$"},"enum":["(a|a)*",{"pattern":"(.*a){20}"}],"default":{"pattern":"(.+)+"},"examples":[{"patternProperties":{"(a+)+":{}}}]}}}`,
			nil},
		{"required names", `{"required":["pattern"],"properties":{"pattern":true}}`, nil},
		{"non-string pattern is walked, not screened", `{"pattern":{"pattern":"(a+)+"}}`, []string{"/pattern/pattern"}},
		{"dependencies mix names and schemas",
			`{"dependencies":{"a":["pattern"],"pattern":{"properties":{"b":{"pattern":"(a|aa)+"}}}}}`,
			[]string{"/dependencies/pattern/properties/b/pattern"}},
		{"pointer escaping", `{"properties":{"a/b~c":{"pattern":"(a+)+"}}}`, []string{"/properties/a~1b~0c/pattern"}},
		{"anchor refs are skipped, pointer refs followed",
			`{"$ref":"#/enum/0","enum":[{"pattern":"(a+)+"}],"properties":{"x":{"$ref":"#foo"}}}`,
			[]string{"/enum/0/pattern"}},
		{"percent-encoded ref", `{"$ref":"#/$defs/a%20b/const","$defs":{"a b":{"const":{"pattern":"(a+)+"}}}}`,
			[]string{"/$defs/a b/const/pattern"}},
		{"not JSON", `{"pattern":`, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, d := range ScreenSchema(json.RawMessage(tt.schema)) {
			got = append(got, d.Pointer)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: pointers (-want +got):\n%s", tt.name, diff)
		}
	}
}

// IM-19: the error names the place, the pattern and the rule, and matches
// both sentinels.
func TestIM19DangerousPatternError(t *testing.T) {
	found := ScreenSchema(json.RawMessage(`{"properties":{"q":{"type":"string","pattern":"^(\\d+)*$"}}}`))
	if len(found) != 1 {
		t.Fatalf("ScreenSchema found %d, want 1", len(found))
	}
	d := found[0]
	want := &DangerousPatternError{Pointer: "/properties/q/pattern", Pattern: `^(\d+)*$`, Reason: `nested quantifiers in (\d+)*`}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("finding (-want +got):\n%s", diff)
	}
	const msg = "pattern `^(\\d+)*$` at /properties/q/pattern can backtrack catastrophically: nested quantifiers in (\\d+)*"
	if d.Error() != msg {
		t.Errorf("Error() = %q, want %q", d.Error(), msg)
	}
	if !errors.Is(d, ErrDangerousPattern) || !errors.Is(d, ErrSchemaInvalid) {
		t.Errorf("errors.Is: dangerous %v, invalid %v; want both", errors.Is(d, ErrDangerousPattern), errors.Is(d, ErrSchemaInvalid))
	}
}

// IM-19: an output schema is screened like an input schema: nested, in
// $defs, behind references and in patternProperties keys; one that does not
// compile is still walked, since it is passed on as sent.
func TestIM19ScreenServedSchema(t *testing.T) {
	tests := []struct {
		name, raw, pointer string
	}{
		{"none", ``, ""},
		{"benign", `{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z]+$"}}}`, ""},
		{"nested", `{"type":"object","properties":{"items":{"type":"array","items":{"properties":{"s":{"pattern":"^(a+)+$"}}}}}}`, "/properties/items/items/properties/s/pattern"},
		{"$defs", `{"$ref":"#/$defs/x","$defs":{"x":{"type":"string","pattern":"(a|a)*"}}}`, "/$defs/x/pattern"},
		{"patternProperties key", `{"type":"object","patternProperties":{"^(\\w+\\s?)*$":{}}}`, "/patternProperties/^(\\w+\\s?)*$"},
		{"polynomial", `{"properties":{"s":{"pattern":"^(a+){4}$"}}}`, "/properties/s/pattern"},
		{"does not compile", `{"type":"strnig","properties":{"s":{"pattern":"(a+)+$"}}}`, "/properties/s/pattern"},
		{"not an object", `[{"pattern":"(a+)+$"}]`, "/0/pattern"},
		{"via $id", `{"$id":"https://x.example/o","properties":{"a":{"$ref":"https://x.example/o#/$defs/d"}},"$defs":{"d":{"pattern":"(.+)+"}}}`, "/$defs/d/pattern"},
	}
	for _, tt := range tests {
		d := ScreenServedSchema(json.RawMessage(tt.raw))
		switch {
		case tt.pointer == "" && d != nil:
			t.Errorf("%s: flagged %v", tt.name, d)
		case tt.pointer != "" && (d == nil || d.Pointer != tt.pointer):
			t.Errorf("%s: got %v; want a finding at %s", tt.name, d, tt.pointer)
		}
	}
}
