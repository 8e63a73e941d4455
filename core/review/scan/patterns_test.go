package scan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/schema"
	"github.com/toolgate/toolgate/core/schema/redos"
	"github.com/toolgate/toolgate/core/schema/schematest"
)

// Patterns the screen serves that backtrack polynomially; each was timed in
// V8 (patterns.go).
const (
	msDuration = `^((?:\d+)?\.?\d+) *(milliseconds?|msecs?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|years?|yrs?|y)?$`
	// moment's RFC 2822 clean-up (CVE-2022-31129): quadratic on "((((…".
	momentParens = `\([^)]*\)`
	// ua-parser-js's Xiaomi POCO rule: quadratic on "poco poco …".
	uaPoco = `\b(poco[\w ]+|m2\d{3}j\d\d[a-z]{2})(?: bui|\))`
	// A user-agent version: cubic on runs of spaces.
	uaVersion = `\s*(?:[\w\s]*\/)?\s*([\w.]+)\s*$`
	// A trim of white space and ZWNJ at either end, as behind the 2016
	// Stack Overflow outage: the second branch, tried at every offset,
	// is quadratic on a run of spaces the input does not end with.
	trimBoth = `^[\s\u200c]+|[\s\u200c]+$`
	// ajv-formats' date and email formats.
	ajvDate  = `^(\d\d\d\d)-(\d\d)-(\d\d)$`
	ajvEmail = "^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"
)

// stringSchema is an input schema with one string property x.
func stringSchema(pattern string, extra string) json.RawMessage {
	p, _ := json.Marshal(pattern)
	return json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"` + extra + `,"pattern":` + string(p) + `}}}`)
}

func slowFlags(flags []core.Flag) []core.Flag {
	var out []core.Flag
	for _, f := range flags {
		if f.Kind == core.FlagSlowPattern {
			out = append(out, f)
		}
	}
	return out
}

// IM-19, RV-2: a pattern the screen serves is flagged when it backtracks
// polynomially and no maxLength keeps it cheap; the reason gives the degree
// and the length at which a backtracking engine takes about a second.
func TestSlowPatternDegrees(t *testing.T) {
	tests := []struct {
		pattern, extra string
		degree         int    // 0: no flag
		length, bound  string // in the reason
	}{
		{`\s+$`, ``, 2, "6,300", "no maxLength bounds it"},
		{`[a-z]+$`, ``, 2, "6,300", "no maxLength bounds it"},
		{`^\d+\d+$`, ``, 2, "6,300", "no maxLength bounds it"},
		{`^.*.*.*=$`, ``, 3, "630", "no maxLength bounds it"},
		{`\d+\d+x`, ``, 3, "630", "no maxLength bounds it"},
		{`^\S+@\S+\.\S+$`, ``, 3, "630", "no maxLength bounds it"},
		{msDuration, ``, 2, "6,300", "no maxLength bounds it"},
		{momentParens, ``, 2, "6,300", "no maxLength bounds it"},
		{uaPoco, ``, 2, "6,300", "no maxLength bounds it"},
		{uaVersion, ``, 3, "630", "no maxLength bounds it"},
		// A branch unanchored at its start and ending in $ is backtracked
		// whatever the other branches are: a search stops only where a
		// branch without $ succeeds.
		{trimBoth, ``, 2, "6,300", "no maxLength bounds it"},
		{`^\s+|\s+$`, ``, 2, "6,300", "no maxLength bounds it"},
		{`\s+$|^a`, ``, 2, "6,300", "no maxLength bounds it"},
		{`b|[a-z]+$`, ``, 2, "6,300", "no maxLength bounds it"},
		{trimBoth, `,"maxLength":1000`, 0, "", ""},
		// Anchored at the start, the $ branch is tried once: linear.
		{`^(?:\s+|\s+$)`, ``, 0, "", ""},
		{`^\s+$|^a`, ``, 0, "", ""},
		// A maxLength too long to help is named with what it lets through.
		{`\s+$`, `,"maxLength":10000`, 2, "6,300", "its maxLength of 10000 lets one take about 2.5 s"},
		{`^.*.*.*=$`, `,"maxLength":1000`, 3, "630", "its maxLength of 1000 lets one take about 4.0 s"},
		// One short enough keeps the pattern under a tenth of a second.
		{`\s+$`, `,"maxLength":1000`, 0, "", ""},
		{msDuration, `,"maxLength":100`, 0, "", ""},
		{`^.*.*.*=$`, `,"maxLength":250`, 0, "", ""},
		{`\s+$`, `,"maxLength":0`, 0, "", ""},
		// A maxLength that is not a number bounds nothing.
		{`\s+$`, `,"maxLength":"10"`, 2, "6,300", "no maxLength bounds it"},
		// Linear patterns.
		{`^[a-z]+$`, ``, 0, "", ""},
		{`^\d{4}-\d{2}$`, ``, 0, "", ""},
		{ajvDate, ``, 0, "", ""},
		{ajvEmail, ``, 0, "", ""},
		{`^[a-z0-9]+(?:-[a-z0-9]+)*$`, ``, 0, "", ""},
		{`[a-z]+`, ``, 0, "", ""}, // a search that stops at its first success
		// Exponential: the screen drops these, so they are never flagged.
		{`(a+)+$`, ``, 0, "", ""},
		{`^(\w+\s?)*$`, ``, 0, "", ""},
		{`^(a+){4}$`, ``, 0, "", ""},
	}
	for _, tt := range tests {
		in := ScanInput{Name: "t", InputSchema: stringSchema(tt.pattern, tt.extra)}
		flags := ScanTool(in)
		checkFlags(t, in, flags)
		got := slowFlags(flags)
		if tt.degree == 0 {
			if len(got) != 0 {
				t.Errorf("%s %s: flagged %+v", tt.pattern, tt.extra, got)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("%s %s: %d slow-pattern flags, want 1: %+v", tt.pattern, tt.extra, len(got), flags)
			continue
		}
		f := got[0]
		if f.Where != "/properties/x/pattern" || f.Start != 0 || f.End != len(tt.pattern) {
			t.Errorf("%s: flag at %s [%d,%d), want /properties/x/pattern [0,%d)", tt.pattern, f.Where, f.Start, f.End, len(tt.pattern))
		}
		for _, want := range []string{"degree " + string(rune('0'+tt.degree)) + ",", " " + tt.length + " characters", tt.bound} {
			if !strings.Contains(f.Reason, want) {
				t.Errorf("%s %s: reason %q lacks %q", tt.pattern, tt.extra, f.Reason, want)
			}
		}
	}
}

// IM-19: the exponential patterns are the screen's to drop; the degree-2
// and 3 ones it serves, so the flag is the only place they show.
func TestSlowPatternScreenSplit(t *testing.T) {
	for _, p := range []string{`(a+)+$`, `^(\w+\s?)*$`, `^(a+){4}$`, `(a|aa)+$`} {
		if b := redos.PatternBacktracking(p); !b.Refused || b.Reason == "" {
			t.Errorf("%s: %+v, want refused", p, b)
		}
		if _, err := schema.CompileSchema(stringSchema(p, "")); err == nil {
			t.Errorf("%s: the schema compiles", p)
		}
	}
	for _, p := range []string{`\s+$`, `^.*.*.*=$`, `\d+\d+x`, msDuration, momentParens, uaPoco, uaVersion} {
		b := redos.PatternBacktracking(p)
		if b.Refused || b.Degree < 2 || b.Degree >= redos.MinPolynomialDegree || b.Chain == "" {
			t.Errorf("%s: %+v, want served with degree 2 or 3", p, b)
		}
		if _, err := schema.CompileSchema(stringSchema(p, "")); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// IM-19: patterns are found where the screen finds them, each flag at its
// pattern's pointer: nested, in $defs, in the output schema, and as
// patternProperties keys (property names, bounded only by propertyNames'
// maxLength). Patterns in data are not read.
func TestSlowPatternPlaces(t *testing.T) {
	in := ScanInput{
		Name: "t",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"list": {"type": "array", "items": {"properties": {"v": {"type": "string", "pattern": "\\s+$"}},
					"propertyNames": {"pattern": "^\\d+\\d+$", "maxLength": 64}}},
				"pattern": {"type": "string", "description": "a property called pattern"},
				"either": {"anyOf": [{"pattern": "^[a-z]+$"}, {"pattern": "^.*.*.*=$"}]},
				"ref": {"$ref": "#/$defs/slow"}
			},
			"patternProperties": {"[a-z]+/\\s+$": {"type": "string"}, "^[a-z]+$": {}},
			"$defs": {"slow": {"type": "string", "pattern": "\\d+\\d+x"}},
			"default": {"pattern": "\\s+$"},
			"examples": [{"pattern": "\\s+$"}],
			"x-extension": {"nested": {"pattern": "^\\d+\\d+$", "maxLength": 50}}
		}`),
		OutputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"line": {"type": "string", "pattern": "\\s+$"}},
			"propertyNames": {"maxLength": 40},
			"patternProperties": {"\\s+$": {}},
			"$defs": {"long": {"propertyNames": {"maxLength": 20000}, "patternProperties": {"^.*.*.*=$": {}}}}
		}`),
	}
	flags := ScanTool(in)
	checkFlags(t, in, flags)
	var got []string
	for _, f := range slowFlags(flags) {
		got = append(got, f.Where)
		text, _ := in.Text(f.Where)
		if text[f.Start:f.End] != text {
			t.Errorf("%s: span [%d,%d) is not the whole pattern %q", f.Where, f.Start, f.End, text)
		}
		if strings.Contains(f.Where, "patternProperties") && !strings.Contains(f.Reason, "property name") {
			t.Errorf("%s: reason %q does not say it applies to property names", f.Where, f.Reason)
		}
	}
	want := []string{
		"/$defs/slow/pattern",
		"/patternProperties/[a-z]+~1\\s+$",
		"/properties/either/anyOf/1/pattern",
		"/properties/list/items/properties/v/pattern",
		"outputSchema/$defs/long/patternProperties/^.*.*.*=$",
		"outputSchema/properties/line/pattern",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slow-pattern places (-want +got):\n%s", diff)
	}
	if f := slowFlags(flags); len(f) == len(want) && !strings.Contains(f[4].Reason, "propertyNames' maxLength of 20000 lets one take hours") {
		t.Errorf("reason %q does not name propertyNames' maxLength", f[4].Reason)
	}
	if text, _ := in.Text("/patternProperties/[a-z]+~1\\s+$"); text != `[a-z]+/\s+$` {
		t.Errorf("the patternProperties flag resolves to %q", text)
	}
}

// IM-19: a reference into data makes that data a schema, for the screen and
// for the flag alike.
func TestSlowPatternReferenceIntoData(t *testing.T) {
	in := ScanInput{Name: "t", InputSchema: json.RawMessage(`{"$ref":"#/default/s","default":{"s":{"pattern":"\\s+$"}}}`)}
	flags := slowFlags(ScanTool(in))
	if len(flags) != 1 || flags[0].Where != "/default/s/pattern" {
		t.Errorf("flags %+v, want one at /default/s/pattern", flags)
	}
}

// IM-19, RV-2: the real schemas of the corpus carry one slow pattern that
// no maxLength bounds, the calendar's attendee e-mail
// `^[^@\s]+@[^@\s]+\.[^@\s]+$` (quadratic: 0.5 s in V8 on 5,540
// characters); the reference servers' tools carry none.
func TestSlowPatternBenignCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(schematest.Corpus(), "benign", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no benign schemas: %v", err)
	}
	var got []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := ScanInput{InputSchema: raw}
		for _, fl := range slowFlags(ScanTool(in)) {
			got = append(got, filepath.Base(f)+" "+fl.Where)
			t.Logf("%s %s: %s", filepath.Base(f), fl.Where, fl.Reason)
		}
	}
	want := []string{"calendar.create_event.json /properties/attendees/items/pattern"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slow patterns in the benign schemas (-want +got):\n%s", diff)
	}
	tools := 0
	for server, s := range readCorpus[benignServer](t, "benign") {
		for _, tool := range s.Tools {
			tools++
			if f := slowFlags(ScanTool(tool.input(nil))); len(f) != 0 {
				t.Errorf("%s/%s: %+v", server, tool.Name, f)
			}
		}
	}
	if tools == 0 {
		t.Fatal("no benign tools")
	}
}

// The lengths in the reasons are estimates and say so in their rounding.
//
// Covers IM-19, RV-2.
func TestSlowPatternRounding(t *testing.T) {
	for n, want := range map[float64]string{6324.6: "6,300", 629.96: "630", 736.8: "740", 99.4: "99", 1_234_567: "1,200,000", 1000: "1,000"} {
		if got := roundLength(n); got != want {
			t.Errorf("roundLength(%v) = %q, want %q", n, got, want)
		}
	}
	if !slices.Equal([]string{aboutSeconds(2.53), aboutSeconds(250), aboutSeconds(1800), aboutSeconds(1e9)},
		[]string{"about 2.5 s", "about 250 s", "about 30 minutes", "hours"}) {
		t.Error("aboutSeconds")
	}
}
