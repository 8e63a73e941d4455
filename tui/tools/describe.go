package tools

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review/scan"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/theme"
)

// Describe renders the review view of one tool (CO-2): the full description
// with invisible characters made visible (core.VisibleText) and flagged spans
// highlighted, the text hidden in tag characters, every flag with its
// reason, and the input and output schemas. flags nil means the scan has
// not answered.
func Describe(th *theme.Theme, t core.ToolInfo, state core.ReviewState, flags []core.Flag, width int) string {
	d := newDescriber(th, width)
	b, section, label := &d.b, d.section, d.label
	b.WriteString(th.Title.Render(t.Name))
	b.WriteString("\n")
	src := common.Source(t.Source)
	if t.RemoteName != "" && t.RemoteName != t.Name {
		src += " (remote name " + t.RemoteName + ")"
	}
	label("source", src)
	label("kind", string(t.Kind))
	review := string(state)
	if review == "" {
		review = "— (native tools are not reviewed)"
	}
	label("review", th.Review(state).Render(review))
	if t.Disabled {
		label("status", th.Err.Render("disabled"))
	}

	d.textAndFlags(t.Description, scan.DescriptionWhere, flags, scan.ToolInput(t, nil).Text)

	section("Input schema")
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, schema, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(schema)
	}
	b.WriteString(scan.VisibleText(pretty.String()))
	if len(t.OutputSchema) > 0 {
		b.WriteString("\n")
		section("Output schema")
		pretty.Reset()
		if err := json.Indent(&pretty, t.OutputSchema, "", "  "); err != nil {
			pretty.Reset()
			pretty.Write(t.OutputSchema)
		}
		b.WriteString(scan.VisibleText(pretty.String()))
	}
	return b.String()
}

// Highlight renders text through core.VisibleText with the spans of flags
// (byte offsets into text) styled by severity; without colour the spans are
// wrapped in « ».
func Highlight(th *theme.Theme, text string, flags []core.Flag) string {
	if len(flags) == 0 {
		return scan.VisibleText(text)
	}
	cuts := []int{0, len(text)}
	for _, f := range flags {
		cuts = append(cuts, clampInt(f.Start, 0, len(text)), clampInt(f.End, 0, len(text)))
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	// Adjacent pieces of the same severity are rendered as one span.
	type piece struct {
		text, sev string
	}
	var pieces []piece
	for i := 0; i+1 < len(cuts); i++ {
		a, z := cuts[i], cuts[i+1]
		sev := ""
		for _, f := range flags {
			if f.Start <= a && z <= f.End && f.Start < f.End {
				if s := f.Kind.Severity(); severityRank(s) > severityRank(sev) {
					sev = s
				}
			}
		}
		if n := len(pieces); n > 0 && pieces[n-1].sev == sev {
			pieces[n-1].text += text[a:z]
			continue
		}
		pieces = append(pieces, piece{text[a:z], sev})
	}
	var b strings.Builder
	for _, p := range pieces {
		seg := scan.VisibleText(p.text)
		if p.sev == "" {
			b.WriteString(seg)
			continue
		}
		if th.Marks {
			seg = "«" + seg + "»"
		}
		b.WriteString(th.Severity(p.sev).Render(seg))
	}
	return b.String()
}

func severityRank(s string) int {
	switch s {
	case core.SeverityInfo:
		return 1
	case core.SeverityWarn:
		return 2
	case core.SeverityDanger:
		return 3
	}
	return 0
}

func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }

// ScanAll scans every tool (RV-2) and returns the flag kinds of each, most
// severe first. Shadowing is checked against tools of other sources, as
// core.ReviewFlags does, with one name list per source.
func ScanAll(tools []core.ToolInfo) map[string][]core.FlagKind {
	bySource := map[string][]string{}
	var all []string
	for _, t := range tools {
		names := []string{t.Name}
		if t.RemoteName != "" && t.RemoteName != t.Name {
			names = append(names, t.RemoteName)
		}
		bySource[t.Source] = append(bySource[t.Source], names...)
		all = append(all, names...)
	}
	others := map[string][]string{}
	for src, own := range bySource {
		mine := map[string]bool{}
		for _, n := range own {
			mine[n] = true
		}
		var o []string
		for _, n := range all {
			if !mine[n] {
				o = append(o, n)
			}
		}
		slices.Sort(o)
		others[src] = slices.Compact(o)
	}
	out := make(map[string][]core.FlagKind, len(tools))
	for _, t := range tools {
		flags := scan.ScanTool(scan.ToolInput(t, others[t.Source]))
		var kinds []core.FlagKind
		for _, f := range flags {
			if !slices.Contains(kinds, f.Kind) {
				kinds = append(kinds, f.Kind)
			}
		}
		slices.SortStableFunc(kinds, func(a, b core.FlagKind) int {
			return cmp.Compare(severityRank(b.Severity()), severityRank(a.Severity()))
		})
		if len(kinds) > 0 {
			out[t.Name] = kinds
		}
	}
	return out
}

// flagKinds are the distinct kinds among flags, most severe first.
func flagKinds(flags []core.Flag) []core.FlagKind {
	var kinds []core.FlagKind
	for _, f := range flags {
		if !slices.Contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
		}
	}
	slices.SortStableFunc(kinds, func(a, b core.FlagKind) int {
		return cmp.Compare(severityRank(b.Severity()), severityRank(a.Severity()))
	})
	return kinds
}

// DescribeEntry renders the review view of a prompt or resource (CO-2), as
// Describe does a tool's: the description with flagged spans highlighted
// and invisible characters made visible, the text hidden in tag
// characters, every flag with its reason and text, and the entry as the
// upstream listed it. flags nil means the scan has not answered.
func DescribeEntry(th *theme.Theme, e core.ReviewEntry, state core.ReviewState, flags []core.Flag, width int) string {
	d := newDescriber(th, width)
	b, section, label := &d.b, d.section, d.label
	b.WriteString(th.Title.Render(scan.VisibleText(e.Name)))
	b.WriteString("\n")
	src := common.Source(e.Source)
	if e.RemoteName != "" && e.RemoteName != e.Name {
		src += " (remote name " + scan.VisibleText(e.RemoteName) + ")"
	}
	label("source", src)
	label("kind", string(e.Kind))
	label("review", th.Review(state).Render(string(state)))

	d.textAndFlags(e.Description, "/description", flags, scan.EntryInput{Raw: e.Raw}.Text)

	section("As listed")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, e.Raw, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(e.Raw)
	}
	// Go's encoder escapes <, > and & in what the gateway re-encodes; the
	// operator reads them as the upstream wrote them.
	b.WriteString(scan.VisibleText(htmlUnescaper.Replace(pretty.String())))
	return b.String()
}

var htmlUnescaper = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")

// describer builds a review view: sections, labelled lines, and the
// description with its flags, alike for tools, prompts and resources.
type describer struct {
	th   *theme.Theme
	wrap lipgloss.Style
	b    strings.Builder
}

func newDescriber(th *theme.Theme, width int) *describer {
	return &describer{th: th, wrap: lipgloss.NewStyle().Width(max(width-2, 10))}
}

func (d *describer) section(title string) {
	d.b.WriteString("\n")
	d.b.WriteString(d.th.Section.Render(title))
	d.b.WriteString("\n")
}

func (d *describer) label(l, v string) {
	d.b.WriteString(d.th.Label.Render(common.Pad(l, 8)))
	d.b.WriteString(" ")
	d.b.WriteString(v)
	d.b.WriteString("\n")
}

// textAndFlags renders the description (found at descWhere) with its
// flagged spans highlighted, the text hidden in its tag characters, then
// every flag with its reason and, for a flag elsewhere, the text it points
// at (resolved by text). flags nil means the scan has not answered.
func (d *describer) textAndFlags(description, descWhere string, flags []core.Flag, text func(where string) (string, bool)) {
	th, wrap, b := d.th, d.wrap, &d.b
	var descFlags []core.Flag
	for _, f := range flags {
		if f.Where == descWhere {
			descFlags = append(descFlags, f)
		}
	}
	d.section("Description")
	if description == "" {
		b.WriteString(th.Muted.Render("(none)"))
	} else {
		b.WriteString(wrap.Render(Highlight(th, description, descFlags)))
	}
	b.WriteString("\n")
	if hidden := scan.HiddenTagText(description); hidden != "" {
		d.section("Hidden text (Unicode tag characters, invisible to people)")
		b.WriteString(th.Hidden.Render(wrap.Render(hidden)))
		b.WriteString("\n")
	}

	d.section("Flags")
	switch {
	case flags == nil:
		b.WriteString(th.Muted.Render("scanning…"))
		b.WriteString("\n")
	case len(flags) == 0:
		b.WriteString(th.OK.Render("none: the scanner found nothing to look at"))
		b.WriteString("\n")
	}
	for _, f := range flags {
		sev := f.Kind.Severity()
		head := th.Severity(sev).Render(fmt.Sprintf("[%s] %s", sev, f.Kind))
		b.WriteString(wrap.Render(fmt.Sprintf("%s at %s: %s", head, f.Where, f.Reason)))
		b.WriteString("\n")
		if f.Where != descWhere {
			if t, ok := text(f.Where); ok {
				b.WriteString("    ")
				b.WriteString(wrap.Render(Highlight(th, t, []core.Flag{f})))
				b.WriteString("\n")
			}
		}
	}
}
