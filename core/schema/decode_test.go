package schema

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var instanceSeeds = []string{
	`{}`, `[]`, `{"text":"the quick brown fox"}`, ` { "a" : [ 1 , -2.5e+3 , 0 , 0.0, 1E9 ] , "b" : { } } `,
	`{"a":1,"a":2}`, `{"n":12345678901234567890}`, `{"s":"caf\u00e9"}`, `{"s":"café"}`, "{\"s\":\"\xff\"}",
	`{"s":"tab\there"}`, "{\"s\":\"raw\ttab\"}", `{"t":true,"f":false,"z":null}`, `"just a string"`, `42`,
	`01`, `-`, `1.`, `.5`, `1e`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1} x`, `truex`, `nul`, ``, `   `,
	`{"deep":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`{"emoji":"😀","k😀":"v"}`, `[true,false,null,"",{"":""}]`, `{"a":-0,"b":-0.0e-0}`,
}

// TestDecodeInstanceMatchesLibrarySV4 pins the one-pass decoder of call
// arguments to jsonschema.UnmarshalJSON: the same values, and an error
// wherever the library gives one (SV-4 validates what the library reads).
func TestDecodeInstanceMatchesLibrarySV4(t *testing.T) {
	for _, doc := range instanceSeeds {
		checkInstance(t, []byte(doc))
	}
}

// FuzzDecodeInstance: the same equality (SV-4) on any bytes.
func FuzzDecodeInstance(f *testing.F) {
	for _, doc := range instanceSeeds {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) { checkInstance(t, doc) })
}

func checkInstance(t *testing.T, doc []byte) {
	t.Helper()
	want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	got, gotErr := decodeInstance(doc)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: error %v, library's %v", doc, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %#v, library %#v", doc, got, want)
	}
}
