// Package activity is the Activity pane (CO-7): a live feed of calls (time,
// actor, tool, outcome, latency), warnings, and the actions of every
// operator attached to the gateway (CO-9). It follows the newest entry
// until paused with space; `/` filters.
package activity

import (
	"fmt"
	"strconv"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/table"
)

// MaxEntries bounds the feed; older entries fall off.
const MaxEntries = 1000

type entry struct {
	key     uint64
	cells   []table.Cell
	style   *lipgloss.Style
	warning bool
}

// Model is the pane.
type Model struct {
	c       *common.Common
	table   *table.Model
	entries []entry
	added   uint64 // entries ever added: each one's row key
	follow  bool
	unseen  int
	width   int
}

// New returns the pane, following.
func New(c *common.Common) *Model {
	cols := []table.Column{
		{Title: "TIME", Width: 8},
		{Title: "ACTOR", Width: 8},
		{Title: "TOOL / SOURCE", Width: 18, Flex: true},
		{Title: "OUTCOME", Width: 10},
		{Title: "LATENCY", Width: 7},
		{Title: "DETAIL", Width: 10, Flex: true},
	}
	t := table.New(c.Theme, c.Keys.List, cols, "No activity yet: calls and warnings appear here as they happen.")
	return &Model{c: c, table: t, follow: true}
}

func (m *Model) Init() tea.Cmd   { return nil }
func (m *Model) Title() string   { return "Activity" }
func (m *Model) Count() int      { return len(m.entries) }
func (m *Model) Capturing() bool { return m.table.Filtering() }

// Following reports whether the feed follows new entries.
func (m *Model) Following() bool { return m.follow }

func (m *Model) SetSize(w, h int) {
	m.width = w
	m.table.SetSize(w, max(h-1, 2))
}

// Add records an event if the feed shows it; it reports whether it did.
func (m *Model) Add(ev core.Event) bool {
	th := m.c.Theme
	t := ev.Time.Local().Format("15:04:05")
	var e entry
	switch d := ev.Data.(type) {
	case core.CallFinished:
		r := d.Record
		style := th.OK
		switch r.Outcome {
		case "ok", "preview":
		case "refused":
			style = th.Warn
		default:
			style = th.Err
		}
		tool := r.Tool
		if r.Source != "" {
			tool += " (" + r.Source + ")"
		}
		detail := r.Endpoint
		if d.TraceID != "" {
			// The whole id: what the tracing backend is searched by (OP-9).
			detail += " trace " + d.TraceID
		}
		e = entry{cells: []table.Cell{
			{Text: t}, {Text: r.ActorID}, {Text: tool}, {Text: r.Outcome, Style: &style},
			{Text: common.Duration(r.Latency)}, {Text: detail},
		}}
	case core.Warning:
		e = entry{warning: true, style: &th.Warn, cells: []table.Cell{
			{Text: t}, {Text: "warning"}, {Text: d.Source}, {Text: "warning"}, {Text: ""}, {Text: d.Message},
		}}
	case core.ConfirmationDecided:
		by := d.By
		if by == "" {
			by = "—"
		}
		e = entry{style: &th.Muted, cells: []table.Cell{
			{Text: t}, {Text: by}, {Text: "confirmation " + d.ID}, {Text: string(d.Decision)}, {Text: ""}, {Text: d.Reason},
		}}
	case core.RefreshApplied:
		e = entry{style: &th.Muted, cells: []table.Cell{
			{Text: t}, {Text: "gateway"}, {Text: d.Diff.Upstream}, {Text: "refreshed"}, {Text: ""}, {Text: summary(d.Diff)},
		}}
	case core.OperatorAction:
		// Any operator's, from any console or command attached to the
		// gateway: who did what to which thing, and how it ended.
		outcome, style, detail := "ok", th.Info, d.Detail
		if d.Error != "" {
			outcome, style, detail = "failed", th.Err, d.Error
		}
		what := d.Action
		if d.Target != "" {
			what += " " + d.Target
		}
		e = entry{cells: []table.Cell{
			{Text: t}, {Text: d.Operator}, {Text: what}, {Text: outcome, Style: &style}, {Text: ""}, {Text: common.OneLine(detail)},
		}}
	case core.ConnectionLost:
		e = entry{warning: true, style: &th.Err, cells: []table.Cell{
			{Text: t}, {Text: "console"}, {Text: "gateway link"}, {Text: "lost"}, {Text: ""}, {Text: common.OneLine(d.Error)},
		}}
	default:
		return false
	}
	m.push(e)
	return true
}

func (m *Model) push(e entry) {
	m.added++
	e.key = m.added
	m.entries = append(m.entries, e)
	if over := len(m.entries) - MaxEntries; over > 0 {
		m.entries = append(m.entries[:0:0], m.entries[over:]...)
	}
	if !m.follow {
		m.unseen++
	}
	m.rebuild()
}

// Reconnected records that the console's link to the gateway it is
// attached to is back, after the ConnectionLost entry.
func (m *Model) Reconnected(at time.Time) {
	th := m.c.Theme
	m.push(entry{style: &th.OK, cells: []table.Cell{
		{Text: at.Local().Format("15:04:05")}, {Text: "console"}, {Text: "gateway link"}, {Text: "restored"}, {Text: ""}, {Text: "the view is live again"},
	}})
}

func summary(d core.Diff) string {
	return fmt.Sprintf("+%d −%d ~%d", len(d.Added), len(d.Removed), len(d.Changed))
}

func (m *Model) rebuild() {
	rows := make([]table.Row, len(m.entries))
	for i, e := range m.entries {
		rows[i] = table.Row{Key: strconv.FormatUint(e.key, 10), Cells: e.cells, Style: e.style}
	}
	m.table.SetRows(rows)
	if m.follow {
		m.table.GotoBottom()
	}
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if km, ok := msg.(tea.KeyMsg); ok && key.Matches(km, m.keys().Follow) {
		m.follow = !m.follow
		if m.follow {
			m.unseen = 0
			m.table.GotoBottom()
		}
		return m, nil
	}
	cmd, _ := m.table.Update(msg)
	return m, cmd
}

// keys is the pane's bindings now: space is text while filtering, and
// says what it does next.
func (m *Model) keys() keys.ActivityKeys {
	k := m.c.Keys.Activity
	k.Follow.SetEnabled(!m.table.Filtering())
	if m.follow {
		k.Follow.SetHelp("space", "pause")
	} else {
		k.Follow.SetHelp("space", "follow")
	}
	return k
}

func (m *Model) ShortHelp() []key.Binding {
	return append([]key.Binding{m.keys().Follow}, m.table.ShortHelp()...)
}

func (m *Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{{m.keys().Follow}, m.table.Bindings()}
}

func (m *Model) View() string {
	th := m.c.Theme
	state := th.OK.Render("● following")
	if !m.follow {
		state = th.Warn.Render("⏸ paused")
		if m.unseen > 0 {
			state += th.Muted.Render(fmt.Sprintf(" (%d new)", m.unseen))
		}
	}
	return common.Truncate(state, m.width) + "\n" + m.table.View()
}
