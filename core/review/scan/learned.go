package scan

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/jsontree"
)

// The rules catch what their phrasings name; a writer who has not read them
// finds other phrasings (RV-2). The learned reader weighs a definition's
// words as a whole against the poisoned and honest tools of
// testdata/review: a logistic regression over the words and word pairs of
// every string a model reads, each weighted by how rare it is across the
// corpus. It flags a tool the rules passed only when its score is above
// every score an honest, real tool got while held out of training, so it
// adds recall without a false warning on the real tools. It is a second
// reader and a warning, never a refusal: its reason names the words that
// weighed most, for the operator to read the text itself.
//
// learned.model is written by TestLearnedModelIsTheCorpusModel with
// -update-learned; the test fails when the embedded model is not the one
// the corpus trains.

//go:embed learned.model
var learnedModelFile []byte

// learnedDims is the size of the hashed feature space.
const learnedDims = 1 << 18

// learnedMinWords is the fewest words the learned reader weighs: in a
// shorter definition one word decides the score, and the rules read every
// word of it anyway.
const learnedMinWords = 12

// learnedModel is a trained reader: for each hashed word feature the corpus
// kept, its inverse document frequency and weight; for each signal feature
// its weight (and an idf of 0).
type learnedModel struct {
	idf       map[uint32]float32
	weight    map[uint32]float32
	bias      float64
	threshold float64
}

var learned = sync.OnceValue(func() *learnedModel {
	m, err := decodeLearnedModel(learnedModelFile)
	if err != nil {
		// The file is embedded and checked by a test; a build without it
		// is a broken build, not an input to tolerate.
		panic("scan: learned model: " + err.Error())
	}
	return m
})

const learnedMagic = "TGLM1\n"

func encodeLearnedModel(m *learnedModel) []byte {
	keys := make([]uint32, 0, len(m.weight))
	for k := range m.weight {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	b.WriteString(learnedMagic)
	_ = binary.Write(&b, binary.LittleEndian, m.bias)
	_ = binary.Write(&b, binary.LittleEndian, m.threshold)
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(keys)))
	for _, k := range keys {
		_ = binary.Write(&b, binary.LittleEndian, k)
		_ = binary.Write(&b, binary.LittleEndian, m.idf[k])
		_ = binary.Write(&b, binary.LittleEndian, m.weight[k])
	}
	return b.Bytes()
}

func decodeLearnedModel(raw []byte) (*learnedModel, error) {
	rest, ok := bytes.CutPrefix(raw, []byte(learnedMagic))
	if !ok {
		return nil, errors.New("not a model file")
	}
	r := bytes.NewReader(rest)
	m := &learnedModel{}
	var n uint32
	if err := errors.Join(binary.Read(r, binary.LittleEndian, &m.bias),
		binary.Read(r, binary.LittleEndian, &m.threshold),
		binary.Read(r, binary.LittleEndian, &n)); err != nil {
		return nil, err
	}
	if int(n)*12 != r.Len() {
		return nil, fmt.Errorf("%d features in %d bytes", n, r.Len())
	}
	m.idf = make(map[uint32]float32, n)
	m.weight = make(map[uint32]float32, n)
	rest = rest[len(rest)-r.Len():]
	le := binary.LittleEndian
	for i := range int(n) {
		e := rest[12*i : 12*i+12]
		k, idf, w := le.Uint32(e), math.Float32frombits(le.Uint32(e[4:])), math.Float32frombits(le.Uint32(e[8:]))
		if k < learnedDims {
			m.idf[k] = idf
		}
		m.weight[k] = w
	}
	return m, nil
}

// learnedPlace is one string a model reads, where the scanner's flags say
// it is.
type learnedPlace struct {
	where, text string
}

// learnedToken is a word of a place's text, lower-cased, with its bytes.
type learnedToken struct {
	place      int
	start, end int
	word       string
}

// learnedPlaces lists the strings of a definition a model reads: the name,
// title and description; in the schemas and the other JSON fields every
// string value but a type, reference, format or pattern, and every member
// name but a schema keyword's.
func learnedPlaces(in ScanInput) []learnedPlace {
	out := []learnedPlace{{NameWhere, cmp.Or(in.RemoteName, in.Name)}, {TitleWhere, in.Title}, {DescriptionWhere, in.Description}}
	walk := func(raw []byte, prefix string) {
		if len(raw) == 0 {
			return
		}
		root, err := jsontree.DecodeJSONTree(raw)
		if err != nil {
			return
		}
		var visit func(n *jsontree.JsonNode, ptr string, names bool)
		visit = func(n *jsontree.JsonNode, ptr string, names bool) {
			switch n.Kind {
			case 's':
				out = append(out, learnedPlace{prefix + ptr, n.Str})
			case 'a':
				for i, e := range n.Elems {
					visit(e, ptr+"/"+strconv.Itoa(i), false)
				}
			case 'o':
				for i, k := range n.Keys {
					p := jsontree.PointerAppend(ptr, k)
					v := n.Elems[i]
					if names || !schemaKeywords[k] {
						out = append(out, learnedPlace{prefix + p, k})
					}
					if !names && unreadKeywords[k] {
						continue
					}
					visit(v, p, !names && nameMapKeywords[k] && v.Kind == 'o')
				}
			}
		}
		visit(root, "", false)
	}
	walk(in.InputSchema, "")
	for _, f := range jsonFields {
		walk(in.field(f), f)
	}
	return out
}

var (
	schemaKeywords = setOf("type", "properties", "required", "description", "title", "default", "enum", "const",
		"examples", "items", "additionalProperties", "anyOf", "oneOf", "allOf", "not", "$schema", "$id", "$ref",
		"$defs", "definitions", "format", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems",
		"maxItems", "uniqueItems", "patternProperties", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
		"nullable", "readOnly", "writeOnly", "deprecated", "contentEncoding", "contentMediaType", "prefixItems",
		"contains", "if", "then", "else", "dependentRequired", "dependentSchemas", "propertyNames",
		"unevaluatedProperties", "unevaluatedItems", "minProperties", "maxProperties", "$comment", "$anchor",
		"additionalItems", "dependencies", "$vocabulary", "$dynamicRef", "$dynamicAnchor", "$recursiveRef",
		"$recursiveAnchor", "contentSchema", "maxContains", "minContains", "example", "discriminator", "xml",
		"externalDocs", "enumDescriptions", "markdownDescription")
	unreadKeywords  = setOf("type", "$schema", "$id", "$ref", "format", "pattern", "contentEncoding", "contentMediaType")
	nameMapKeywords = setOf("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// learnedTokens splits each place into words: runs of letters and digits,
// broken where a lower-case letter meets an upper-case one, so identifiers
// (snake_case, kebab-case, camelCase) read as their words.
func learnedTokens(places []learnedPlace) []learnedToken {
	var out []learnedToken
	for pi, p := range places {
		s := p.text
		start := -1
		var prev rune
		flush := func(end int) {
			if start >= 0 && (utf8.RuneCountInString(s[start:end]) > 1 || isIdeograph(s[start:end])) {
				out = append(out, learnedToken{pi, start, end, strings.ToLower(s[start:end])})
			}
			start = -1
		}
		for i, r := range s {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) {
				flush(i)
				prev = 0
				continue
			}
			if start >= 0 && unicode.IsLower(prev) && unicode.IsUpper(r) {
				flush(i)
			}
			if start < 0 {
				start = i
			}
			prev = r
		}
		flush(len(s))
	}
	return out
}

// isIdeograph reports whether a one-letter word is a word on its own: a
// letter of a script written without spaces. Other single letters ("t",
// "x", "a") say nothing of intent and would weigh alone in a short text.
func isIdeograph(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai)
}

// learnedFeature is one hashed word, or pair of neighbouring words of a
// place, by the token it starts at.
type learnedFeature struct {
	key   uint32
	token int
	pair  bool
}

// text is the word or pair the feature hashes, for a flag's reason.
func (f learnedFeature) text(tokens []learnedToken) string {
	if f.pair {
		return tokens[f.token].word + " " + tokens[f.token+1].word
	}
	return tokens[f.token].word
}

func learnedFeatures(tokens []learnedToken) []learnedFeature {
	out := make([]learnedFeature, 0, 2*len(tokens))
	for i, t := range tokens {
		out = append(out, learnedFeature{featureKey(t.word), i, false})
		if i+1 < len(tokens) && tokens[i+1].place == t.place {
			out = append(out, learnedFeature{pairKey(t.word, tokens[i+1].word), i, true})
		}
	}
	return out
}

// Features are FNV-1a hashes of the word, or of the two words joined by a
// space, taken modulo learnedDims; hashed in place, a scan builds no
// string for them.
const (
	fnvOffset = 2166136261
	fnvPrime  = 16777619
)

func fnvAppend(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * fnvPrime
	}
	return h
}

func featureKey(word string) uint32 { return fnvAppend(fnvOffset, word) & (learnedDims - 1) }

func pairKey(a, b string) uint32 {
	return fnvAppend(fnvAppend(fnvAppend(fnvOffset, a), " "), b) & (learnedDims - 1)
}

// learnedVector is a definition's features as the model reads them: a
// sublinear term frequency times the inverse document frequency, scaled to
// unit length; features the corpus did not keep are left out.
type learnedVector struct {
	keys []uint32
	vals []float64
	// first is each key's first feature, for the span of a flag.
	first []int
}

func (m *learnedModel) vector(feats []learnedFeature, sigs []uint32) learnedVector {
	counts := map[uint32]int{}
	first := map[uint32]int{}
	for i, f := range feats {
		if _, ok := m.idf[f.key]; !ok {
			continue
		}
		if counts[f.key] == 0 {
			first[f.key] = i
		}
		counts[f.key]++
	}
	v := tfidf(counts, first, func(k uint32) float64 { return float64(m.idf[k]) })
	for _, k := range sigs {
		v.keys = append(v.keys, k)
		v.vals = append(v.vals, learnedSignalValue)
		v.first = append(v.first, -1)
	}
	return v
}

// learnedSignalValue is what a signal feature weighs beside the words,
// whose vector has unit length.
const learnedSignalValue = 0.5

// Signal features sit above the hashed words: which signals a sentence
// holds together, which the whole definition holds, and which pairs of
// them it holds anywhere, so that an order split across two sentences or
// two fields weighs as one.
const (
	sigFeatSentencePair = iota
	sigFeatDocumentPair
	sigFeatSingle
	sigFeatThree
)

func signalKey(kind, i, j int) uint32 {
	return learnedDims + uint32(kind<<12|i<<6|j)
}

// signalWords says each signal in an operator's words, for the reason of a
// learned flag; the order is the signals'.
var signalWords = [...]string{
	"spoken to the model", "moving data", "secrets or private data", "a place outside",
	"keeping it from the user", "over what the user chose", "a condition for later",
	"carrying out what is read", "orders for the model in content", "without the user's say",
	"urgency or authority", "every time, as well", "shaping the answer", "other tools or every call",
	"a field of the call", "instead of", "a secret no honest tool asks for", "a second order chained on",
	"destroying or bypassing a safeguard", "quietly", "the user's own data", "a bank account",
	"rights handed over", "a scripted answer", "an extra amount", "the user", "recording",
	"a third party", "a false account", "making it public", "beyond the item asked about",
	"elevated rights", "a purchase or payment", "the tool's own output", "a purpose of its own",
	"a purpose that excuses anything", "an order to send", "data flowing outside",
	"something left out of what is told", "something a person would want to know", "who is told",
}

// signalFeatureWords says a signal feature in an operator's words.
func signalFeatureWords(k uint32) string {
	id := int(k - learnedDims)
	kind, i, j := id>>12, id>>6&63, id&63
	name := func(n int) string {
		if n < len(signalWords) {
			return signalWords[n]
		}
		return "another signal"
	}
	switch kind {
	case sigFeatSentencePair:
		return name(i) + " with " + name(j) + " in one sentence"
	case sigFeatDocumentPair:
		return name(i) + " and " + name(j)
	case sigFeatSingle:
		return name(i)
	}
	return "three signals in one sentence"
}

// learnedSignals returns the signal features of the places, sorted.
func learnedSignals(places []learnedPlace, tokens []learnedToken) []uint32 {
	set := map[uint32]bool{}
	var doc signal
	var buf []byte
	var cand []uint64
	ti := 0
	for pi, p := range places {
		text := p.text
		words := !strings.ContainsAny(text, " \n")
		if words {
			// An identifier reads as its words, as the rules read it.
			var ws []string
			for ; ti < len(tokens) && tokens[ti].place <= pi; ti++ {
				if tokens[ti].place == pi {
					ws = append(ws, tokens[ti].word)
				}
			}
			text = strings.Join(ws, " ")
		}
		for a := 0; a < len(text); {
			e := sentenceEnd(text, a)
			if strings.TrimSpace(text[a:e]) != "" {
				st := signalTableFor(words)
				if len(cand) != len(st.always) {
					cand = make([]uint64, len(st.always))
				}
				var have signal
				have, buf = st.sentenceSignals(text[a:e], buf, cand)
				doc |= have
				n := 0
				for i := range 64 {
					if have&(1<<i) == 0 {
						continue
					}
					n++
					for j := i + 1; j < 64; j++ {
						if have&(1<<j) != 0 {
							set[signalKey(sigFeatSentencePair, i, j)] = true
						}
					}
				}
				if n >= 3 {
					set[signalKey(sigFeatThree, 0, 0)] = true
				}
			}
			a = e + 1
		}
	}
	for i := range 64 {
		if doc&(1<<i) == 0 {
			continue
		}
		set[signalKey(sigFeatSingle, i, 0)] = true
		for j := i + 1; j < 64; j++ {
			if doc&(1<<j) != 0 {
				set[signalKey(sigFeatDocumentPair, i, j)] = true
			}
		}
	}
	out := make([]uint32, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func tfidf(counts, first map[uint32]int, idf func(uint32) float64) learnedVector {
	var v learnedVector
	for k := range counts {
		v.keys = append(v.keys, k)
	}
	slices.Sort(v.keys)
	var norm float64
	for _, k := range v.keys {
		x := (1 + math.Log(float64(counts[k]))) * idf(k)
		v.vals = append(v.vals, x)
		v.first = append(v.first, first[k])
		norm += x * x
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for i := range v.vals {
			v.vals[i] /= norm
		}
	}
	return v
}

func (m *learnedModel) score(v learnedVector) float64 {
	z := m.bias
	for i, k := range v.keys {
		z += float64(m.weight[k]) * v.vals[i]
	}
	return 1 / (1 + math.Exp(-z))
}

// learnedFlags flags a tool the rules left without a warning when the
// learned reader scores it above its threshold. The span is the word or
// pair that weighed most; the reason names the three that weighed most.
func learnedFlags(in ScanInput, flags []core.Flag) []core.Flag {
	if slices.ContainsFunc(flags, func(f core.Flag) bool { return f.Kind.Severity() != core.SeverityInfo }) {
		return nil
	}
	m := learned()
	places := learnedPlaces(in)
	tokens := learnedTokens(places)
	if len(tokens) < learnedMinWords {
		return nil
	}
	feats := learnedFeatures(tokens)
	v := m.vector(feats, learnedSignals(places, tokens))
	s := m.score(v)
	if s <= m.threshold {
		return nil
	}
	type part struct {
		weight float64
		feat   int
	}
	var parts []part
	var signalTop uint32
	var signalWeight float64
	for i, k := range v.keys {
		c := float64(m.weight[k]) * v.vals[i]
		switch {
		case c <= 0:
		case v.first[i] >= 0:
			parts = append(parts, part{c, v.first[i]})
		case c > signalWeight:
			signalTop, signalWeight = k, c
		}
	}
	if len(parts) == 0 {
		return nil
	}
	slices.SortStableFunc(parts, func(a, b part) int { return cmp.Compare(b.weight, a.weight) })
	var words []string
	for _, p := range parts[:min(3, len(parts))] {
		words = append(words, strconv.Quote(feats[p.feat].text(tokens)))
	}
	// The span is the heaviest word whose place a flag can point at: a
	// member name whose value is a string cannot be (the pointer means the
	// value); then the description.
	where, start, end := DescriptionWhere, 0, len(in.Description)
	for _, p := range parts {
		f := feats[p.feat]
		t := tokens[f.token]
		e := t.end
		if f.pair {
			e = tokens[f.token+1].end
		}
		if text, ok := in.Text(places[t.place].where); ok && text == places[t.place].text && utf8.ValidString(text[t.start:e]) {
			where, start, end = places[t.place].where, t.start, e
			break
		}
	}
	signals := ""
	if signalWeight > 0 {
		signals = "; what it says weighs as: " + signalFeatureWords(signalTop)
	}
	return []core.Flag{{Kind: core.FlagResemblesPoisoning, Where: where, Start: start, End: end,
		Reason: fmt.Sprintf("worded like the poisoned tools in the scanner's corpus, though no rule matched (score %.2f, warned above %.2f; the words that weigh most: %s%s): read the whole text",
			s, m.threshold, strings.Join(words, ", "), signals)}}
}

// sentenceSignals returns every signal s holds, each asked only of the
// branches the needles of s allow, as signalsGated asks them.
func (st *signalTable) sentenceSignals(s string, buf []byte, cand []uint64) (signal, []byte) {
	buf = appendGateText(buf[:0], s)
	copy(cand, st.always)
	sigs := st.candidates(buf, cand)
	var in signal
	for k, sig := range st.order {
		if sigs&sig == 0 {
			continue
		}
		for _, b := range st.bySig[k] {
			if cand[b/64]&(1<<(b%64)) != 0 && st.branches[b].re.MatchString(s) {
				in |= sig
				break
			}
		}
	}
	return in, buf
}
