// Package approvals is the Approvals pane (CO-6): confirmations waiting for
// an operator, with their canonical arguments, preview and a countdown to
// the caller's deadline; a approves, x rejects.
package approvals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review/scan"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/table"
)

// RejectReason is recorded when the operator rejects from the console.
const RejectReason = "rejected by the operator in the console"

type decided struct {
	ID, Tool string
	Decision core.Decision
}

// Model is the pane.
type Model struct {
	c      *common.Common
	table  *table.Model
	list   []core.PendingConfirmation
	nextID uint64
	width  int
	height int
	tableH int
}

// New returns the pane.
func New(c *common.Common) *Model {
	cols := []table.Column{
		{Title: "TOOL", Width: 18, Flex: true},
		{Title: "SOURCE", Width: 10},
		{Title: "ACTOR", Width: 10},
		{Title: "ARGUMENTS", Width: 16, Flex: true},
		{Title: "EXPIRES", Width: 7},
	}
	return &Model{c: c, table: table.New(c.Theme, c.Keys.List, cols, "Loading…")}
}

func (m *Model) Init() tea.Cmd   { return nil }
func (m *Model) Title() string   { return "Approvals" }
func (m *Model) Count() int      { return len(m.list) }
func (m *Model) Capturing() bool { return m.table.Filtering() }

func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.layout()
}

// layout gives the list the lines its rows need, up to half the pane, and
// the selected confirmation's details the rest.
func (m *Model) layout() {
	need := len(m.list) + 2 // header and filter bar
	m.tableH = max(min(need, m.height/2), 3)
	m.table.SetSize(m.width, m.tableH)
}

// SetPending replaces the pending confirmations.
func (m *Model) SetPending(list []core.PendingConfirmation) {
	m.list = list
	m.layout()
	m.table.SetEmpty("No confirmations waiting. Calls of tools with approval: operator wait here for you.")
	m.Tick()
}

// Tick re-renders the countdowns.
func (m *Model) Tick() {
	now := m.c.Now()
	th := m.c.Theme
	rows := make([]table.Row, len(m.list))
	for i, p := range m.list {
		left := p.Deadline.Sub(now)
		style := th.Text
		if left < 30e9 {
			style = th.Err
		}
		rows[i] = table.Row{Key: p.ID, Cells: []table.Cell{
			{Text: p.Tool},
			{Text: common.Source(p.Source)},
			{Text: p.Actor.ID},
			{Text: string(p.Arguments)},
			{Text: common.Countdown(now, p.Deadline), Style: &style},
		}}
	}
	m.table.SetRows(rows)
}

func (m *Model) selected() (core.PendingConfirmation, bool) {
	id, ok := m.table.SelectedKey()
	if !ok {
		return core.PendingConfirmation{}, false
	}
	for _, p := range m.list {
		if p.ID == id {
			return p, true
		}
	}
	return core.PendingConfirmation{}, false
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.ResultMsg:
		d, ok := msg.Value.(decided)
		if !ok {
			return m, nil
		}
		if msg.Err != nil {
			return m, common.Flash(fmt.Sprintf("%s: %v", msg.Label, msg.Err), true)
		}
		return m, common.Flash(fmt.Sprintf("%s %s", d.Tool, d.Decision), false)
	case tea.KeyMsg:
		if !m.table.Filtering() {
			k := m.keys()
			switch {
			case key.Matches(msg, k.Approve):
				return m, m.decide(core.DecisionApprove)
			case key.Matches(msg, k.Reject):
				return m, m.decide(core.DecisionReject)
			case keys.Pressed(msg, k.Approve, k.Reject):
				return m, common.Flash("no confirmation selected", true)
			}
		}
	}
	cmd, _ := m.table.Update(msg)
	return m, cmd
}

func (m *Model) decide(d core.Decision) tea.Cmd {
	p, ok := m.selected()
	if !ok {
		return nil
	}
	m.nextID++
	ctx, con, by, id, tool := m.c.Ctx, m.c.Console, m.c.Operator, p.ID, p.Tool
	if d == core.DecisionApprove {
		return common.Call(common.PaneApprovals, m.nextID, "approving "+tool, func() (any, error) {
			return decided{ID: id, Tool: tool, Decision: d}, con.ApproveConfirmation(ctx, id, by)
		})
	}
	return common.Call(common.PaneApprovals, m.nextID, "rejecting "+tool, func() (any, error) {
		return decided{ID: id, Tool: tool, Decision: d}, con.RejectConfirmation(ctx, id, by, RejectReason)
	})
}

// keys is the pane's bindings now: a decision needs a selected
// confirmation.
func (m *Model) keys() keys.ApprovalKeys {
	k := m.c.Keys.Approvals
	_, ok := m.selected()
	on := ok && !m.table.Filtering()
	k.Approve.SetEnabled(on)
	k.Reject.SetEnabled(on)
	return k
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.keys()
	return append([]key.Binding{k.Approve, k.Reject}, m.table.ShortHelp()...)
}

func (m *Model) FullHelp() [][]key.Binding {
	k := m.keys()
	return [][]key.Binding{{k.Approve, k.Reject}, m.table.Bindings()}
}

// View renders the list and the selected confirmation's details.
func (m *Model) View() string {
	th := m.c.Theme
	top := m.table.View()
	p, ok := m.selected()
	if !ok {
		return top
	}
	var args bytes.Buffer
	if err := json.Indent(&args, p.Arguments, "", "  "); err != nil {
		args.Reset()
		args.Write(p.Arguments)
	}
	wrap := lipgloss.NewStyle().Width(max(m.width-2, 10))
	lines := []string{
		"",
		th.Section.Render(fmt.Sprintf("%s — %s for %s, %s left", p.Tool, common.Source(p.Source), p.Actor.ID, common.Countdown(m.c.Now(), p.Deadline))),
		th.Label.Render("preview"),
		wrap.Render(scan.VisibleText(p.Preview)),
		th.Label.Render("arguments (canonical)"),
		args.String(),
	}
	detail := strings.Join(lines, "\n")
	room := m.height - m.tableH
	dl := strings.Split(detail, "\n")
	if len(dl) > room {
		dl = dl[:max(room, 0)]
	}
	for i := range dl {
		dl[i] = common.Truncate(dl[i], m.width)
	}
	return top + "\n" + strings.Join(dl, "\n")
}
