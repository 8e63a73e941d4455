package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review/scan"
	"github.com/toolgate/toolgate/tui/theme"
)

// CO-2, RV-2: the review view shows a slow-pattern flag like any other: its
// severity, place and reason, and the pattern with the span marked; the
// tools table ranks it with the warnings.
func TestDescribeSlowPattern(t *testing.T) {
	th := theme.New()
	th.Marks = true // spans marked whatever the terminal
	tool := core.ToolInfo{Name: "up_trim", Source: "up", RemoteName: "trim", Description: "Trims text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","pattern":"\\s+$"}}}`)}
	flags := scan.ScanTool(scan.ToolInput(tool, nil))
	out := Describe(th, tool, core.ReviewNew, flags, 200)
	for _, want := range []string{"[warn] slow-pattern at /properties/text/pattern: backtracks polynomially (degree 2", `«\s+$»`} {
		if !strings.Contains(out, want) {
			t.Errorf("the review view lacks %q:\n%s", want, out)
		}
	}
	if kinds := ScanAll([]core.ToolInfo{tool})["up_trim"]; len(kinds) != 1 || kinds[0] != core.FlagSlowPattern {
		t.Errorf("ScanAll: %q, want slow-pattern", kinds)
	}
}
