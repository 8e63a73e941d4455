// Package dialog is the confirm dialog of destructive actions (CO-8): it
// names the target, and focus starts on Cancel so enter alone never
// destroys anything.
package dialog

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/theme"
)

// Focus is the focused button.
type Focus int

const (
	FocusCancel Focus = iota
	FocusConfirm
)

// Model is one open dialog.
type Model struct {
	theme *theme.Theme
	keys  keys.DialogKeys

	Title, Prompt, Confirm string
	// Then runs when the operator confirms.
	Then  tea.Cmd
	focus Focus
	width int
}

// New opens a dialog with focus on Cancel.
func New(th *theme.Theme, km keys.DialogKeys, title, prompt, confirm string, then tea.Cmd) *Model {
	if confirm == "" {
		confirm = "Confirm"
	}
	return &Model{theme: th, keys: km, Title: title, Prompt: prompt, Confirm: confirm, Then: then, focus: FocusCancel}
}

// Focus is the focused button.
func (m *Model) Focus() Focus { return m.focus }

// SetWidth bounds the dialog's width.
func (m *Model) SetWidth(w int) { m.width = w }

// Update handles a key. done is true when the dialog closes; confirmed says
// whether the operator chose the action.
func (m *Model) Update(msg tea.KeyMsg) (done, confirmed bool) {
	switch {
	case key.Matches(msg, m.keys.Cancel):
		return true, false
	case key.Matches(msg, m.keys.Select):
		return true, m.focus == FocusConfirm
	case key.Matches(msg, m.keys.Left):
		m.focus = FocusCancel
	case key.Matches(msg, m.keys.Right):
		m.focus = FocusConfirm
	}
	return false, false
}

// ShortHelp is the dialog's key bar: left and right as one entry.
func (m *Model) ShortHelp() []key.Binding {
	k := m.keys
	choose := key.NewBinding(key.WithKeys(append(k.Left.Keys(), k.Right.Keys()...)...), key.WithHelp("←/→", "choose"))
	return []key.Binding{choose, k.Select, k.Cancel}
}

// FullHelp is every binding the dialog acts on.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{{k.Left, k.Right, k.Select, k.Cancel}}
}

// View renders the dialog box.
func (m *Model) View() string {
	th := m.theme
	w := min(max(m.width-8, 30), 64)
	cancel, confirm := th.Button, th.Button
	cancelLabel, confirmLabel := "Cancel", m.Confirm
	if m.focus == FocusCancel {
		cancel = th.ButtonFocused
		cancelLabel = "> " + cancelLabel + " <"
	} else {
		confirm = th.ButtonFocused
		confirmLabel = "> " + confirmLabel + " <"
	}
	buttons := lipgloss.JoinHorizontal(lipgloss.Top, cancel.Render(cancelLabel), "  ", confirm.Render(confirmLabel))
	body := strings.Join([]string{
		th.Title.Render(m.Title),
		"",
		lipgloss.NewStyle().Width(w).Render(m.Prompt),
		"",
		buttons,
	}, "\n")
	return th.Dialog.Render(body)
}
