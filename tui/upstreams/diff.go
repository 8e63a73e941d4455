package upstreams

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review/scan"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/theme"
)

func renderDiff(th *theme.Theme, d core.Diff, width int) string {
	wrap := lipgloss.NewStyle().Width(max(width-6, 10))
	var b strings.Builder
	line := func(s string) {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	line(th.Bold.Render(Summary(d)))
	if d.Empty() {
		line(th.Muted.Render("The upstream lists what is imported now. Applying changes nothing."))
	}
	for _, t := range d.Added {
		line(th.Added.Render("+ added    ") + t.Name + th.Muted.Render(fmt.Sprintf("  %s · %s", t.Kind, common.OneLine(t.Description))))
	}
	for _, t := range d.Removed {
		mark := ""
		if th.Marks {
			mark = " <<"
		}
		line(th.Removed.Render("- removed  "+t.Name+mark) + th.Muted.Render("  clients lose this tool"))
	}
	for _, c := range d.Changed {
		line(th.Changed.Render("~ changed  ") + c.New.Name + th.Muted.Render("  "+strings.Join(c.Fields, ", ")))
		for _, f := range c.Fields {
			switch f {
			case "description":
				line(indent(th.Muted.Render("old: ") + wrap.Render(scan.VisibleText(c.Old.Description))))
				newText := scan.VisibleText(c.New.Description)
				if th.Marks {
					newText = "«" + newText + "»"
				}
				line(indent(th.Muted.Render("new: ") + th.Changed.Render(wrap.Render(newText))))
			case "kind":
				line(indent(th.Muted.Render("kind: ") + string(c.Old.Kind) + " → " + th.Changed.Render(string(c.New.Kind))))
			case "inputSchema":
				line(indent(th.Muted.Render("schema: ") + common.Truncate(string(c.Old.InputSchema), width-20)))
				line(indent(th.Muted.Render("     → ") + th.Changed.Render(common.Truncate(string(c.New.InputSchema), width-20))))
			}
		}
	}
	for _, c := range d.Collisions {
		line(th.Warn.Render("! collision ") + c.Name + th.Muted.Render(fmt.Sprintf("  kept by %s, %s refused", c.Kept, c.Refused)))
	}
	for _, dr := range d.Dropped {
		line(th.Err.Render("✖ dropped  ") + dr.RemoteName + th.Muted.Render(fmt.Sprintf("  (%s) %s", dr.Kind, common.OneLine(dr.Reason))))
	}
	return strings.TrimRight(b.String(), "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n         ")
}
