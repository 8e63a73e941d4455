package review

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core/canonjson"
)

func TestRV1FingerprintFormat(t *testing.T) {
	// The canonical document is spelled out here, so a change to the
	// encoding (member names, order, escaping) fails this test rather than
	// silently invalidating every stored approval.
	canon := `{"annotations":{"readOnlyHint":true},"description":"Adds <a> & <b>","inputSchema":{"properties":{"a":{"type":"integer"}},"type":"object"},"remoteName":"add"}`
	sum := sha256.Sum256([]byte(canon))
	want := "sha256:" + hex.EncodeToString(sum[:])
	got := Fingerprint("add", "Adds <a> & <b>",
		json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`),
		json.RawMessage(`{"readOnlyHint":true}`))
	if got != want {
		t.Errorf("RV-1 Fingerprint = %s, want %s (sha256 of %s)", got, want, canon)
	}
}

func TestRV1FingerprintIgnoresLayout(t *testing.T) {
	base := Fingerprint("search", "Search things.",
		json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"query"},"n":{"type":"integer","maximum":10}},"required":["q"]}`),
		json.RawMessage(`{"readOnlyHint":true,"title":"Search"}`))
	same := []struct {
		name                string
		schema, annotations string
	}{
		{"keys reordered", `{"required":["q"],"properties":{"n":{"maximum":10,"type":"integer"},"q":{"description":"query","type":"string"}},"type":"object"}`, `{"title":"Search","readOnlyHint":true}`},
		{"indented", "{\n  \"type\": \"object\",\n  \"properties\": {\n    \"q\": {\"type\": \"string\", \"description\": \"query\"},\n    \"n\": {\"type\": \"integer\", \"maximum\": 10}\n  },\n  \"required\": [\"q\"]\n}\n", " {\"readOnlyHint\" : true , \"title\":\"Search\"} "},
		{"escapes spelled differently", `{"type":"object","properties":{"q":{"type":"string","description":"\u0071uery"},"n":{"type":"integer","maximum":10}},"required":["q"]}`, `{"readOnlyHint":true,"title":"\u0053earch"}`},
	}
	for _, tt := range same {
		if got := Fingerprint("search", "Search things.", json.RawMessage(tt.schema), json.RawMessage(tt.annotations)); got != base {
			t.Errorf("RV-1 %s: fingerprint changed: %s, want %s", tt.name, got, base)
		}
	}
}

func TestRV1FingerprintChanges(t *testing.T) {
	const (
		name   = "send_email"
		desc   = "Send an email."
		schema = `{"type":"object","properties":{"to":{"type":"string","default":"a@example.com"}}}`
		ann    = `{"destructiveHint":false}`
	)
	base := Fingerprint(name, desc, json.RawMessage(schema), json.RawMessage(ann))
	changed := []struct {
		name                      string
		remote, desc, schema, ann string
	}{
		{"remote name", "send_mail", desc, schema, ann},
		{"one zero-width character", name, "Send an\u200b email.", schema, ann},
		{"trailing space", name, desc + " ", schema, ann},
		{"schema default", name, desc, strings.Replace(schema, "a@example.com", "b@example.com", 1), ann},
		{"schema keyword added", name, desc, `{"type":"object","properties":{"to":{"type":"string","default":"a@example.com"}},"minProperties":1}`, ann},
		{"annotation value", name, desc, schema, `{"destructiveHint":true}`},
		{"annotations dropped", name, desc, schema, ""},
		{"schema dropped", name, desc, "", ann},
		{"description moved into the name", name + desc, "", schema, ann},
	}
	seen := map[string]string{base: "base"}
	for _, tt := range changed {
		got := Fingerprint(tt.remote, tt.desc, json.RawMessage(tt.schema), json.RawMessage(tt.ann))
		if prev, ok := seen[got]; ok {
			t.Errorf("RV-1 %s: fingerprint %s equals that of %s", tt.name, got, prev)
		}
		seen[got] = tt.name
	}
	// Numbers are kept as written: 100 and 1e2 are different texts to a
	// model, and a schema that switches between them has changed.
	if Fingerprint(name, desc, json.RawMessage(`{"maximum":100}`), nil) == Fingerprint(name, desc, json.RawMessage(`{"maximum":1e2}`), nil) {
		t.Error("RV-1 100 and 1e2 share a fingerprint")
	}
}

func TestRV1FingerprintAbsentIsNull(t *testing.T) {
	want := Fingerprint("t", "d", json.RawMessage("null"), json.RawMessage("null"))
	for _, raw := range []string{"", "  ", "null", " null\n"} {
		if got := Fingerprint("t", "d", json.RawMessage(raw), json.RawMessage(raw)); got != want {
			t.Errorf("RV-1 schema %q: %s, want the null fingerprint %s", raw, got, want)
		}
	}
	if got := Fingerprint("t", "d", nil, nil); got != want {
		t.Errorf("RV-1 nil schema: %s, want %s", got, want)
	}
	if Fingerprint("t", "d", json.RawMessage("{}"), nil) == want {
		t.Error("RV-1 an empty object schema must differ from an absent one")
	}
}

func TestRV1FingerprintInvalidSchema(t *testing.T) {
	bad := json.RawMessage(`{"type":"object"`)
	a := Fingerprint("t", "d", bad, nil)
	if a != Fingerprint("t", "d", bad, nil) {
		t.Error("RV-1 fingerprint of an invalid schema is not stable")
	}
	if a == Fingerprint("t", "d", json.RawMessage(`{"type":"object" `), nil) {
		t.Error("RV-1 two different invalid schemas share a fingerprint")
	}
	// The fallback member cannot be imitated by a valid schema.
	for _, valid := range []string{`{"type":"object"}`, `"{\"type\":\"object\""`, `null`} {
		if a == Fingerprint("t", "d", json.RawMessage(valid), nil) {
			t.Errorf("RV-1 invalid schema shares a fingerprint with %s", valid)
		}
	}
	if Fingerprint("t", "d", nil, json.RawMessage(`{`)) == Fingerprint("t", "d", json.RawMessage(`{`), nil) {
		t.Error("RV-1 invalid annotations and an invalid schema share a fingerprint")
	}
}

func TestRV1CanonicalJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":{"d":[3,{"z":1,"y":2}],"c":null}}`, `{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}`},
		{" [ 1 , true , false , null , \"x\" ] ", `[1,true,false,null,"x"]`},
		{`12345678901234567890`, `12345678901234567890`},
		{`{"n":1.50,"e":1e400,"neg":-0}`, `{"e":1e400,"n":1.50,"neg":-0}`},
		{`"<IMPORTANT> & \u003c"`, `"<IMPORTANT> & <"`},
		{`"\u00e9\u200b\ud83d\ude00\n\t\"\\"`, "\"é\u200b😀\\n\\t\\\"\\\\\""},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"é":1,"e":2,"Z":3}`, `{"Z":3,"e":2,"é":1}`},
		{`{}`, `{}`},
		{`[]`, `[]`},
	}
	for _, tt := range tests {
		got, err := canonjson.CanonicalJSON(json.RawMessage(tt.in))
		if err != nil {
			t.Errorf("CanonicalJSON(%s): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("CanonicalJSON(%s) = %s, want %s", tt.in, got, tt.want)
		}
		again, err := canonjson.CanonicalJSON(got)
		if err != nil || string(again) != string(got) {
			t.Errorf("CanonicalJSON is not idempotent on %s: %s, %v", got, again, err)
		}
	}
}

func TestRV1CanonicalJSONInvalid(t *testing.T) {
	for _, in := range []string{``, `   `, `{`, `{"a":}`, `[1,]`, `{"a":1} {"b":2}`, `1 2`, `nul`, `01`, `{'a':1}`, "\"\x00\""} {
		got, err := canonjson.CanonicalJSON(json.RawMessage(in))
		if err == nil {
			t.Errorf("CanonicalJSON(%q) = %s, want an error", in, got)
			continue
		}
		if !errors.Is(err, canonjson.ErrInvalidJSON) {
			t.Errorf("CanonicalJSON(%q): %v does not wrap ErrInvalidJSON", in, err)
		}
	}
}

func TestRV1CanonicalJSONDeep(t *testing.T) {
	deep := strings.Repeat(`{"a":[`, 2000) + `1` + strings.Repeat(`]}`, 2000)
	got, err := canonjson.CanonicalJSON(json.RawMessage(deep))
	if err != nil || string(got) != deep {
		t.Errorf("deeply nested document: %v", err)
	}
}
