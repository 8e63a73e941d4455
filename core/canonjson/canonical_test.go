package canonjson

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core/schema/schematest"
)

// canonicalCases are documents appendCanonical takes itself and ones it
// must leave to canonicalDecoded.
var canonicalCases = []string{
	`{}`, `[]`, `{"a":1}`, ` { "b" : [ 1 , 2.5e-3 , -0 , true , false , null ] , "a" : {"y":"", "x":{}} } `,
	`{"a!":1,"a":2}`, `{"a b":1,"a":2,"A":3,"é":4,"z":5}`, `{"message":"toolgate bench: the quick brown fox"}`,
	`{"a":1,"a":2}`, `{"a":"\u0041"}`, `{"a\u0041":1}`, `{"a":"x\ny"}`, `{"a":"<&>"}`, "{\"a\":\"\u2028\"}",
	"{\"a\":\"\xff\"}", "{\"a\":\"\x7f\"}", `{"n":12345678901234567890,"f":1.0,"e":1E+2}`,
	`01`, `1.`, `-`, `1e`, `.5`, `+1`, `tru`, `truex`, `nul`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1 "b":2}`,
	`{"a":1}x`, `{"a":1} {}`, ``, ` `, `"str"`, `"\"`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`{"confirm":true,"confirmToken":"x","id":7}`, `{"conf\u0069rm":true}`,
}

// checkCanonical: where the one-pass form answers, it is the decoded form
// byte for byte; CanonicalJSON agrees with the decoded form, errors too.
func checkCanonical(t *testing.T, doc string) {
	t.Helper()
	want, wantErr := canonicalDecoded(json.RawMessage(doc))
	if fast, ok := appendCanonical(nil, []byte(doc)); ok && (wantErr != nil || !bytes.Equal(fast, want)) {
		t.Errorf("%q: one pass %q, decoded %q (%v)", doc, fast, want, wantErr)
	}
	got, err := CanonicalJSON(json.RawMessage(doc))
	if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
		t.Errorf("%q: CanonicalJSON %q (%v), decoded %q (%v)", doc, got, err, want, wantErr)
	}
}

// RV-1, OP-6: fingerprints and audited argument hashes are what they were
// before CanonicalJSON took documents apart in one pass.
func TestCanonicalJSONOnePassMatchesDecoded(t *testing.T) {
	for _, c := range canonicalCases {
		checkCanonical(t, c)
	}
	files, _ := filepath.Glob(filepath.Join(schematest.Corpus(), "*", "*.json"))
	if len(files) == 0 {
		t.Fatal("no schema corpus")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkCanonical(t, string(b))
	}
	for _, c := range []string{`{"a":1}`, `{"b":1,"a":[1,{"d":2,"c":3}]}`, `[]`, `"s"`, `1`} {
		if _, ok := appendCanonical(nil, []byte(c)); !ok {
			t.Errorf("%s: the one-pass form refused a plain document", c)
		}
	}
	if n := strings.Count(canonicalCases[len(canonicalCases)-3], "["); n <= maxCanonDepth {
		t.Fatalf("the deep case is only %d deep", n)
	}
}

// Covers RV-1, OP-6.
func FuzzCanonicalJSON(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add(c)
	}
	f.Fuzz(checkCanonical)
}
