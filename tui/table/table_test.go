package table

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"

	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/theme"
)

// CO-8: a filter longer than the screen (a pasted session id) is cut in
// the filter bar, and the count after it stays in view at 80 columns.
func TestLongFilterKeepsItsCount(t *testing.T) {
	long := strings.Repeat("SwCN6F92t4vNPzuwXRwgTKmZrgAvBm", 9)
	m := New(theme.New(), keys.Default().List, []Column{{Title: "ID", Width: 12, Flex: true}}, "none")
	m.SetSize(80, 10)
	m.SetRows([]Row{{Key: "a", Cells: []Cell{{Text: long}}}, {Key: "b", Cells: []Cell{{Text: "other"}}}})
	m.SetQuery(long)
	if m.Len() != 1 {
		t.Fatalf("the filter matches %d rows, want 1", m.Len())
	}
	lines := strings.Split(m.View(), "\n")
	if len(lines) < 2 || !strings.Contains(lines[1], "1 of 2") {
		t.Fatalf("the filter bar %q lost its count", lines[1])
	}
	for i, l := range lines {
		if w := lipgloss.Width(l); w > 80 {
			t.Errorf("line %d is %d cells wide", i, w)
		}
	}
}
