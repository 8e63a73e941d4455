package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/core/jsontree"
)

// Type is the kind of a finding, as operators configure actions for it.
type Type string

const (
	Secrets   Type = "secrets"
	PII       Type = "pii"
	Injection Type = "injection"
	Links     Type = "links"
)

// Types is every kind, in the order findings of one span are reported.
var Types = []Type{Secrets, PII, Injection, Links}

// PII detectors, as pii.types names them.
const (
	PIIEmail = "email"
	PIIPhone = "phone"
	PIICard  = "card"
	PIIIBAN  = "iban"
	PIISSN   = "ssn"
)

// PIITypes is every PII detector.
var PIITypes = []string{PIIEmail, PIIPhone, PIICard, PIIIBAN, PIISSN}

// Finding is one thing found. It carries where, never what: Start and End
// are byte offsets into the string Path points to.
type Finding struct {
	Type     Type   `json:"type"`
	Detector string `json:"detector"`
	// Path is an RFC 6901 pointer to the string inside the inspected JSON
	// document ("" for a bare text).
	Path  string `json:"path"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Set selects the kinds to look for.
type Set uint8

// Bit is the Set holding only t.
func Bit(t Type) Set {
	for i, x := range Types {
		if x == t {
			return 1 << i
		}
	}
	return 0
}

// Has reports whether s holds t.
func (s Set) Has(t Type) bool { return s&Bit(t) != 0 }

// All holds every kind.
const All Set = 1<<4 - 1

// Options configure an Inspector; the zero value looks for every PII type
// and allows no host.
type Options struct {
	// PIITypes limits the pii kind to these detectors (PIITypes when empty).
	PIITypes []string
	// AllowHosts are hosts links may carry data to: "example.com" allows
	// that host and its subdomains.
	AllowHosts []string
	// PhoneRegions are the regions a phone number written without a
	// country code is read in (DefaultPhoneRegions when empty).
	PhoneRegions []string
}

// DefaultPhoneRegions are tried in order for numbers without "+".
var DefaultPhoneRegions = []string{"US", "GB", "DE", "FR", "IN", "BR", "JP", "AU"}

// ErrUnknownPIIType is returned by New for a pii type it does not know.
var ErrUnknownPIIType = errors.New("unknown pii type")

// Inspector runs detectors. Built once per configuration; safe for
// concurrent use.
type Inspector struct {
	pii        map[string]bool
	allowHosts []string
	regions    []string
}

// New builds an Inspector; opts may be nil.
func New(opts *Options) (*Inspector, error) {
	if opts == nil {
		opts = &Options{}
	}
	in := &Inspector{pii: map[string]bool{}, regions: opts.PhoneRegions}
	types := opts.PIITypes
	if len(types) == 0 {
		types = PIITypes
	}
	for _, t := range types {
		known := false
		for _, k := range PIITypes {
			known = known || k == t
		}
		if !known {
			return nil, errorf(ErrUnknownPIIType, "%q (known: %s)", t, strings.Join(PIITypes, ", "))
		}
		in.pii[t] = true
	}
	for _, h := range opts.AllowHosts {
		in.allowHosts = append(in.allowHosts, strings.ToLower(strings.TrimPrefix(h, "*.")))
	}
	if len(in.regions) == 0 {
		in.regions = DefaultPhoneRegions
	}
	return in, nil
}

// Text inspects one string for the kinds in set; findings' Path is path.
// Findings are sorted by Start; overlapping spans of one kind are kept
// once (the first detector wins).
func (in *Inspector) Text(s, path string, set Set) []Finding {
	if s == "" || set == 0 {
		return nil
	}
	// The keyword-gated detectors share one lowered copy and one pass.
	var fams families
	if set.Has(Secrets) {
		fams |= 1 << secretsFamily
	}
	if set.Has(Injection) {
		fams |= 1<<resultFamily | 1<<addresseeFamily
	}
	var ix textIndex
	if fams != 0 {
		ix = indexText(s, fams)
		defer ix.release()
	}
	// Every finding here has this path; one of a kind is kept where it
	// overlaps none of that kind kept before it.
	var kept [4]spanSet // per kind, indexed like Types
	var out []Finding
	keep := func(fs []Finding) {
		for _, f := range fs {
			k := &kept[typeIndex(f.Type)]
			if !k.overlaps(f.Start, f.End) {
				k.insert(f.Start, f.End)
				out = append(out, f)
			}
		}
	}
	if set.Has(Secrets) {
		keep(secretFindingsIn(ix, path))
	}
	if set.Has(PII) {
		keep(in.piiFindings(s, path))
	}
	if set.Has(Injection) {
		keep(injectionFindingsIn(ix, path))
		keep(addressFindingsIn(ix, path))
	}
	if set.Has(Links) {
		keep(in.linkFindings(s, path))
	}
	sortFindings(out)
	return out
}

// JSON inspects every string value (not member names) of a JSON document;
// each finding's Path points to its string. A document that is not JSON is
// an error.
func (in *Inspector) JSON(raw []byte, set Set) ([]Finding, error) {
	texts, err := readStrings(raw, true)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, t := range texts {
		out = append(out, in.Text(t.s, t.path, set)...)
	}
	return out, nil
}

// Placeholder is what Redact puts in place of a span.
func Placeholder(detector string) string { return "[redacted:" + detector + "]" }

// Redact replaces each finding's span in s (findings for other paths are
// ignored) with Placeholder(detector). Overlapping spans are merged under
// the first one's detector.
func Redact(s, path string, findings []Finding) string {
	var spans []Finding
	for _, f := range findings {
		if f.Path == path && f.Start >= 0 && f.End <= len(s) && f.Start < f.End {
			spans = append(spans, f)
		}
	}
	if len(spans) == 0 {
		return s
	}
	sortFindings(spans)
	var b strings.Builder
	at := 0
	for _, f := range spans {
		if f.End <= at {
			continue
		}
		if f.Start >= at {
			b.WriteString(s[at:f.Start])
			b.WriteString(Placeholder(f.Detector))
		}
		at = f.End
	}
	b.WriteString(s[at:])
	return b.String()
}

// RedactJSON rewrites every string value of a JSON document that has
// findings; members keep their order and numbers their text.
func RedactJSON(raw []byte, findings []Finding) ([]byte, error) {
	if len(findings) == 0 {
		return raw, nil
	}
	root, err := jsontree.DecodeJSONTree(raw)
	if err != nil {
		return nil, err
	}
	paths := map[string]bool{}
	for _, f := range findings {
		paths[f.Path] = true
	}
	var b bytes.Buffer
	encodeRedacted(&b, root, "", paths, findings)
	return b.Bytes(), nil
}

func encodeRedacted(b *bytes.Buffer, n *jsontree.JsonNode, path string, paths map[string]bool, fs []Finding) {
	switch n.Kind {
	case 's':
		s := n.Str
		if paths[path] {
			s = Redact(s, path, fs)
		}
		writeString(b, s)
	case 'o':
		b.WriteByte('{')
		for i, k := range n.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			encodeRedacted(b, n.Elems[i], jsontree.PointerAppend(path, k), paths, fs)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range n.Elems {
			if i > 0 {
				b.WriteByte(',')
			}
			encodeRedacted(b, e, jsontree.PointerAppend(path, itoa(i)), paths, fs)
		}
		b.WriteByte(']')
	default:
		if n.Num != "" {
			b.WriteString(string(n.Num))
		} else {
			b.WriteString(n.Lit)
		}
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a Go string always encodes
	b.Write(enc)
}

// typeIndex is t's place in Types.
func typeIndex(t Type) int {
	for i, x := range Types {
		if x == t {
			return i
		}
	}
	panic("inspect: a finding of no known kind: " + string(t))
}

// spanSet holds spans none of which overlaps another ([a, b) and [c, d)
// overlap where a < d and c < b), ordered by start, then end: so ordered,
// their ends never decrease, and whether a span overlaps one of them is a
// binary search, not a comparison with each (a megabyte's thousands of
// findings compared pair by pair were half of what reading it cost).
type spanSet struct{ spans [][2]int }

// overlaps reports whether [start, end) overlaps a span of the set: the
// first span ending after start is the only one that may, the others
// ending after start beginning no earlier.
func (ss *spanSet) overlaps(start, end int) bool {
	j := sort.Search(len(ss.spans), func(i int) bool { return ss.spans[i][1] > start })
	return j < len(ss.spans) && ss.spans[j][0] < end
}

// insert adds [start, end), which overlaps no span of the set.
func (ss *spanSet) insert(start, end int) {
	j := sort.Search(len(ss.spans), func(i int) bool {
		s := ss.spans[i]
		return s[0] > start || s[0] == start && s[1] > end
	})
	ss.spans = slices.Insert(ss.spans, j, [2]int{start, end})
}

func appendNew(out, add []Finding) []Finding {
	for _, f := range add {
		dup := false
		for _, g := range out {
			if g.Type == f.Type && g.Path == f.Path && f.Start < g.End && g.Start < f.End {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, f)
		}
	}
	return out
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Path != fs[j].Path {
			return fs[i].Path < fs[j].Path
		}
		return fs[i].Start < fs[j].Start
	})
}
