// Package sessions is the Sessions pane (CO-5): live client sessions; x ends
// one after a confirm.
package sessions

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/table"
)

type endResult struct{ ID string }

// Model is the pane.
type Model struct {
	c      *common.Common
	table  *table.Model
	list   []core.Session
	nextID uint64
}

// New returns the pane.
func New(c *common.Common) *Model {
	cols := []table.Column{
		{Title: "ID", Width: 10},
		{Title: "ENDPOINT", Width: 8},
		{Title: "ACTOR", Width: 8},
		{Title: "CLIENT", Width: 10, Flex: true},
		{Title: "PROTOCOL", Width: 10},
		{Title: "STARTED", Width: 8},
		{Title: "ACTIVE", Width: 8},
		{Title: "CALLS", Width: 5},
	}
	return &Model{c: c, table: table.New(c.Theme, c.Keys.List, cols, "Loading…")}
}

func (m *Model) Init() tea.Cmd   { return nil }
func (m *Model) Title() string   { return "Sessions" }
func (m *Model) Count() int      { return len(m.list) }
func (m *Model) Capturing() bool { return m.table.Filtering() }

func (m *Model) SetSize(w, h int) { m.table.SetSize(w, h) }

// SetSessions replaces the session list.
func (m *Model) SetSessions(list []core.Session) {
	m.list = list
	m.table.SetEmpty("No client sessions. Point an MCP client at an endpoint in the header.")
	now := m.c.Now()
	rows := make([]table.Row, len(list))
	for i, s := range list {
		client := strings.TrimSpace(s.ClientName + " " + s.ClientVersion)
		if client == "" {
			client = "—"
		}
		rows[i] = table.Row{Key: s.ID, Cells: []table.Cell{
			{Text: s.ID},
			{Text: s.Endpoint},
			{Text: s.Actor.ID},
			{Text: client},
			{Text: s.Protocol},
			{Text: s.Started.Local().Format("15:04:05")},
			{Text: common.Ago(now, s.LastActivity)},
			{Text: fmt.Sprint(s.Calls)},
		}}
	}
	m.table.SetRows(rows)
}

// Tick refreshes relative times.
func (m *Model) Tick() { m.SetSessions(m.list) }

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.ResultMsg:
		if _, ok := msg.Value.(endResult); ok {
			if msg.Err != nil {
				return m, common.Flash(fmt.Sprintf("%s: %v", msg.Label, msg.Err), true)
			}
			return m, common.Flash("session "+shortID(msg.Value.(endResult).ID)+" ended", false)
		}
		return m, nil
	case tea.KeyMsg:
		if m.table.Filtering() {
			break
		}
		k := m.keys()
		switch {
		case key.Matches(msg, k.End):
			return m, m.end()
		case keys.Pressed(msg, k.End):
			return m, common.Flash("no session selected", true)
		}
	}
	cmd, _ := m.table.Update(msg)
	return m, cmd
}

func (m *Model) end() tea.Cmd {
	id, ok := m.table.SelectedKey()
	if !ok {
		return nil
	}
	var s core.Session
	for _, x := range m.list {
		if x.ID == id {
			s = x
		}
	}
	m.nextID++
	ctx, con := m.c.Ctx, m.c.Console
	run := common.Call(common.PaneSessions, m.nextID, "ending session "+shortID(id), func() (any, error) {
		return endResult{ID: id}, con.EndSession(ctx, id)
	})
	return common.Ask("End session?",
		fmt.Sprintf("End session %s of %s on %s? The client's next request fails and it must reconnect.", shortID(id), s.Actor.ID, s.Endpoint),
		"End session", run)
}

// shortID is the head of a session id: sealed ids run to hundreds of
// characters (SV-2), and a message or dialog must still fit the screen.
func shortID(id string) string {
	const n = 16
	if r := []rune(id); len(r) > n {
		return string(r[:n]) + "…"
	}
	return id
}

// keys is the pane's bindings now: End needs a selected session.
func (m *Model) keys() keys.SessionKeys {
	k := m.c.Keys.Sessions
	_, ok := m.table.SelectedKey()
	k.End.SetEnabled(ok && !m.table.Filtering())
	return k
}

func (m *Model) ShortHelp() []key.Binding {
	return append([]key.Binding{m.keys().End}, m.table.ShortHelp()...)
}

func (m *Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{{m.keys().End}, m.table.Bindings()}
}

func (m *Model) View() string { return m.table.View() }
