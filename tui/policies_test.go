package tui

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
)

// tries is the dry runs the fake was asked for.
func tries(f *fakeConsole) []string {
	return slices.DeleteFunc(f.Calls(), func(c string) bool { return !strings.HasPrefix(c, "try ") })
}

// The Policies pane reads the rules when shown, and lists each with its
// effect, its clipped expression, its hits in the last hour and the last.
//
// Covers PO-4, CO-8.
func TestPoliciesPaneListsRulesWithHits(t *testing.T) {
	f := newFake()
	m := ready(t, f, 100, 30)
	if m.Policies().Counted() || !strings.Contains(m.Policies().View(), "Loading") {
		t.Fatalf("before reading, the pane says it is loading:\n%s", m.Policies().View())
	}
	press(t, m, "7")
	if m.Active() != common.PanePolicies || !slices.Contains(f.Calls(), "policies") {
		t.Fatalf("showing the pane did not read the rules: pane %d, calls %v", m.Active(), f.Calls())
	}
	view := m.View()
	for _, want := range []string{"[7 Pol 2]", "no-secret-notes", "deny", `tool.name == "create_note"`, "3       4m ago", "ask-before-weather", "approve", "/mcp"} {
		if !strings.Contains(view, want) {
			t.Errorf("the pane lacks %q:\n%s", want, view)
		}
	}
	// r reads them again: hits move on.
	f.policies.Rules[1].Hits = 12
	press(t, m, "r")
	if !strings.Contains(m.View(), "12") {
		t.Errorf("r did not read the hits again:\n%s", m.View())
	}
	// A fresh view of the gateway (a Resync) reads them again too.
	f.policies.Rules[0].Hits = 41
	_, cmd := m.Update(resyncedMsg{snap: f.snap})
	drive(t, m, cmd)
	if !strings.Contains(m.View(), "41") {
		t.Errorf("a resync did not read the hits again:\n%s", m.View())
	}
}

// Covers PO-4, CO-8.
func TestPoliciesPaneEmpty(t *testing.T) {
	f := newFake()
	f.policies = core.PolicyReport{}
	m := ready(t, f, 80, 24)
	press(t, m, "7")
	if v := m.View(); !strings.Contains(v, "No policy rules or limits are configured") || !strings.Contains(v, "[7 Pol 0]") {
		t.Errorf("no rules:\n%s", v)
	}
}

// The dry run: actor, tool and arguments are typed (keys that are global
// elsewhere are text here), enter starts a command, not a call, and its
// answer shows the deciding rule, its effect and reason, and the listing.
//
// Covers PO-4, CO-8.
func TestPolicyDryRun(t *testing.T) {
	f := newFake()
	m := ready(t, f, 80, 24)
	press(t, m, "7", "t")
	if !m.Policies().Trying() || !m.Policies().Capturing() {
		t.Fatal("t did not open the dry run")
	}
	press(t, m, "q", "1", "backspace", "backspace", "alice", "tab")
	press(t, m, "ctrl+n") // the first of the gateway's tools
	press(t, m, "tab", `{"text":"a secret plan"}`)
	if m.Active() != common.PanePolicies {
		t.Fatalf("a key typed into the form switched panes")
	}
	_, cmd := m.Update(keyMsg("enter"))
	if cmd == nil || len(tries(f)) != 0 {
		t.Fatalf("enter must ask in a command, not in the update: cmd %v, calls %v", cmd != nil, tries(f))
	}
	if !strings.Contains(m.View(), "asking the gateway") {
		t.Errorf("while asking:\n%s", m.View())
	}
	drive(t, m, cmd)
	if got := tries(f); !slices.Equal(got, []string{`try  alice create_note {"text":"a secret plan"}`}) {
		t.Fatalf("asked %v", got)
	}
	view := m.View()
	for _, want := range []string{"rule     no-secret-notes", "effect   deny", "reason   notes about secrets are not allowed", "listed   yes: tools/list shows it to alice"} {
		if !strings.Contains(view, want) {
			t.Errorf("the answer lacks %q:\n%s", want, view)
		}
	}

	// A tool the actor is not shown, picked again from the list.
	press(t, m, "shift+tab", "ctrl+n", "tab", "end", "ctrl+u", "enter")
	if got := tries(f); len(got) != 2 || got[1] != "try  alice forecast {}" {
		t.Fatalf("asked %v", got)
	}
	view = m.View()
	if !strings.Contains(view, "rule     default (no rule matched)") || !strings.Contains(view, "listed   no: tools/list hides it from alice") {
		t.Errorf("the hidden tool's answer:\n%s", view)
	}

	press(t, m, "esc")
	if m.Policies().Trying() || m.Policies().Capturing() {
		t.Fatal("esc did not leave the dry run")
	}
	press(t, m, "1")
	if m.Active() != common.PaneUpstreams {
		t.Errorf("after the dry run, 1 goes to pane 1: at %d", m.Active())
	}
}

// What is wrong with the question is said in the form; what can be checked
// here (an actor, a tool, a JSON object) never reaches the gateway.
//
// Covers PO-4, CO-8.
func TestPolicyDryRunBadInput(t *testing.T) {
	cases := []struct {
		name  string
		keys  []string
		want  string
		asked bool
	}{
		{"no actor", []string{"tab", "search"}, "type the actor id", false},
		{"no tool", []string{"alice"}, "type a tool name", false},
		{"broken JSON", []string{"alice", "tab", "search", "tab", `{"query":`}, "the arguments are not a JSON object", false},
		{"not an object", []string{"alice", "tab", "search", "tab", `["x"]`}, "the arguments are not a JSON object", false},
		{"unknown tool", []string{"alice", "tab", "nope"}, `unknown tool: "nope"`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			m := ready(t, f, 80, 24)
			press(t, m, "7", "t")
			press(t, m, tc.keys...)
			press(t, m, "enter")
			if got := len(tries(f)) > 0; got != tc.asked {
				t.Errorf("asked the gateway: %v, want %v (%v)", got, tc.asked, tries(f))
			}
			if v := m.View(); !strings.Contains(v, tc.want) {
				t.Errorf("want %q in:\n%s", tc.want, v)
			}
			if !m.Policies().Trying() {
				t.Error("bad input closed the form")
			}
		})
	}
}

// A gateway that cannot say what its rules are: the pane says so, and r
// tries again.
//
// Covers PO-4, CO-8.
func TestPoliciesPaneReadError(t *testing.T) {
	f := newFake()
	f.policiesErr = errors.New("admin API: 503 store unavailable")
	m := ready(t, f, 80, 24)
	press(t, m, "7")
	if v := m.View(); !strings.Contains(v, "Cannot read the policy rules: admin API: 503 store unavailable") || !strings.Contains(m.Flash(), "store unavailable") {
		t.Errorf("the read error is not shown:\n%s", v)
	}
	f.policiesErr = nil
	press(t, m, "r")
	if !strings.Contains(m.View(), "no-secret-notes") {
		t.Errorf("r did not read again:\n%s", m.View())
	}
}

// Of two dry runs in flight, the answer to the earlier one arriving last is
// dropped: the form shows the answer to what it says.
//
// Covers PO-4, CO-8.
func TestPolicyDryRunStaleAnswerDropped(t *testing.T) {
	f := newFake()
	m := ready(t, f, 80, 24)
	press(t, m, "7", "t", "alice", "tab", "create_note", "tab", `{"text":"secret"}`)
	_, first := m.Update(keyMsg("enter"))
	press(t, m, "ctrl+u", `{"text":"milk"}`)
	_, second := m.Update(keyMsg("enter"))
	drive(t, m, second)
	drive(t, m, first)
	if v := m.View(); !strings.Contains(v, "rule     default") || strings.Contains(v, "rule     no-secret-notes") {
		t.Errorf("a stale answer replaced the current one:\n%s", v)
	}
	if len(tries(f)) != 2 {
		t.Errorf("asked %v", tries(f))
	}
}

// u shows each quota's current window and its heaviest users, used
// against the quota with a percentage and a bar, readable at 80×24
// without colour; a store that cannot be read is said on its quota; u or
// esc goes back to the rules.
//
// Covers PO-4, CO-8.
func TestPoliciesPaneQuotaUsage(t *testing.T) {
	f := newFake()
	day := t0.Truncate(24 * time.Hour)
	f.policies.Quotas = []core.QuotaUsage{
		{Limit: "daily-writes", Per: "actor", Quota: 200, Start: day, End: day.Add(24 * time.Hour), Top: []core.QuotaUse{
			{Parts: []string{"acme", "alice"}, Count: 200},
			{Parts: []string{"", "bob"}, Count: 170},
			{Parts: []string{"acme", "a-very-long-service-account-name-that-cannot-fit-in-eighty-columns"}, Count: 1},
		}},
		{Limit: "tool-hourly", Per: "actor+tool", Quota: 10, Start: t0.Truncate(time.Hour), End: t0.Truncate(time.Hour).Add(time.Hour),
			Top: []core.QuotaUse{{Parts: []string{"acme", "carl", "notes_search"}, Count: 5}}},
		{Limit: "per-upstream", Per: "upstream", Quota: 1000, Start: day, End: day.Add(24 * time.Hour), Top: []core.QuotaUse{}},
		{Limit: "broken", Per: "endpoint", Quota: 5, Start: day, End: day.Add(24 * time.Hour), Top: []core.QuotaUse{}, Err: "store unavailable"},
	}
	m := ready(t, f, 80, 24)
	press(t, m, "7", "u")
	if !m.Policies().Usage() {
		t.Fatal("u did not show the quotas' use")
	}
	view := m.View()
	for _, want := range []string{
		"daily-writes · per actor · 200/day · resets in 14h33m (Mar 15 00:00 UTC)",
		"acme/alice", "200/200 100% ██████████",
		"bob", "170/200  85% ████████░░",
		"1/200   0% █░░░░░░░░░",
		"tool-hourly · per actor+tool · 10/h · resets in 33m (Mar 14 10:00 UTC)",
		"acme/carl · notes_search", "5/10  50% █████░░░░░",
		"per-upstream", "no calls counted in this window",
		"✗ cannot read the counts: store unavailable",
	} {
		if !strings.Contains(view, want) {
			t.Errorf("the usage lacks %q:\n%s", want, view)
		}
	}
	lines := strings.Split(view, "\n")
	if len(lines) > 24 {
		t.Errorf("the view has %d lines for 24:\n%s", len(lines), view)
	}
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("a line of %d cells at 80 columns: %q", w, l)
		}
		if strings.Contains(l, "\x1b[") {
			t.Errorf("a coloured line without colour: %q", l)
		}
	}
	press(t, m, "u")
	if m.Policies().Usage() || !strings.Contains(m.View(), "no-secret-notes") {
		t.Fatalf("u again did not go back to the rules:\n%s", m.View())
	}
	press(t, m, "u", "esc")
	if m.Policies().Usage() || m.Active() != common.PanePolicies {
		t.Fatal("esc did not go back to the rules")
	}
}

// Without a quota the usage says so, and that rates are not counted here.
//
// Covers PO-4, CO-8.
func TestPoliciesPaneNoQuota(t *testing.T) {
	f := newFake()
	m := ready(t, f, 80, 24)
	press(t, m, "7", "u")
	if v := m.View(); !strings.Contains(v, "No quota is configured") {
		t.Errorf("no quotas:\n%s", v)
	}
}
