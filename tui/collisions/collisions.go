// Package collisions is the Collisions & drops pane (CO-3): each refused
// claimant with both parties, and each dropped tool with its reason.
package collisions

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/table"
)

// Model is the pane.
type Model struct {
	c     *common.Common
	table *table.Model
	n     int
	width int
}

// New returns the pane.
func New(c *common.Common) *Model {
	cols := []table.Column{
		{Title: "WHAT", Width: 16},
		{Title: "TOOL", Width: 18},
		{Title: "PARTIES / REASON", Width: 20, Flex: true},
	}
	return &Model{c: c, table: table.New(c.Theme, c.Keys.List, cols, "Loading…")}
}

func (m *Model) Init() tea.Cmd   { return nil }
func (m *Model) Title() string   { return "Collisions" }
func (m *Model) Count() int      { return m.n }
func (m *Model) Capturing() bool { return m.table.Filtering() }

func (m *Model) SetSize(w, h int) {
	m.width = w
	m.table.SetSize(w, h)
}

// Set replaces the collisions and drops.
func (m *Model) Set(cols []core.Collision, drops []core.Drop) {
	th := m.c.Theme
	m.n = len(cols) + len(drops)
	m.table.SetEmpty("No collisions and no dropped tools.")
	rows := make([]table.Row, 0, m.n)
	for i, c := range cols {
		rows = append(rows, table.Row{Key: fmt.Sprintf("c%d/%s/%s", i, c.Name, c.Refused), Cells: []table.Cell{
			{Text: "collision", Style: &th.Warn},
			{Text: c.Name},
			{Text: fmt.Sprintf("kept by %s · refused %s", c.Kept, c.Refused)},
		}})
	}
	for i, d := range drops {
		style := th.Err
		if d.Kind == core.DropFilter {
			style = th.Muted
		}
		rows = append(rows, table.Row{Key: fmt.Sprintf("d%d/%s/%s", i, d.Source, d.RemoteName), Cells: []table.Cell{
			{Text: "dropped: " + string(d.Kind), Style: &style},
			{Text: d.Source + "/" + d.RemoteName},
			{Text: d.Reason},
		}})
	}
	m.table.SetRows(rows)
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd, _ := m.table.Update(msg)
	return m, cmd
}

// ShortHelp is the table's: the pane only lists.
func (m *Model) ShortHelp() []key.Binding { return m.table.ShortHelp() }

// FullHelp is the table's too.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.table.Bindings()} }

func (m *Model) View() string { return m.table.View() }
