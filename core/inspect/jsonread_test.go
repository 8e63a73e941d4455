package inspect

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/core/jsontree"
)

// treeRead is what readStrings replaces: the document decoded whole into a
// tree, then the strings a check reads taken from it.
func treeRead(raw []byte, everyString bool) ([]textAt, error) {
	root, err := jsontree.DecodeJSONTree(raw)
	if err != nil {
		return nil, err
	}
	var out []textAt
	if everyString {
		treeStrings(root, "", &out)
	} else {
		treeResultStrings(root, &out)
	}
	return out, nil
}

// fastRead is readStrings' own reader alone, without the tree to fall back
// on: ok false where it leaves the document to the tree.
func fastRead(raw []byte, everyString bool) (out []textAt, ok bool) {
	r := jsonReader{raw: raw}
	r.space()
	m := readResult
	if everyString {
		m = readAll
	}
	if !r.value(m, "") {
		return nil, false
	}
	r.space()
	return r.out, r.i == len(raw)
}

// jsonStrings are string bodies as they appear between quotes in JSON:
// escapes of every kind, surrogate pairs whole, cut and reversed, text
// that is not UTF-8.
var jsonStrings = []string{
	``, `plain`, `mail ops@example.com`, `a\nb\tc\r\\d\/e\"f\bg\fh`, `\u003cb\u003e \u0026`, `\u00e9t\u00C9`,
	`\ud83d\ude00 smile`, `\ud83d alone`, `\ude00 low alone`, `\ud83d\u0041`, `\ude00\ud83d`, `\uD83D\uDE00`,
	"caf\xc3\xa9", "bad \xff\xfe bytes", "cut \xe2\x82", "surrogate \xed\xa0\x80 in utf-8", "\xef\xbf\xbd ok",
	`\u0000`, `日本語 テキスト`, `~tilde/slash`, `content`, `text`, `resource`, `structuredContent`, `te\u0078t`, `cont\u0065nt`,
}

// badStrings are not JSON strings' bodies: escapes JSON does not have,
// control characters, a quote escaped away.
var badStrings = []string{`\u12`, `\u12G4`, `\x41`, `\'`, "tab\there", "nl\nraw", `ends with \`}

// numbers are JSON's numbers and literals, and things that are not.
var numbers = []string{"0", "-1", "12.5", "1e9", "-0.0E+2", "true", "false", "null", "2E-3", "123456789012345678901234567890"}
var badNumbers = []string{"01", "1.", "-", ".5", "1e", "nul", "tru", "+1", "0x10", "NaN"}

// genJSON writes a random document shaped like a CallToolResult (or
// anything) with the strings above in keys and values.
func genJSON(rng *rand.Rand, b *strings.Builder, depth int) {
	str := func() {
		b.WriteByte('"')
		b.WriteString(pick(rng, jsonStrings, badStrings))
		b.WriteByte('"')
	}
	ws := func() {
		if rng.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t", "\r\n  "}[rng.IntN(4)])
		}
	}
	ws()
	k := rng.IntN(10)
	if depth > 5 {
		k = 5 + rng.IntN(5)
	}
	switch {
	case k < 3:
		b.WriteByte('{')
		for i := range rng.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			switch rng.IntN(3) {
			case 0:
				str()
			default:
				b.WriteString(`"` + []string{"content", "text", "resource", "structuredContent", "type", "_meta", "isError", "uri"}[rng.IntN(8)] + `"`)
			}
			ws()
			b.WriteByte(':')
			genJSON(rng, b, depth+1)
		}
		ws()
		b.WriteByte('}')
	case k < 5:
		b.WriteByte('[')
		for i := range rng.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			genJSON(rng, b, depth+1)
		}
		ws()
		b.WriteByte(']')
	case k < 8:
		str()
	default:
		b.WriteString(pick(rng, numbers, badNumbers))
	}
	ws()
}

// pick is one of good, or one in fifty times one of bad.
func pick(rng *rand.Rand, good, bad []string) string {
	if rng.IntN(50) == 0 {
		return bad[rng.IntN(len(bad))]
	}
	return good[rng.IntN(len(good))]
}

// documents are the texts to compare on: the review corpora (JSON of
// every shape), generated documents, and each of those damaged by a
// byte changed, removed or added, cut short or given data after it.
func documents(t *testing.T) [][]byte {
	var docs [][]byte
	files, _ := filepath.Glob("../../testdata/review/*/*.json")
	more, _ := filepath.Glob("testdata/*.json")
	for _, f := range append(files, more...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, raw)
	}
	rng := rand.New(rand.NewPCG(5, 8))
	for range 4000 {
		var b strings.Builder
		if rng.IntN(2) == 0 {
			// A result's own shape, so that the content's strings are read.
			b.WriteString(`{"content":[`)
			for i := range 1 + rng.IntN(3) {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"type":"text","text":"` + pick(rng, jsonStrings, badStrings) + `"`)
				if rng.IntN(2) == 0 {
					b.WriteString(`,"resource":`)
					genJSON(rng, &b, 3)
				}
				b.WriteByte('}')
			}
			b.WriteString(`],"structuredContent":`)
			genJSON(rng, &b, 2)
			b.WriteString(`,"_meta":`)
			genJSON(rng, &b, 4)
			b.WriteByte('}')
		} else {
			genJSON(rng, &b, 0)
		}
		docs = append(docs, []byte(b.String()))
	}
	damaged := make([][]byte, 0, len(docs))
	for _, d := range docs {
		if len(d) == 0 {
			continue
		}
		x := append([]byte(nil), d...)
		i := rng.IntN(len(x))
		switch rng.IntN(5) {
		case 0:
			x[i] = `{}[]",:\ae0-"`[rng.IntN(13)]
		case 1:
			x = append(x[:i], x[i+1:]...)
		case 2:
			x = append(x[:i], append([]byte{`{}[]",:\ue`[rng.IntN(10)]}, x[i:]...)...)
		case 3:
			x = x[:i]
		case 4:
			x = append(x, []string{" ", " x", "{}", " 1", "]", `"`, " \"a", "\n\t"}[rng.IntN(8)]...)
		}
		damaged = append(damaged, x)
	}
	docs = append(docs, damaged...)
	deep := strings.Repeat("[", fastMaxDepth) + `"deep"` + strings.Repeat("]", fastMaxDepth)
	deeper := strings.Repeat(`{"a":`, fastMaxDepth+5) + `"deeper"` + strings.Repeat("}", fastMaxDepth+5)
	tooDeep := strings.Repeat("[", 10002) + `"x"` + strings.Repeat("]", 10002) // the tree decoder's own bound
	for _, s := range []string{``, ` `, `{}`, `[]`, `""`, `"top"`, `{} x`, `{}{}`, `{} 1`, `{"a":1,}`, `[1,]`, `{,}`, "\ufeff{}",
		`{"content":[{"text":"a"}],"content":[{"text":"b"}]}`, `{"content":{"text":"not an array"}}`, `{"content":["s",1,{"text":5},{"text":"t"}]}`,
		`{"content":[{"resource":{"text":"r","text":"r2"},"resource":"s"}]}`, deep, deeper, tooDeep, `{"a" : [ 1 , 2 ] , "b":{ }}`, `{"a":1}  `, "  \n{}"} {
		docs = append(docs, []byte(s))
	}
	return docs
}

// readStrings accepts and refuses what the tree decoder does and reads the
// same strings at the same pointers, in the same order, for a result and
// for every string (IN-1); and its own reader takes most documents whole,
// so the comparison is not all of the tree against itself.
func TestReadStringsExactIN1(t *testing.T) {
	docs := documents(t)
	taken, refused := 0, 0
	for _, raw := range docs {
		for _, every := range []bool{false, true} {
			got, err := readStrings(raw, every)
			want, wantErr := treeRead(raw, every)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("every=%v %.200q: error %v, the tree's %v", every, raw, err, wantErr)
			}
			if wantErr != nil {
				refused++
				continue
			}
			if d := cmp.Diff(want, got, cmp.AllowUnexported(textAt{})); d != "" {
				t.Fatalf("every=%v %.200q (-tree +read):\n%s", every, raw, d)
			}
			if fast, ok := fastRead(raw, every); ok {
				taken++
				if d := cmp.Diff(want, fast, cmp.AllowUnexported(textAt{})); d != "" {
					t.Fatalf("every=%v %.200q, the reader alone (-tree +read):\n%s", every, raw, d)
				}
			}
		}
	}
	if taken < len(docs)/2 || refused < len(docs)/8 {
		t.Fatalf("of %d documents read twice, the reader took %d whole and %d were refused", len(docs), taken, refused)
	}
	t.Logf("%d documents read twice: %d taken by the reader, %d refused", len(docs), taken, refused)
}

// FuzzReadStrings compares the reader with the tree on any input.
func FuzzReadStrings(f *testing.F) {
	for i, s := range append(jsonStrings, badStrings...) {
		f.Add([]byte(`{"content":[{"type":"text","text":"` + s + `"}],"structuredContent":{"k` + strconv.Itoa(i) + `":["` + s + `"]}}`))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, every := range []bool{false, true} {
			got, err := readStrings(raw, every)
			want, wantErr := treeRead(raw, every)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, the tree's %v", err, wantErr)
			}
			if d := cmp.Diff(want, got, cmp.AllowUnexported(textAt{})); wantErr == nil && d != "" {
				t.Fatalf("(-tree +read):\n%s", d)
			}
		}
	})
}
