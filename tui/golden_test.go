package tui

import (
	"bytes"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/toolgate/toolgate/core"
)

// step is one key (or message) sent to the program and the text whose
// appearance in the output says it took effect.
type step struct {
	keys []string
	msg  tea.Msg
	msgs []tea.Msg // sent as they are
	want string
}

// TestGolden runs the console program over a fake gateway at fixed sizes
// and compares each pane's screen with testdata/TestGolden/NAME.golden
// (ASCII colour profile, so the files are plain text); go test ./tui
// -update rewrites them. The golden package fixes that path: testdata next
// to the package, named after the test.
func TestGolden(t *testing.T) {
	activityEvents := []tea.Msg{
		eventMsg(core.Event{Seq: 100, Time: t0, Data: core.CallFinished{Record: core.AuditRecord{
			Time: t0, Endpoint: "/mcp", ActorID: "demo", Session: "3f9c2a71", Tool: "forecast", Source: "weather", Outcome: "ok", Latency: 12 * time.Millisecond,
		}}}),
		eventMsg(core.Event{Seq: 101, Time: t0.Add(time.Second), Data: core.Warning{Source: "offline", Message: "upstream unreachable: connection refused"}}),
		eventMsg(core.Event{Seq: 102, Time: t0.Add(2 * time.Second), Data: core.CallFinished{Record: core.AuditRecord{
			Time: t0, Endpoint: "/mcp", ActorID: "demo", Tool: "create_note", Source: "notes", Outcome: "refused", Latency: 900 * time.Microsecond,
		}}}),
	}
	operatorEvents := []tea.Msg{
		eventMsg(core.Event{Seq: 100, Time: t0, Data: core.OperatorAction{Operator: "bob", Action: core.ActionApproveConfirmation, Target: "c-1"}}),
		eventMsg(core.Event{Seq: 101, Time: t0.Add(time.Second), Data: core.OperatorAction{Operator: "alice", Action: core.ActionRejectConfirmation, Target: "c-1",
			Error: `confirmation "c-1" already decided (approved) by bob at 2026-03-14T09:26:53Z`}}),
		eventMsg(core.Event{Seq: 102, Time: t0.Add(2 * time.Second), Data: core.OperatorAction{Operator: "bob", Action: core.ActionRefreshApply, Target: "notes", Detail: "+1 −1 ~1"}}),
	}
	lost := eventMsg(core.Event{Time: t0, Data: core.ConnectionLost{Error: "read tcp 127.0.0.1:50412->127.0.0.1:7332: read: connection reset by peer", Retry: t0.Add(3 * time.Second)}})
	cases := []struct {
		name     string
		w, h     int
		attached bool
		steps    []step
	}{
		{"upstreams_100x30", 100, 30, false, nil},
		{"upstreams_80x24", 80, 24, false, nil},
		// CO-1: traffic columns; at 80 the least important columns give way.
		{"upstreams_traffic_140x30", 140, 30, false, []step{{msgs: weatherTraffic(), want: "29ms"}}},
		{"upstreams_traffic_100x30", 100, 30, false, []step{{msgs: weatherTraffic(), want: "29ms"}}},
		{"upstreams_traffic_80x24", 80, 24, false, []step{{msgs: weatherTraffic(), want: "29ms"}}},
		{"upstream_detail_100x30", 100, 30, false, []step{{keys: []string{"j", "j", "j", "enter"}, want: "last error"}}},
		{"refresh_diff_100x30", 100, 30, false, []step{{keys: []string{"r"}, want: "removed"}}},
		{"tools_100x30", 100, 30, false, []step{{keys: []string{"2"}, want: "hidden-instruction"}}},
		{"tools_80x24", 80, 24, false, []step{{keys: []string{"2"}, want: "invisible"}}},
		{"tools_filter_100x30", 100, 30, false, []step{{keys: []string{"2"}, want: "hidden-instruction"}, {keys: []string{"/", "n", "o", "t", "e"}, want: "2 of 5"}}},
		{"tool_review_100x30", 100, 30, false, []step{{keys: []string{"2"}, want: "hidden-instruction"}, {keys: []string{"G", "enter"}, want: "secret-path"}}},
		{"tool_reject_dialog_100x30", 100, 30, false, []step{{keys: []string{"2"}, want: "hidden-instruction"}, {keys: []string{"x"}, want: "Reject tool?"}}},
		{"collisions_100x30", 100, 30, false, []step{{keys: []string{"3"}, want: "kept by"}}},
		{"sessions_100x30", 100, 30, false, []step{{keys: []string{"4"}, want: "claude-code"}}},
		{"sessions_80x24", 80, 24, false, []step{{keys: []string{"4"}, want: "claude-code"}}},
		// OP-5: other replicas' sessions, after this one's, with the replica.
		{"sessions_replicas_100x30", 100, 30, false, []step{{keys: []string{"4"}, want: "claude-code"}, {msgs: []tea.Msg{elsewhere}, want: "gw-c:303"}}},
		{"sessions_replicas_80x24", 80, 24, false, []step{{keys: []string{"4"}, want: "claude-code"}, {msgs: []tea.Msg{elsewhere}, want: "gw-c:303"}}},
		{"approvals_100x30", 100, 30, false, []step{{keys: []string{"5"}, want: "buy milk"}}},
		{"approvals_80x24", 80, 24, false, []step{{keys: []string{"5"}, want: "buy milk"}}},
		{"activity_100x30", 100, 30, false, []step{{keys: []string{"6"}, want: "following"}, {msg: tea.BatchMsg(nil), want: "refused"}}},
		{"policies_100x30", 100, 30, false, []step{{keys: []string{"7"}, want: "ask-before-weather"}}},
		{"policies_80x24", 80, 24, false, []step{{keys: []string{"7"}, want: "ask-before-weat"}}},
		{"policy_dry_run_80x24", 80, 24, false, []step{{keys: []string{"7"}, want: "ask-before-weat"},
			{keys: []string{"t", "alice", "tab", "create_note", "tab", `{"text":"secret plan"}`, "enter"}, want: "tools/list shows"}}},
		// DS-2: tried through call_tool, a tool the listing hides is not found.
		{"policy_dry_run_via_80x24", 80, 24, false, []step{{keys: []string{"7"}, want: "ask-before-weat"},
			{keys: []string{"t", "alice", "tab", "forecast", "tab", "tab", "tab", "call_tool", "enter"}, want: "found only if listed"}}},
		// IN-3: tried from a session that gathered labels.
		{"policy_dry_run_session_80x24", 80, 24, false, []step{{keys: []string{"7"}, want: "ask-before-weat"},
			{keys: []string{"t", "alice", "tab", "create_note", "tab", "tab", "tab", "tab", "untrusted,private", "enter"}, want: "session untrusted,private"}}},
		{"help_100x30", 100, 30, false, []step{{keys: []string{"?"}, want: "go to pane"}}},
		// CO-9: attached to a gateway in another process.
		{"attached_100x30", 100, 30, true, nil},
		{"attached_lost_100x30", 100, 30, true, []step{{msgs: []tea.Msg{lost}, want: "reconnecting in 3s"}}},
		{"attached_lost_80x24", 80, 24, true, []step{{msgs: []tea.Msg{lost}, want: "reconnecting in 3s"}}},
		{"activity_operator_100x30", 100, 30, true, []step{{keys: []string{"6"}, want: "following"}, {msgs: operatorEvents, want: "refresh.apply"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			model := newModel(f)
			if tc.attached {
				model = New(Options{Console: f, Operator: "alice", Now: func() time.Time { return t0 }, Attached: "http://127.0.0.1:7332"})
			}
			tm := teatest.NewTestModel(t, model, teatest.WithInitialTermSize(tc.w, tc.h))
			waitOutput(t, tm, "review mode")
			for _, s := range tc.steps {
				for _, k := range s.keys {
					tm.Send(keyMsg(k))
				}
				if s.msg != nil {
					for _, ev := range activityEvents {
						tm.Send(ev)
					}
				}
				for _, msg := range s.msgs {
					tm.Send(msg)
				}
				waitOutput(t, tm, s.want)
			}
			if err := tm.Quit(); err != nil {
				t.Fatal(err)
			}
			m := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
			got := m.View()
			checkSize(t, got, tc.w, tc.h)
			golden.RequireEqual(t, []byte(got))
		})
	}
}

func waitOutput(t *testing.T, tm *teatest.TestModel, want string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(want)) },
		teatest.WithDuration(30*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

// checkSize: the screen is exactly h lines of at most w cells (CO-8).
func checkSize(t *testing.T, view string, w, h int) {
	t.Helper()
	ls := lines(view)
	if len(ls) != h {
		t.Errorf("view has %d lines, want %d", len(ls), h)
	}
	for i, l := range ls {
		if n := displayWidth(l); n > w {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i+1, n, w, l)
		}
	}
}

func displayWidth(s string) int { return ansi.StringWidth(s) }
