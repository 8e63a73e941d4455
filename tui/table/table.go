// Package table is the console's list widget: fixed and flexible columns, a
// cursor, live filtering with `/`, and rendering of the visible rows only,
// so a registry of thousands of tools stays fast.
package table

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/theme"
)

// Column is one column. Width is fixed unless Flex, in which case the column
// shares the width left over (never below Width).
type Column struct {
	Title string
	Width int
	Flex  bool
}

// Cell is one cell's text and optional style.
type Cell struct {
	Text  string
	Style *lipgloss.Style
}

// Row is one row. Key identifies it across updates, so the cursor stays on
// the same row when rows change.
type Row struct {
	Key   string
	Cells []Cell
	// Style, when set, styles the whole row (cells keep their own).
	Style *lipgloss.Style
	// filter is the lower-cased text filtering matches against.
	filter string
}

// Model is a table. Use New; the zero value is not usable.
type Model struct {
	theme *theme.Theme
	keys  keys.ListKeys

	cols   []Column
	widths []int
	rows   []Row
	view   []int // indexes into rows that match the filter
	cursor int   // index into view
	offset int   // first visible index into view
	width  int
	height int
	empty  string

	input     textinput.Model
	filtering bool
	query     []string // lower-cased terms
}

// New returns an empty table.
func New(th *theme.Theme, km keys.ListKeys, cols []Column, empty string) *Model {
	in := textinput.New()
	in.Prompt = "/"
	in.Placeholder = "filter"
	in.PromptStyle = th.FilterBar
	return &Model{theme: th, keys: km, cols: cols, empty: empty, input: in}
}

// SetEmpty sets the text shown when there are no rows.
func (m *Model) SetEmpty(s string) { m.empty = s }

// SetSize lays the columns out in width; height counts every line the table
// draws (header, filter bar, rows).
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.input.Width = max(width-24, 1)
	fixed, flex := 2, 0 // the cursor column
	for _, c := range m.cols {
		fixed += c.Width + 1
		if c.Flex {
			flex++
		}
	}
	spare := max(width-fixed, 0)
	m.widths = make([]int, len(m.cols))
	for i, c := range m.cols {
		m.widths[i] = c.Width
		if c.Flex && flex > 0 {
			share := spare / flex
			m.widths[i] += share
			spare -= share
			flex--
		}
	}
	m.clamp()
}

// SetColumns replaces the columns; the rows set next must match them.
func (m *Model) SetColumns(cols []Column) {
	m.cols = cols
	m.SetSize(m.width, m.height)
}

// SetRows replaces the rows, keeping the cursor on the same key if it is
// still there.
func (m *Model) SetRows(rows []Row) {
	sel, hadSel := m.SelectedKey()
	for i := range rows {
		var b strings.Builder
		for _, c := range rows[i].Cells {
			b.WriteString(strings.ToLower(c.Text))
			b.WriteByte(' ')
		}
		rows[i].filter = b.String()
	}
	m.rows = rows
	m.refilter()
	if hadSel {
		m.Select(sel)
	}
	m.clamp()
}

// Len is the number of rows that match the filter.
func (m *Model) Len() int { return len(m.view) }

// Total is the number of rows.
func (m *Model) Total() int { return len(m.rows) }

// Selected returns the row under the cursor.
func (m *Model) Selected() (Row, bool) {
	if m.cursor < 0 || m.cursor >= len(m.view) {
		return Row{}, false
	}
	return m.rows[m.view[m.cursor]], true
}

// SelectedKey returns the key of the row under the cursor.
func (m *Model) SelectedKey() (string, bool) {
	r, ok := m.Selected()
	return r.Key, ok
}

// Select moves the cursor to the row with key; false if it is filtered out
// or gone.
func (m *Model) Select(k string) bool {
	for i, idx := range m.view {
		if m.rows[idx].Key == k {
			m.cursor = i
			m.clamp()
			return true
		}
	}
	return false
}

// GotoBottom moves the cursor to the last row.
func (m *Model) GotoBottom() {
	m.cursor = len(m.view) - 1
	m.clamp()
}

// AtBottom reports whether the cursor is on the last row (or there are none).
func (m *Model) AtBottom() bool { return m.cursor >= len(m.view)-1 }

// Filtering is true while the filter input has focus.
func (m *Model) Filtering() bool { return m.filtering }

// Query is the filter text.
func (m *Model) Query() string { return m.input.Value() }

// SetQuery sets the filter text.
func (m *Model) SetQuery(q string) {
	m.input.SetValue(q)
	m.setQuery(q)
}

func (m *Model) setQuery(q string) {
	m.query = strings.Fields(strings.ToLower(q))
	sel, hadSel := m.SelectedKey()
	m.refilter()
	if !hadSel || !m.Select(sel) {
		m.cursor, m.offset = 0, 0
	}
	m.clamp()
}

func (m *Model) refilter() {
	m.view = m.view[:0]
	for i := range m.rows {
		if m.matches(&m.rows[i]) {
			m.view = append(m.view, i)
		}
	}
}

func (m *Model) matches(r *Row) bool {
	for _, term := range m.query {
		if !strings.Contains(r.filter, term) {
			return false
		}
	}
	return true
}

func (m *Model) bodyHeight() int {
	h := m.height - 1 // header
	if m.filtering || len(m.query) > 0 {
		h--
	}
	return max(h, 1)
}

func (m *Model) clamp() {
	if m.cursor >= len(m.view) {
		m.cursor = len(m.view) - 1
	}
	if m.cursor < 0 {
		m.cursor = 0
	}
	h := m.bodyHeight()
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if m.cursor >= m.offset+h {
		m.offset = m.cursor - h + 1
	}
	if maxOff := max(len(m.view)-h, 0); m.offset > maxOff {
		m.offset = maxOff
	}
}

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd { return nil }

// Update handles movement and filtering keys. handled is false for keys the
// table does not use, so the pane can act on them.
func (m *Model) Update(msg tea.Msg) (cmd tea.Cmd, handled bool) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		if m.filtering {
			m.input, cmd = m.input.Update(msg)
			return cmd, true
		}
		return nil, false
	}
	k := m.Keys()
	if m.filtering {
		switch {
		case key.Matches(km, k.ClearFilter):
			m.filtering = false
			m.input.Blur()
			m.SetQuery("")
			return nil, true
		case key.Matches(km, k.KeepFilter):
			m.filtering = false
			m.input.Blur()
			m.clamp()
			return nil, true
		case key.Matches(km, k.Up, k.Down):
			// Fall through to movement below.
		default:
			before := m.input.Value()
			m.input, cmd = m.input.Update(msg)
			if v := m.input.Value(); v != before {
				m.setQuery(v)
			}
			return cmd, true
		}
	}
	switch {
	case key.Matches(km, k.Filter):
		m.filtering = true
		m.clamp()
		return m.input.Focus(), true
	case key.Matches(km, k.ClearFilter):
		m.SetQuery("")
		return nil, true
	case key.Matches(km, k.Up):
		m.cursor--
	case key.Matches(km, k.Down):
		m.cursor++
	case key.Matches(km, k.Top):
		m.cursor = 0
	case key.Matches(km, k.Bottom):
		m.cursor = len(m.view) - 1
	case key.Matches(km, k.PageUp):
		m.cursor -= m.bodyHeight()
	case key.Matches(km, k.PageDown):
		m.cursor += m.bodyHeight()
	default:
		return nil, false
	}
	m.clamp()
	return nil, true
}

// Keys is the table's bindings in its current state. While the filter is
// typed into, letters are text: only the arrows move, enter keeps the
// filter and esc clears it. Otherwise esc clears a kept filter, and does
// nothing (so a pane may use it) when there is none.
func (m *Model) Keys() keys.ListKeys {
	k := m.keys
	if m.filtering {
		k.Up.SetKeys("up")
		k.Up.SetHelp("↑", "up")
		k.Down.SetKeys("down")
		k.Down.SetHelp("↓", "down")
		keys.Disable(&k.Top, &k.Bottom, &k.PageUp, &k.PageDown, &k.Filter)
		return k
	}
	k.KeepFilter.SetEnabled(false)
	k.ClearFilter.SetEnabled(len(m.query) > 0)
	return k
}

// ShortHelp is the table's bindings for a key bar.
func (m *Model) ShortHelp() []key.Binding {
	k := m.Keys()
	if m.filtering {
		return []key.Binding{k.KeepFilter, k.ClearFilter}
	}
	return []key.Binding{k.Up, k.Down, k.Filter, k.ClearFilter}
}

// Bindings is every binding the table acts on now, for a pane's full help.
func (m *Model) Bindings() []key.Binding {
	k := m.Keys()
	return []key.Binding{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown, k.Filter, k.KeepFilter, k.ClearFilter}
}

// View renders the header, the filter bar when in use, and the visible rows.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	th := m.theme
	var b strings.Builder
	b.Grow((m.width + 16) * m.height)
	// Header.
	hdr := make([]string, 0, len(m.cols))
	for i, c := range m.cols {
		hdr = append(hdr, common.Pad(c.Title, m.widths[i]))
	}
	b.WriteString(th.Header.Render(common.Truncate("  "+strings.Join(hdr, " "), m.width)))
	lines := 1
	if m.filtering || len(m.query) > 0 {
		b.WriteByte('\n')
		note := th.Muted.Render(countNote(len(m.view), len(m.rows)))
		bar := m.input.View()
		if !m.filtering {
			// A long query (a pasted session id) is cut, not the count
			// after it: the count says whether the filter found anything.
			const hint = "  (esc clears)"
			avail := m.width - lipgloss.Width(note) - len(hint)
			bar = th.FilterBar.Render(common.Truncate("/"+m.input.Value(), avail)) + th.Muted.Render(hint)
		}
		b.WriteString(common.Truncate(bar+note, m.width))
		lines++
	}
	if len(m.view) == 0 {
		b.WriteByte('\n')
		msg := m.empty
		if len(m.rows) > 0 {
			msg = "No rows match the filter."
		}
		b.WriteString(th.Muted.Render(common.Truncate("  "+msg, m.width)))
		lines++
	}
	end := min(m.offset+m.bodyHeight(), len(m.view))
	for i := m.offset; i < end; i++ {
		b.WriteByte('\n')
		b.WriteString(m.renderRow(&m.rows[m.view[i]], i == m.cursor))
		lines++
	}
	for ; lines < m.height; lines++ {
		b.WriteByte('\n')
	}
	return b.String()
}

func countNote(shown, total int) string {
	var b strings.Builder
	b.WriteString("  ")
	b.WriteString(itoa(shown))
	b.WriteString(" of ")
	b.WriteString(itoa(total))
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}

func (m *Model) renderRow(r *Row, selected bool) string {
	var b strings.Builder
	if selected {
		b.WriteString("▸ ")
	} else {
		b.WriteString("  ")
	}
	for i := range m.cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		var c Cell
		if i < len(r.Cells) {
			c = r.Cells[i]
		}
		text := common.Pad(common.OneLine(c.Text), m.widths[i])
		switch {
		case selected:
			b.WriteString(text)
		case c.Style != nil:
			b.WriteString(c.Style.Render(text))
		case r.Style != nil:
			b.WriteString(r.Style.Render(text))
		default:
			b.WriteString(text)
		}
	}
	line := common.Truncate(b.String(), m.width)
	if selected {
		return m.theme.Selected.Render(common.Pad(line, m.width))
	}
	return line
}
