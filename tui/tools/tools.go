// Package tools is the Tools pane (CO-2): every registry tool with its
// source, kind, review state and scanner flags, then every prompt and
// resource the upstreams list (kind "prompt" or "resource"), reviewed alike;
// `/` filters live; enter opens the review view of one; a approves, x
// rejects.
package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review/scan"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/table"
)

// ScanDelay debounces rescans while tools are being registered.
const ScanDelay = 300 * time.Millisecond

// Values carried by common.ResultMsg for this pane.
type (
	scanTick   struct{}
	scanResult struct{ Kinds map[string][]core.FlagKind }
	flagResult struct {
		Name  string
		Flags []core.Flag
	}
	reviewResult struct {
		Name  string
		State core.ReviewState
	}
)

// Model is the Tools pane.
type Model struct {
	c     *common.Common
	table *table.Model
	vp    viewport.Model

	tools   []core.ToolInfo
	entries []core.ReviewEntry // keyed by Ref in the table
	reviews map[string]core.ReviewState
	kinds   map[string][]core.FlagKind
	loaded  bool

	// scanGen counts tool-list changes; a scan or its debounce tick for an
	// older generation is stale.
	scanGen uint64

	detail     string // tool shown in the review view; "" in the list
	flags      []core.Flag
	flagsID    uint64
	nextID     uint64
	width, hgt int
}

// New returns the pane.
func New(c *common.Common) *Model {
	cols := []table.Column{
		{Title: "NAME", Width: 20, Flex: true},
		{Title: "SOURCE", Width: 10},
		{Title: "KIND", Width: 6},
		{Title: "REVIEW", Width: 8},
		{Title: "FLAGS", Width: 22, Flex: true},
	}
	vp := viewport.New(0, 0)
	vp.KeyMap = c.Keys.Scroll.Viewport()
	return &Model{c: c, table: table.New(c.Theme, c.Keys.List, cols, "Loading tools…"), vp: vp, kinds: map[string][]core.FlagKind{}}
}

func (m *Model) Init() tea.Cmd { return nil }

func (m *Model) Title() string { return "Tools" }

func (m *Model) Count() int { return len(m.tools) + len(m.entries) }

func (m *Model) Capturing() bool { return m.detail == "" && m.table.Filtering() }

// Table exposes the list, for tests and benchmarks.
func (m *Model) Table() *table.Model { return m.table }

// SetSize lays the pane out.
func (m *Model) SetSize(w, h int) {
	m.width, m.hgt = w, h
	m.table.SetSize(w, h)
	m.vp.Width, m.vp.Height = w, max(h-1, 1)
	m.renderDetail()
}

// SetTools replaces the tool list and review states. It returns the command
// that rescans the tools' flags after a short quiet period.
func (m *Model) SetTools(tools []core.ToolInfo, reviews map[string]core.ReviewState) tea.Cmd {
	m.tools = tools
	m.reviews = reviews
	m.loaded = true
	m.table.SetEmpty("No tools: no upstream is connected and no native tool is registered.")
	m.rebuild()
	if m.detail != "" {
		m.renderDetail()
	}
	m.scanGen++
	gen := m.scanGen
	return tea.Tick(ScanDelay, func(time.Time) tea.Msg {
		return common.ResultMsg{Pane: common.PaneTools, ID: gen, Value: scanTick{}}
	})
}

// SetReviews updates review states only.
func (m *Model) SetReviews(reviews map[string]core.ReviewState) {
	m.reviews = reviews
	m.rebuild()
	if m.detail != "" {
		m.renderDetail()
	}
}

// SetEntries replaces the prompts and resources. Their flags come with
// them: the gateway scanned them.
func (m *Model) SetEntries(entries []core.ReviewEntry) {
	m.entries = entries
	m.rebuild()
	if m.detail != "" {
		m.renderDetail()
	}
}

// SetFlagKinds sets the flag kinds of every tool (tests set them directly).
func (m *Model) SetFlagKinds(kinds map[string][]core.FlagKind) {
	m.kinds = kinds
	m.rebuild()
}

func (m *Model) rebuild() {
	th := m.c.Theme
	rows := make([]table.Row, len(m.tools), len(m.tools)+len(m.entries))
	for i, t := range m.tools {
		state := m.reviews[t.Name]
		review := string(state)
		if review == "" {
			review = "—"
		}
		rs := th.Review(state)
		var flagText string
		var fs *lipgloss.Style
		if ks := m.kinds[t.Name]; len(ks) > 0 {
			parts := make([]string, len(ks))
			for j, k := range ks {
				parts[j] = string(k)
			}
			flagText = strings.Join(parts, ",")
			s := th.Severity(ks[0].Severity())
			fs = &s
		}
		kind := string(t.Kind)
		if t.Disabled {
			kind += "!"
		}
		rows[i] = table.Row{Key: t.Name, Cells: []table.Cell{
			{Text: t.Name},
			{Text: common.Source(t.Source)},
			{Text: kind},
			{Text: review, Style: &rs},
			{Text: flagText, Style: fs},
		}}
	}
	for _, e := range m.entries {
		state := m.entryState(e)
		rs := th.Review(state)
		var flagText string
		var fs *lipgloss.Style
		if ks := flagKinds(e.Flags); len(ks) > 0 {
			parts := make([]string, len(ks))
			for j, k := range ks {
				parts[j] = string(k)
			}
			flagText = strings.Join(parts, ",")
			s := th.Severity(ks[0].Severity())
			fs = &s
		}
		rows = append(rows, table.Row{Key: e.Ref, Cells: []table.Cell{
			{Text: scan.VisibleText(e.Name)},
			{Text: common.Source(e.Source)},
			{Text: string(e.Kind)},
			{Text: string(state), Style: &rs},
			{Text: flagText, Style: fs},
		}})
	}
	m.table.SetRows(rows)
}

// entryState is e's state: the one a review event reported last, else the
// one e was read with.
func (m *Model) entryState(e core.ReviewEntry) core.ReviewState {
	if st, ok := m.reviews[e.Ref]; ok {
		return st
	}
	return e.State
}

// entry finds a prompt or resource by its ref.
func (m *Model) entry(ref string) (core.ReviewEntry, bool) {
	for _, e := range m.entries {
		if e.Ref == ref {
			return e, true
		}
	}
	return core.ReviewEntry{}, false
}

func (m *Model) tool(name string) (core.ToolInfo, bool) {
	i, ok := slices.BinarySearchFunc(m.tools, name, func(t core.ToolInfo, n string) int { return strings.Compare(t.Name, n) })
	if ok {
		return m.tools[i], true
	}
	for _, t := range m.tools {
		if t.Name == name {
			return t, true
		}
	}
	return core.ToolInfo{}, false
}

func (m *Model) id() uint64 {
	m.nextID++
	return m.nextID
}

// Update handles keys and this pane's results.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.ResultMsg:
		return m, m.result(msg)
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	if m.detail == "" {
		cmd, _ := m.table.Update(msg)
		return m, cmd
	}
	return m, nil
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := m.keys()
	if m.detail != "" {
		switch {
		case key.Matches(msg, k.Back):
			m.detail, m.flags, m.flagsID = "", nil, 0
			return nil
		case key.Matches(msg, k.Approve):
			return m.approve(m.detail)
		case key.Matches(msg, k.Reject):
			return m.reject(m.detail)
		case keys.Pressed(msg, k.Approve, k.Reject):
			return m.cannot(msg, m.detail)
		}
		m.vp, _ = m.vp.Update(msg)
		return nil
	}
	if cmd, handled := m.table.Update(msg); handled {
		return cmd
	}
	name, ok := m.table.SelectedKey()
	if !ok {
		return nil
	}
	switch {
	case key.Matches(msg, k.Review):
		return m.open(name)
	case key.Matches(msg, k.Approve):
		return m.approve(name)
	case key.Matches(msg, k.Reject):
		return m.reject(name)
	case keys.Pressed(msg, k.Approve, k.Reject):
		return m.cannot(msg, name)
	}
	return nil
}

// keys is the pane's bindings now: the list's or the review view's, and a
// tool that cannot be reviewed disables approve and reject.
func (m *Model) keys() keys.ToolKeys {
	k := m.c.Keys.Tools
	name := m.detail
	if name == "" {
		k.Back.SetEnabled(false)
		sel, ok := m.table.SelectedKey()
		if !ok || m.table.Filtering() {
			keys.Disable(&k.Review, &k.Approve, &k.Reject)
			return k
		}
		name = sel
	} else {
		k.Review.SetEnabled(false)
	}
	if m.reviewable(name) != "" {
		keys.Disable(&k.Approve, &k.Reject)
	}
	return k
}

// cannot says why approve or reject does not apply to name.
func (m *Model) cannot(msg tea.KeyMsg, name string) tea.Cmd {
	verb := "reject"
	if keys.Pressed(msg, m.c.Keys.Tools.Approve) {
		verb = "approve"
	}
	return common.Flash("cannot "+verb+": "+m.reviewable(name), true)
}

// open shows the review view of name and asks for its flags.
func (m *Model) open(name string) tea.Cmd {
	id := m.id()
	m.detail, m.flags, m.flagsID = name, nil, id
	m.renderDetail()
	m.vp.GotoTop()
	ctx, con := m.c.Ctx, m.c.Console
	return common.Call(common.PaneTools, id, "scanning "+name, func() (any, error) {
		fl, err := con.ToolFlags(ctx, name)
		return flagResult{Name: name, Flags: fl}, err
	})
}

// reviewable says why name cannot be reviewed, or "".
func (m *Model) reviewable(name string) string {
	if kind, _ := core.ParseReviewRef(name); kind != core.EntryTool {
		if _, ok := m.entry(name); !ok {
			return fmt.Sprintf("%s is no longer listed", name)
		}
		return ""
	}
	t, ok := m.tool(name)
	if !ok {
		return fmt.Sprintf("%s is no longer registered", name)
	}
	if t.Source == "" {
		return "native tools are the gateway's own and are not reviewed"
	}
	return ""
}

func (m *Model) approve(name string) tea.Cmd {
	ctx, con, by := m.c.Ctx, m.c.Console, m.c.Operator
	return common.Call(common.PaneTools, m.id(), "approving "+name, func() (any, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return reviewResult{Name: name, State: core.ReviewApproved}, con.ApproveTool(ctx, name, by)
	})
}

func (m *Model) reject(name string) tea.Cmd {
	what, source := "tool", ""
	if e, ok := m.entry(name); ok {
		what, source = string(e.Kind), e.Source
	} else {
		t, _ := m.tool(name)
		source = t.Source
	}
	ctx, con, by := m.c.Ctx, m.c.Console, m.c.Operator
	id := m.id()
	run := common.Call(common.PaneTools, id, "rejecting "+name, func() (any, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return reviewResult{Name: name, State: core.ReviewRejected}, con.RejectTool(ctx, name, by)
	})
	return common.Ask("Reject "+what+"?",
		fmt.Sprintf("Reject %s from %s? Clients stop seeing it until an operator approves it again.", name, source),
		"Reject "+name, run)
}

func (m *Model) result(r common.ResultMsg) tea.Cmd {
	switch v := r.Value.(type) {
	case scanTick:
		if r.ID != m.scanGen {
			return nil // more changes came: a later tick scans
		}
		tools := slices.Clone(m.tools)
		gen := m.scanGen
		return func() tea.Msg {
			return common.ResultMsg{Pane: common.PaneTools, ID: gen, Value: scanResult{Kinds: ScanAll(tools)}}
		}
	case scanResult:
		if r.ID != m.scanGen {
			return nil // stale: the tools changed since
		}
		m.SetFlagKinds(v.Kinds)
	case flagResult:
		if r.ID != m.flagsID || v.Name != m.detail {
			return nil // stale: another tool is open now, or none
		}
		if r.Err != nil {
			return common.Flash(fmt.Sprintf("scanning %s failed: %v", v.Name, r.Err), true)
		}
		m.flags = v.Flags
		if m.flags == nil {
			m.flags = []core.Flag{}
		}
		m.renderDetail()
	case reviewResult:
		if r.Err != nil {
			return common.Flash(fmt.Sprintf("%s: %v", r.Label, r.Err), true)
		}
		return common.Flash(fmt.Sprintf("%s %s", v.Name, v.State), false)
	}
	return nil
}

func (m *Model) renderDetail() {
	if m.detail == "" {
		return
	}
	if e, ok := m.entry(m.detail); ok {
		m.vp.SetContent(DescribeEntry(m.c.Theme, e, m.entryState(e), m.flags, m.width))
		return
	}
	t, ok := m.tool(m.detail)
	if !ok {
		m.vp.SetContent(m.c.Theme.Muted.Render(m.detail + " is no longer registered."))
		return
	}
	m.vp.SetContent(Describe(m.c.Theme, t, m.reviews[t.Name], m.flags, m.width))
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.keys()
	if m.detail != "" {
		sk := m.c.Keys.Scroll
		return []key.Binding{k.Back, k.Approve, k.Reject, sk.Up, sk.Down}
	}
	return append([]key.Binding{k.Review, k.Approve, k.Reject}, m.table.ShortHelp()...)
}

func (m *Model) FullHelp() [][]key.Binding {
	k := m.keys()
	if m.detail != "" {
		return [][]key.Binding{{k.Back, k.Approve, k.Reject}, m.c.Keys.Scroll.Bindings()}
	}
	return [][]key.Binding{{k.Review, k.Approve, k.Reject}, m.table.Bindings()}
}

// View renders the pane.
func (m *Model) View() string {
	if m.detail != "" {
		pct := fmt.Sprintf("  %3.f%%", m.vp.ScrollPercent()*100)
		k := m.keys()
		hint := common.Hint(k.Back, k.Approve, k.Reject) + " · ↑/↓ scroll"
		return common.Truncate(m.c.Theme.Muted.Render(hint+pct), m.width) + "\n" + m.vp.View()
	}
	return m.table.View()
}
