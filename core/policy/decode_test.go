package policy

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// decodeSame checks decodeFast against decodeJSON on raw: where the fast
// reader answers, encoding/json reads the same object; where encoding/json
// refuses or reads no object, the fast reader does not answer.
func decodeSame(t *testing.T, raw string) (fast bool) {
	t.Helper()
	got, ok := decodeFast([]byte(raw))
	want, err := decodeJSON([]byte(raw))
	wantMap, isMap := want.(map[string]any)
	if !ok {
		return false
	}
	if err != nil || !isMap {
		t.Fatalf("%q: the fast reader read %v where encoding/json gives %v, %v", raw, got, want, err)
	}
	if !reflect.DeepEqual(got, wantMap) {
		t.Fatalf("%q: the fast reader read %#v, encoding/json %#v", raw, got, wantMap)
	}
	return true
}

// The fast reader of arguments reads what encoding/json reads, and
// leaves to it everything it does not read itself: generated objects with
// every kind of value, spacing and number, and inputs that are no JSON
// object (PO-1).
func TestDecodeFast(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	numbers := []string{"0", "-0", "7", "-12", "3.25", "-0.5", "1e3", "1E-2", "2.5e+10", "9223372036854775807",
		"9223372036854775808", "-9223372036854775809", "123456789012345678901234567890", "1e400", "0.1", "10"}
	strs := []string{`""`, `"a"`, `"dé"`, `"日本"`, `"a b"`, `"\u00e9"`, `"a\"b"`, `"tab\tx"`, `"emoji 🙂"`, `"x\/y"`}
	space := func() string { return []string{"", "", " ", "\n\t ", "\r\n"}[rng.IntN(5)] }
	var value func(depth int) string
	value = func(depth int) string {
		switch k := rng.IntN(9); {
		case k < 2 && depth < 4:
			var parts []string
			for range rng.IntN(4) {
				parts = append(parts, space()+strs[rng.IntN(len(strs))]+space()+":"+space()+value(depth+1)+space())
			}
			return "{" + strings.Join(parts, ",") + space() + "}"
		case k < 3 && depth < 4:
			var parts []string
			for range rng.IntN(4) {
				parts = append(parts, space()+value(depth+1)+space())
			}
			return "[" + strings.Join(parts, ",") + space() + "]"
		case k < 5:
			return numbers[rng.IntN(len(numbers))]
		case k < 7:
			return strs[rng.IntN(len(strs))]
		}
		return []string{"true", "false", "null"}[rng.IntN(3)]
	}
	fast := 0
	for range 3000 {
		var parts []string
		for range rng.IntN(5) {
			parts = append(parts, space()+strs[rng.IntN(len(strs))]+space()+":"+space()+value(0)+space())
		}
		if decodeSame(t, space()+"{"+strings.Join(parts, ",")+"}"+space()) {
			fast++
		}
	}
	if fast < 500 {
		t.Fatalf("the fast reader read only %d of 3000 generated objects", fast)
	}
	for _, raw := range []string{`{"a":1}`, `{}`, ` { } `, `{"a":[],"b":{},"c":[1,"x",null]}`, `{"a":1,"a":2}`,
		`{"message":"toolgate bench: the quick brown fox"}`} {
		if !decodeSame(t, raw) {
			t.Errorf("%q: the fast reader did not read it", raw)
		}
	}
	for _, raw := range []string{``, ` `, `[1]`, `"x"`, `1`, `null`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":+1}`, `{"a":tru}`, `{"a":truex}`, `{"a":nul}`,
		`{"a":1}x`, `{"a":1}{}`, `{a:1}`, "{\"a\":\"x\ny\"}", "{\"a\xff\":1}", `{"a":"\q"}`, `{"a":[1,]}`, `{"a":[1 2]}`,
		`{"a":NaN}`, `{"a":Infinity}`, `{'a':1}`, `{"a":1}` + strings.Repeat(" ", 3) + `,`,
		strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)} {
		decodeSame(t, raw)
	}
}

// FuzzDecodeFast runs the same check on any input (go test -fuzz).
func FuzzDecodeFast(f *testing.F) {
	for _, seed := range []string{`{"a":1}`, `{"a":[1,2.5,"x",{"b":null}],"c":true}`, `{"a":"\u00e9"}`, `{"a":-0.0e-0}`, fmt.Sprint(`{"n":`, 1<<62, `}`)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) { decodeSame(t, raw) })
}
