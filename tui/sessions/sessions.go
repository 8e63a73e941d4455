// Package sessions is the Sessions pane (CO-5): live client sessions, this
// replica's first, then those other replicas on a shared store serve; x
// ends one after a confirm. A session is shown by its SessionKey, never its
// id: the id continues the session (SV-2).
package sessions

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/table"
)

type endResult struct{ Key string }

// Model is the pane.
type Model struct {
	c      *common.Common
	table  *table.Model
	list   []core.Session
	nextID uint64
	// replicas: other replicas' sessions are listed, with the column.
	replicas bool
}

// New returns the pane.
func New(c *common.Common) *Model {
	return &Model{c: c, table: table.New(c.Theme, c.Keys.List, columns(false), "Loading…")}
}

// columns are the table's; REPLICA only while other replicas' sessions
// are listed: with one replica it would name this process on every row,
// in room an 80-column terminal does not have.
func columns(replicas bool) []table.Column {
	cols := []table.Column{{Title: "ID", Width: 10}}
	if replicas {
		cols = append(cols, table.Column{Title: "REPLICA", Width: 10, Flex: true})
	}
	return append(cols,
		table.Column{Title: "ENDPOINT", Width: 8},
		table.Column{Title: "ACTOR", Width: 8},
		table.Column{Title: "CLIENT", Width: 10, Flex: true},
		table.Column{Title: "PROTOCOL", Width: 10},
		table.Column{Title: "STARTED", Width: 8},
		table.Column{Title: "ACTIVE", Width: 8},
		table.Column{Title: "CALLS", Width: 5},
	)
}

func (m *Model) Init() tea.Cmd   { return nil }
func (m *Model) Title() string   { return "Sessions" }
func (m *Model) Count() int      { return len(m.list) }
func (m *Model) Capturing() bool { return m.table.Filtering() }

func (m *Model) SetSize(w, h int) { m.table.SetSize(w, h) }

// SetSessions replaces the session list.
func (m *Model) SetSessions(list []core.Session) {
	// This replica's first, in the order they came; then each other
	// replica's.
	list = slices.Clone(list)
	slices.SortStableFunc(list, func(a, b core.Session) int {
		if a.Elsewhere != b.Elsewhere {
			if a.Elsewhere {
				return 1
			}
			return -1
		}
		if a.Elsewhere {
			return cmp.Compare(a.Replica, b.Replica)
		}
		return 0
	})
	replicas := slices.ContainsFunc(list, func(s core.Session) bool { return s.Elsewhere })
	if replicas != m.replicas {
		m.replicas = replicas
		m.table.SetColumns(columns(replicas))
	}
	m.list = list
	m.table.SetEmpty("No client sessions. Point an MCP client at an endpoint in the header.")
	now := m.c.Now()
	rows := make([]table.Row, len(list))
	for i, s := range list {
		client := strings.TrimSpace(s.ClientName + " " + s.ClientVersion)
		if client == "" {
			client = "—"
		}
		switch {
		case s.Stateless && s.Listening > 0:
			// A 2026-07-28 client: no session, only listen streams.
			client += fmt.Sprintf(" · %d listening", s.Listening)
		case s.Stateless:
			client += " · stateless"
		}
		cells := []table.Cell{{Text: s.Key()}}
		if replicas {
			replica := orDash(s.Replica)
			if !s.Elsewhere {
				replica = "here " + replica
			}
			cells = append(cells, table.Cell{Text: replica})
		}
		rows[i] = table.Row{Key: s.ID, Cells: append(cells, []table.Cell{
			{Text: s.Endpoint},
			{Text: s.Actor.ID},
			{Text: client},
			{Text: s.Protocol},
			{Text: s.Started.Local().Format("15:04:05")},
			{Text: common.Ago(now, s.LastActivity)},
			{Text: fmt.Sprint(s.Calls)},
		}...)}
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
			return m, common.Flash("session "+shortID(msg.Value.(endResult).Key)+" ended", false)
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
	if s.Stateless && s.Listening == 0 {
		return common.Flash("a stateless (2026-07-28) client has no session and no listen stream open to end; revoke its key to stop it", true)
	}
	m.nextID++
	ctx, con := m.c.Ctx, m.c.Console
	k := s.Key()
	run := common.Call(common.PaneSessions, m.nextID, "ending session "+shortID(k), func() (any, error) {
		return endResult{Key: k}, con.EndSession(ctx, id)
	})
	where := ""
	if s.Elsewhere {
		where = " (replica " + s.Replica + " ends it)"
	}
	if s.Stateless {
		return common.Ask("End listen streams?",
			fmt.Sprintf("End the %d listen stream(s) of stateless client %s of %s on %s%s? It has no session: its requests keep working; revoke its key to stop it.",
				s.Listening, shortID(k), s.Actor.ID, s.Endpoint, where),
			"End streams", run)
	}
	return common.Ask("End session?",
		fmt.Sprintf("End session %s of %s on %s%s? The client's next request fails and it must reconnect.", shortID(k), s.Actor.ID, s.Endpoint, where),
		"End session", run)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// shortID is the head of a session key, so a message or dialog fits the
// screen.
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
