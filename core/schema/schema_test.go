package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/core/schema/schematest"
)

func mustCompile(t *testing.T, raw string) *Schema {
	t.Helper()
	s, err := CompileSchema(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("CompileSchema(%s): %v", raw, err)
	}
	return s
}

func fieldErrors(t *testing.T, err error) []FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T %v is not a *ValidationError", err, err)
	}
	return ve.Errors
}

// IM-17: the schema is kept byte for byte, whatever its whitespace, key
// order, escapes or numbers, and Raw hands out a copy.
func TestIM17RawIsVerbatim(t *testing.T) {
	raw := "{ \"required\" :[\"n\"],\n\t\"type\":\"object\",  \"properties\":{\"n\":{\"const\":12345678901234567890,\"description\":\"caf\\u00e9 \u00e9\"}}  }\n"
	s := mustCompile(t, raw)
	if got := string(s.Raw()); got != raw {
		t.Errorf("Raw() = %q, want %q", got, raw)
	}
	r := s.Raw()
	r[0] = 'X'
	if got := string(s.Raw()); got != raw {
		t.Errorf("Raw() changed after its result was modified: %q", got)
	}
	// The caller's slice is not kept either.
	in := []byte(`{"type":"object"}`)
	s2, err := CompileSchema(in)
	if err != nil {
		t.Fatal(err)
	}
	in[2] = 'X'
	if got := string(s2.Raw()); got != `{"type":"object"}` {
		t.Errorf("Raw() follows the caller's slice: %q", got)
	}
}

// IM-17: big numbers stay exact in the schema and in the arguments.
func TestIM17BigNumbersAreExact(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"n":{"const":12345678901234567890}}}`)
	if err := s.Validate(json.RawMessage(`{"n":12345678901234567890}`)); err != nil {
		t.Errorf("equal big number refused: %v", err)
	}
	got := fieldErrors(t, s.Validate(json.RawMessage(`{"n":12345678901234567891}`)))
	want := []FieldError{{Pointer: "/n", Message: "value must be 12345678901234567890"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("near big number (-want +got):\n%s", diff)
	}
}

// IM-17: no schema stands for {"type":"object"}.
func TestIM17DefaultSchema(t *testing.T) {
	for _, raw := range []json.RawMessage{nil, {}, json.RawMessage("  \n")} {
		s, err := CompileSchema(raw)
		if err != nil {
			t.Fatalf("CompileSchema(%q): %v", raw, err)
		}
		if got := string(s.Raw()); got != `{"type":"object"}` {
			t.Errorf("Raw() = %s, want the default", got)
		}
		if err := s.Validate(json.RawMessage(`{"any":1}`)); err != nil {
			t.Errorf("object refused: %v", err)
		}
		if err := s.Validate(json.RawMessage(`[1]`)); err == nil {
			t.Errorf("array accepted by the default object schema")
		}
	}
}

// IM-17: a draft-07 "$schema" is honoured: "definitions" with "$ref" and
// "dependencies" work, and the draft's own rules apply: keywords beside a
// "$ref" are ignored, "format" is asserted and "items" may be a tuple, none
// of which holds under 2020-12, the default.
func TestIM17Draft07IsHonoured(t *testing.T) {
	body := `"type":"object","definitions":{"name":{"type":"string","minLength":2}},` +
		`"properties":{"a":{"$ref":"#/definitions/name","maxLength":3},"m":{"format":"email"}},"dependencies":{"a":["b"]}`
	for _, id := range []string{
		"http://json-schema.org/draft-07/schema#",
		"http://json-schema.org/draft-07/schema",
		"https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft-07/schema",
	} {
		s := mustCompile(t, fmt.Sprintf(`{"$schema":%q,%s}`, id, body))
		got := fieldErrors(t, s.Validate(json.RawMessage(`{"a":"x"}`)))
		want := []FieldError{
			{Pointer: "", Message: "properties 'b' required, if 'a' exists"},
			{Pointer: "/a", Message: "minLength: got 1, want 2"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id, diff)
		}
		if err := s.Validate(json.RawMessage(`{"a":"xyzzy","b":0,"m":"a@example.com"}`)); err != nil {
			t.Errorf("%s: valid arguments refused: %v", id, err)
		}
		got = fieldErrors(t, s.Validate(json.RawMessage(`{"a":"xy","b":0,"m":"nope"}`)))
		if len(got) != 1 || got[0].Pointer != "/m" {
			t.Errorf("%s: format not asserted: %+v", id, got)
		}
	}
	// Without "$schema" the same document is 2020-12.
	s := mustCompile(t, "{"+body+"}")
	got := fieldErrors(t, s.Validate(json.RawMessage(`{"a":"xyzzy","b":0,"m":"nope"}`)))
	want := []FieldError{{Pointer: "/a", Message: "maxLength: got 5, want 3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("2020-12 (-want +got):\n%s", diff)
	}
	// Draft-07 tuple "items" is a compile error under 2020-12.
	tuple := `"type":"object","properties":{"t":{"type":"array","items":[{"type":"string"}],"additionalItems":false}}`
	s = mustCompile(t, `{"$schema":"http://json-schema.org/draft-07/schema#",`+tuple+`}`)
	got = fieldErrors(t, s.Validate(json.RawMessage(`{"t":["a",1]}`)))
	if len(got) != 1 || got[0].Pointer != "/t" {
		t.Errorf("draft-07 additionalItems: got %+v, want one error at /t", got)
	}
	if _, err := CompileSchema(json.RawMessage("{" + tuple + "}")); !errors.Is(err, ErrSchemaInvalid) {
		t.Errorf("tuple items under 2020-12: err = %v, want ErrSchemaInvalid", err)
	}
}

// IM-17: draft 2020-12 is the default: prefixItems, $defs and $ref.
func TestIM17Draft2020IsDefault(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{`+
		`"pair":{"type":"array","prefixItems":[{"type":"string"},{"$ref":"#/$defs/port"}],"items":false},`+
		`"ports":{"type":"array","items":{"$ref":"#/$defs/port"}}},`+
		`"$defs":{"port":{"type":"integer","minimum":1,"maximum":65535}}}`)
	got := fieldErrors(t, s.Validate(json.RawMessage(`{"pair":[1,0,"x"],"ports":[80,70000]}`)))
	want := []FieldError{
		{Pointer: "/pair/0", Message: "got number, want string"},
		{Pointer: "/pair/1", Message: "minimum: got 0, want 1"},
		{Pointer: "/pair/2", Message: "false schema"},
		{Pointer: "/ports/1", Message: "maximum: got 70,000, want 65,535"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := s.Validate(json.RawMessage(`{"pair":["a",443],"ports":[1,65535]}`)); err != nil {
		t.Errorf("valid arguments refused: %v", err)
	}
}

// IM-18: a schema that does not compile is refused with ErrSchemaInvalid and
// a reason, never replaced by something permissive.
func TestIM18InvalidSchemas(t *testing.T) {
	tests := []struct {
		name, raw, reason string
	}{
		{"bad type value", `{"type":"strnig"}`, "/type: value must be one of"},
		{"bad keyword type", `{"type":"object","required":"name"}`, "/required: got string, want array"},
		{"remote $ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, `"https://example.com/s.json"`},
		{"relative $ref", `{"$ref":"other.json"}`, "references outside the schema document are not followed"},
		{"file $ref", `{"$ref":"file:///etc/passwd"}`, `"file:///etc/passwd"`},
		{"unknown $schema", `{"$schema":"https://example.com/my-meta","type":"object"}`, `"https://example.com/my-meta"`},
		// Invalid ECMA-262, whichever engine would run it.
		{"unclosed lookahead", `{"type":"object","properties":{"a":{"type":"string","pattern":"(?=a"}}}`, "missing )"},
		{"nothing to repeat", `{"type":"object","properties":{"a":{"pattern":"(a)\\1**"}}}`, "pattern"},
		{"unclosed class in a lookbehind key", `{"type":"object","patternProperties":{"(?<=[x)y":{}}}`, "missing ]"},
		{"missing $ref target", `{"$ref":"#/$defs/nope"}`, "nope"},
		{"array", `[]`, "must be a JSON object, not an array"},
		{"string", `"object"`, "must be a JSON object, not a string"},
		{"true", `true`, "must be a JSON object, not a boolean"},
		{"null", `null`, "must be a JSON object, not null"},
		{"number", `1`, "must be a JSON object, not a number"},
		{"truncated", `{"type":`, "not valid JSON"},
		{"trailing data", `{"type":"object"} {}`, "not valid JSON"},
	}
	for _, tt := range tests {
		s, err := CompileSchema(json.RawMessage(tt.raw))
		if s != nil || !errors.Is(err, ErrSchemaInvalid) {
			t.Errorf("%s: CompileSchema = %v, %v; want nil, ErrSchemaInvalid", tt.name, s, err)
			continue
		}
		if errors.Is(err, ErrDangerousPattern) {
			t.Errorf("%s: %v matches ErrDangerousPattern", tt.name, err)
		}
		if !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%s: error %q does not say %q", tt.name, err, tt.reason)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", tt.name, err)
		}
	}
}

// IM-19: a schema that compiles but carries a dangerous pattern is refused;
// the error is the screen's, so callers can say where and why.
func TestIM19CompileRefusesDangerousPatterns(t *testing.T) {
	raw := `{"type":"object","properties":{"ok":{"pattern":"^[a-z]+$"},"x":{"type":"string","pattern":"(a|a)*"}}}`
	s, err := CompileSchema(json.RawMessage(raw))
	if s != nil {
		t.Fatalf("CompileSchema returned a schema")
	}
	var dpe *DangerousPatternError
	if !errors.As(err, &dpe) {
		t.Fatalf("err = %T %v, want *DangerousPatternError", err, err)
	}
	if dpe.Pointer != "/properties/x/pattern" || dpe.Pattern != "(a|a)*" {
		t.Errorf("got %+v", dpe)
	}
	if !errors.Is(err, ErrDangerousPattern) || !errors.Is(err, ErrSchemaInvalid) {
		t.Errorf("errors.Is: dangerous %v, invalid %v; want both", errors.Is(err, ErrDangerousPattern), errors.Is(err, ErrSchemaInvalid))
	}
}

// IM-19: patterns reached through references the document walk cannot
// resolve on its own ("$id"-relative, or relative to a nested resource) are
// screened from what the compiler resolved.
func TestIM19CompileScreensResolvedReferences(t *testing.T) {
	tests := []struct{ name, raw, pointer string }{
		{"absolute $id reference into data",
			`{"$id":"https://x.example/root","type":"object","$defs":{"a b":{"const":{"type":"string","pattern":"(a+)+$"}}},` +
				`"properties":{"p":{"$ref":"https://x.example/root#/$defs/a%20b/const"}}}`,
			"/$defs/a b/const/pattern"},
		{"reference relative to a nested resource",
			`{"$id":"https://x.example/root","type":"object","$defs":{"sub":{"$id":"sub.json","$defs":{"d":{"const":{"patternProperties":{"^(\\w+\\s?)*$":{}}}}},"$ref":"#/$defs/d/const"}},` +
				`"properties":{"q":{"$ref":"sub.json"}}}`,
			`/$defs/sub/$defs/d/const/patternProperties/^(\w+\s?)*$`},
	}
	for _, tt := range tests {
		if found := ScreenSchema(json.RawMessage(tt.raw)); len(found) != 0 {
			t.Logf("%s: the document walk found it too: %v", tt.name, found[0])
		}
		_, err := CompileSchema(json.RawMessage(tt.raw))
		var dpe *DangerousPatternError
		if !errors.As(err, &dpe) || dpe.Pointer != tt.pointer {
			t.Errorf("%s: CompileSchema error = %v; want a dangerous pattern at %s", tt.name, err, tt.pointer)
		}
	}
}

// IM-17: validation errors point into the arguments with RFC 6901 pointers,
// sorted, and render as "pointer: message; ...".
func TestIM17ValidationErrorPointers(t *testing.T) {
	s := mustCompile(t, `{"type":"object","required":["z"],"properties":{`+
		`"a/b":{"type":"string"},"t~x":{"type":"integer"},`+
		`"items":{"type":"array","items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}}}}`)
	err := s.Validate(json.RawMessage(`{"items":[{"name":"x"},{"name":"y"},{"name":2},{}],"a/b":1,"t~x":"s"}`))
	got := fieldErrors(t, err)
	want := []FieldError{
		{Pointer: "", Message: "missing property 'z'"},
		{Pointer: "/a~1b", Message: "got number, want string"},
		{Pointer: "/items/2/name", Message: "got number, want string"},
		{Pointer: "/items/3", Message: "missing property 'name'"},
		{Pointer: "/t~0x", Message: "got string, want integer"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	const msg = "/: missing property 'z'; /a~1b: got number, want string; " +
		"/items/2/name: got number, want string; /items/3: missing property 'name'; /t~0x: got string, want integer"
	if err.Error() != msg {
		t.Errorf("Error() = %q\nwant      %q", err.Error(), msg)
	}
}

// IM-17: every failing branch of anyOf is listed, once.
func TestIM17ValidationErrorLeaves(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]},"w":{"allOf":[{"minimum":3},{"minimum":3}]}}}`)
	got := fieldErrors(t, s.Validate(json.RawMessage(`{"v":true,"w":1}`)))
	want := []FieldError{
		{Pointer: "/v", Message: "got boolean, want number"},
		{Pointer: "/v", Message: "got boolean, want string"},
		{Pointer: "/w", Message: "minimum: got 1, want 3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// IM-17: arguments that are not JSON are refused at the root; empty
// arguments are {}.
func TestIM17ArgumentsEdgeCases(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	got := fieldErrors(t, s.Validate(json.RawMessage(`{"q":`)))
	if len(got) != 1 || got[0].Pointer != "" || !strings.HasPrefix(got[0].Message, "arguments are not valid JSON") {
		t.Errorf("truncated JSON: got %+v", got)
	}
	if err := s.Validate(json.RawMessage(`{"q":"a"} x`)); err == nil {
		t.Errorf("trailing garbage accepted")
	}
	for _, empty := range []json.RawMessage{nil, {}, json.RawMessage(" ")} {
		got := fieldErrors(t, s.Validate(empty))
		want := []FieldError{{Pointer: "", Message: "missing property 'q'"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("empty arguments %q (-want +got):\n%s", empty, diff)
		}
	}
	if got := s.Validate(json.RawMessage(`null`)); got == nil {
		t.Errorf("null arguments accepted by an object schema")
	}
	if msg := (&ValidationError{}).Error(); msg == "" {
		t.Errorf("empty ValidationError has no message")
	}
}

// IM-17: patterns are ECMA-262 and are enforced with that meaning.
func TestIM17PatternsAreECMA(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"c":{"type":"string","pattern":"^[\\u0020-\\u007E]*$"},"any":{"pattern":"^[^]$"}},"patternProperties":{"^x-\\u0041$":{"type":"integer"}}}`)
	if err := s.Validate(json.RawMessage(`{"c":"plain ascii","any":"\n","x-A":1}`)); err != nil {
		t.Errorf("valid arguments refused: %v", err)
	}
	got := fieldErrors(t, s.Validate(json.RawMessage(`{"c":"caf\u00e9","x-A":"one"}`)))
	want := []FieldError{
		{Pointer: "/c", Message: `'café' does not match pattern '^[\\u0020-\\u007E]*$'`},
		{Pointer: "/x-A", Message: "got string, want integer"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// IM-17: a compiled schema is shared by concurrent calls.
func TestIM17ConcurrentValidate(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer","maximum":10},"s":{"pattern":"^[a-z]+$"}}}`)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				args := fmt.Sprintf(`{"n":%d,"s":"abc"}`, (i+j)%20)
				err := s.Validate(json.RawMessage(args))
				if ((i+j)%20 > 10) != (err != nil) {
					t.Errorf("%s: err = %v", args, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if !bytes.Equal(s.Raw(), []byte(`{"type":"object","properties":{"n":{"type":"integer","maximum":10},"s":{"pattern":"^[a-z]+$"}}}`)) {
		t.Errorf("Raw changed")
	}
}

// IM-18: schemas come from upstreams; none may crash compilation, the
// screen or validation.
func FuzzCompileSchema(f *testing.F) {
	for _, dir := range []string{"benign", "evil"} {
		files, err := filepath.Glob(filepath.Join(schematest.Corpus(), dir, "*.json"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			raw, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw, []byte(`{"path":"a","n":1}`))
		}
	}
	f.Fuzz(func(t *testing.T, raw, args []byte) {
		s, err := CompileSchema(raw)
		if err != nil {
			if !errors.Is(err, ErrSchemaInvalid) {
				t.Fatalf("error does not wrap ErrSchemaInvalid: %v", err)
			}
			return
		}
		if !bytes.Equal(s.Raw(), raw) && len(bytes.TrimSpace(raw)) > 0 {
			t.Fatalf("Raw() = %q, want %q", s.Raw(), raw)
		}
		if err := s.Validate(args); err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Errors) == 0 {
				t.Fatalf("Validate error %T %v", err, err)
			}
		}
	})
}

// IM-17, IM-18: valid ECMA-262 patterns that RE2 cannot run compile, and
// the schema enforces what they say: lookarounds, backreferences, and
// ajv-formats' duration, url and hostname (ajv-formats 3.0.1, whose url and
// hostname are case-insensitive there; a schema pattern has no flags).
func TestIM17ECMAPatternsAreEnforced(t *testing.T) {
	const (
		duration = `^P(?!$)((\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?|(\d+W)?)$`
		url      = `^(?:https?|ftp):\/\/(?:\S+(?::\S*)?@)?(?:(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))|(?:(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)(?:\.(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)*(?:\.(?:[a-z\u{00a1}-\u{ffff}]{2,})))(?::\d{2,5})?(?:\/[^\s]*)?$`
		hostname = `^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?$`
	)
	tests := []struct {
		name, pattern string
		valid         []string
		invalid       []string
	}{
		{"negative lookahead", `^(?!\$)`, []string{"price", ""}, []string{"$ref", "$"}},
		{"no surrounding blanks", `^(?!\s)(?:.*\S)?$`, []string{"", "a", "two words"}, []string{" a", "a ", "\ta", "a\n"}},
		{"lookbehind", `^[a-z]+(?<!_tmp)$`, []string{"table", "tmp"}, []string{"table_tmp", "Table"}},
		{"backreference", `^(['"])[^'"]*\1$`, []string{`"x"`, `'y'`}, []string{`"x'`, `x`}},
		{"named backreference", `^(?<tag>[a-z]+)>.*</\k<tag>$`, []string{"b>x</b"}, []string{"b>x</i"}},
		{"ajv-formats duration", duration, []string{"P1Y2M3DT4H5M6S", "PT1S", "P2W"}, []string{"P", "PT", "P1H", "1Y"}},
		{"ajv-formats url", url, []string{"https://example.com/a?b=c", "ftp://user:pw@files.example.org:2121", "http://8.8.8.8"},
			[]string{"http://10.0.0.1", "http://192.168.1.1/", "https://localhost", "mailto:a@b.c", "https://exa mple.com"}},
		{"ajv-formats hostname", hostname, []string{"example.com", "a.b-c.d", "localhost", "xn--bcher-kva.example."},
			[]string{"-bad.com", "bad-.com", "a..b", strings.Repeat("a", 64) + ".com", strings.Repeat("abcdefghi.", 26)}},
	}
	for _, tt := range tests {
		raw, err := json.Marshal(map[string]any{
			"type":       "object",
			"properties": map[string]any{"v": map[string]any{"type": "string", "pattern": tt.pattern}},
		})
		if err != nil {
			t.Fatal(err)
		}
		s, err := CompileSchema(raw)
		if err != nil {
			t.Errorf("%s: CompileSchema: %v", tt.name, err)
			continue
		}
		for _, v := range tt.valid {
			args, _ := json.Marshal(map[string]string{"v": v})
			if err := s.Validate(args); err != nil {
				t.Errorf("%s: %q refused: %v", tt.name, v, err)
			}
		}
		for _, v := range tt.invalid {
			args, _ := json.Marshal(map[string]string{"v": v})
			if err := s.Validate(args); err == nil {
				t.Errorf("%s: %q accepted", tt.name, v)
			}
		}
	}
}

// IM-17, IM-19: the screen still runs first: a dangerous pattern that only a
// backtracking engine can run is refused as dangerous, not compiled.
func TestIM19ScreenRunsBeforeBacktracker(t *testing.T) {
	_, err := CompileSchema(json.RawMessage(`{"properties":{"v":{"pattern":"^(?!x)(\\w+\\s?)*$"}}}`))
	var dpe *DangerousPatternError
	if !errors.As(err, &dpe) || dpe.Pointer != "/properties/v/pattern" {
		t.Errorf("CompileSchema = %v; want a DangerousPatternError at /properties/v/pattern", err)
	}
}
