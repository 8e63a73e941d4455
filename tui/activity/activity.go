// Package activity is the Activity pane (CO-7): a live feed of calls (time,
// actor, tool, outcome, latency), warnings, and the actions of every
// operator attached to the gateway (CO-9). It follows the newest entry
// until paused with space; `/` filters; enter on a call shows its audit
// record and whether its chain verifies (OP-10).
package activity

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
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
	callID  string // a call's, "" for other entries
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
	// detail is the call whose audit record is shown, "" for the list;
	// audit is what was read of it (nil until it arrives), auditID the
	// read's id, so a late answer for another call is dropped.
	detail   string
	audit    []core.AuditCheck
	auditErr error
	auditID  uint64
	vp       viewport.Model
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
	vp := viewport.New(0, 0)
	vp.KeyMap = c.Keys.Scroll.Viewport()
	return &Model{c: c, table: t, follow: true, vp: vp}
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
	m.vp.Width, m.vp.Height = w, max(h-1, 1)
	m.renderDetail()
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
		if f := findingsSummary(r.Findings); f != "" {
			detail += " · found " + f // IN-2: kinds and places, never values
		}
		e = entry{callID: r.CallID, cells: []table.Cell{
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
	if r, ok := msg.(common.ResultMsg); ok {
		return m, m.result(r)
	}
	if m.detail != "" {
		if km, ok := msg.(tea.KeyMsg); ok && key.Matches(km, m.keys().Back) {
			m.detail, m.audit, m.auditErr = "", nil, nil
			return m, nil
		}
		var cmd tea.Cmd
		m.vp, cmd = m.vp.Update(msg)
		return m, cmd
	}
	if km, ok := msg.(tea.KeyMsg); ok && key.Matches(km, m.keys().Details) {
		return m, m.open()
	}
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

// auditRead is the answer to an audit read of one call.
type auditRead struct {
	CallID string
	Checks []core.AuditCheck
}

// open shows the selected call's audit record and asks for it.
func (m *Model) open() tea.Cmd {
	e, ok := m.selected()
	if !ok || e.callID == "" {
		return nil
	}
	m.auditID++
	id, callID := m.auditID, e.callID
	m.detail, m.audit, m.auditErr = callID, nil, nil
	m.renderDetail()
	m.vp.GotoTop()
	ctx, con := m.c.Ctx, m.c.Console
	return common.Call(common.PaneActivity, id, "reading the audit of call "+callID, func() (any, error) {
		checks, err := con.AuditOf(ctx, callID)
		return auditRead{CallID: callID, Checks: checks}, err
	})
}

func (m *Model) selected() (entry, bool) {
	k, ok := m.table.SelectedKey()
	if !ok {
		return entry{}, false
	}
	for _, e := range m.entries {
		if strconv.FormatUint(e.key, 10) == k {
			return e, true
		}
	}
	return entry{}, false
}

func (m *Model) result(r common.ResultMsg) tea.Cmd {
	v, ok := r.Value.(auditRead)
	if !ok || r.ID != m.auditID || v.CallID != m.detail {
		return nil // stale: another call is open now, or none
	}
	m.audit, m.auditErr = v.Checks, r.Err
	if m.audit == nil && r.Err == nil {
		m.audit = []core.AuditCheck{}
	}
	m.renderDetail()
	return nil
}

// renderDetail lays out the audit record: the fields the audit holds
// (the arguments only as their hash) and the chain check in words, so it
// reads the same without colour.
func (m *Model) renderDetail() {
	if m.detail == "" {
		return
	}
	th := m.c.Theme
	wrap := lipgloss.NewStyle().Width(max(m.width, 20))
	var b strings.Builder
	line := func(label, value string) {
		if value != "" {
			b.WriteString(th.Muted.Render(fmt.Sprintf("%-13s", label)) + value + "\n")
		}
	}
	b.WriteString(th.Title.Render("Audit of call "+m.detail) + "\n\n")
	switch {
	case m.auditErr != nil:
		b.WriteString(th.Err.Render(wrap.Render("reading the audit failed: "+m.auditErr.Error())) + "\n")
	case m.audit == nil:
		b.WriteString(th.Muted.Render("reading the audit…") + "\n")
	case len(m.audit) == 0:
		b.WriteString(wrap.Render("No audit record of this call is stored (yet, or any more).") + "\n")
	}
	for i, c := range m.audit {
		if i > 0 {
			b.WriteString("\n")
		}
		r := c.Record
		line("time", r.Time.Local().Format("2006-01-02 15:04:05.000"))
		line("actor", r.ActorID)
		line("tenant", r.Tenant)
		line("endpoint", r.Endpoint)
		line("session", r.Session)
		line("tool", r.Tool)
		line("upstream", strings.TrimSpace(r.Source+" "+r.RemoteName))
		line("args hash", r.ArgsHash)
		line("outcome", r.Outcome)
		line("latency", common.Duration(r.Latency))
		line("rule", r.Rule)
		line("confirmation", r.ConfirmTokenID)
		line("connection", r.Connection)
		line("found", findingsSummary(r.Findings))
		if c.Chain != "" {
			line("chain", fmt.Sprintf("%s seq %d", c.Chain, c.Seq))
			line("hash", c.Hash)
		}
		switch {
		case c.Unchained:
			// Not tampered: from before the audit had chains (OP-10).
			b.WriteString(th.Muted.Render(wrap.Render("– unchained: "+c.Problem)) + "\n")
			continue
		case !c.Verified:
			b.WriteString(th.Err.Render(wrap.Render("✗ DOES NOT VERIFY: "+c.Problem)) + "\n")
			continue
		}
		signed := fmt.Sprintf("no checkpoint covers it yet; links checked up to seq %d", c.CheckedTo)
		switch {
		case !c.KeyKnown:
			signed = fmt.Sprintf("checkpoints not checked: no checkpoint key; links checked up to seq %d", c.CheckedTo)
		case c.SignedTo > 0:
			signed = fmt.Sprintf("signed up to seq %d", c.SignedTo)
		}
		b.WriteString(th.OK.Render(wrap.Render("✓ verifies: its hash and its neighbours' links hold; "+signed)) + "\n")
	}
	if len(m.audit) > 0 {
		b.WriteString("\n" + th.Muted.Render(wrap.Render("One record's check; `toolgate audit verify` walks every chain.")) + "\n")
	}
	m.vp.SetContent(b.String())
}

// keys is the pane's bindings now: space is text while filtering, and
// says what it does next.
func (m *Model) keys() keys.ActivityKeys {
	k := m.c.Keys.Activity
	k.Follow.SetEnabled(!m.table.Filtering() && m.detail == "")
	k.Back.SetEnabled(m.detail != "")
	e, ok := m.selected()
	k.Details.SetEnabled(m.detail == "" && !m.table.Filtering() && ok && e.callID != "")
	if m.follow {
		k.Follow.SetHelp("space", "pause")
	} else {
		k.Follow.SetHelp("space", "follow")
	}
	return k
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.keys()
	if m.detail != "" {
		sk := m.c.Keys.Scroll
		return []key.Binding{k.Back, sk.Up, sk.Down}
	}
	return append([]key.Binding{k.Follow, k.Details}, m.table.ShortHelp()...)
}

func (m *Model) FullHelp() [][]key.Binding {
	k := m.keys()
	if m.detail != "" {
		return [][]key.Binding{{k.Back}, m.c.Keys.Scroll.Bindings()}
	}
	return [][]key.Binding{{k.Follow, k.Details}, m.table.Bindings()}
}

func (m *Model) View() string {
	th := m.c.Theme
	if m.detail != "" {
		pct := fmt.Sprintf("  %3.f%%", m.vp.ScrollPercent()*100)
		hint := common.Hint(m.keys().Back) + " · ↑/↓ scroll"
		return common.Truncate(th.Muted.Render(hint+pct), m.width) + "\n" + m.vp.View()
	}
	state := th.OK.Render("● following")
	if !m.follow {
		state = th.Warn.Render("⏸ paused")
		if m.unseen > 0 {
			state += th.Muted.Render(fmt.Sprintf(" (%d new)", m.unseen))
		}
	}
	return common.Truncate(state, m.width) + "\n" + m.table.View()
}

// findingsSummary says in a line what inspection found in a call and did
// (IN-2): "secrets github-token in result /content/0/text: redact", one
// per finding. The record holds no value to show.
func findingsSummary(text string) string {
	if text == "" {
		return ""
	}
	var fs []struct {
		Type, Detector, Path, Action, In string
	}
	if json.Unmarshal([]byte(text), &fs) != nil {
		return ""
	}
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		where := strings.TrimSpace(f.In + " " + f.Path)
		parts = append(parts, fmt.Sprintf("%s %s in %s: %s", f.Type, f.Detector, where, f.Action))
	}
	return strings.Join(parts, "; ")
}
