package tui

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
)

// OP-9, CO-7: a traced call's entry in the Activity pane carries its whole
// trace id, so the operator can look the call up in the tracing backend
// (and `/` finds it); an untraced call's shows none.
func TestActivityShowsTraceID(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	f := newFake()
	m := ready(t, f, 160, 30)
	press(t, m, "6")
	m.Update(eventMsg(core.Event{Seq: 10, Time: t0, Data: core.CallFinished{
		Record: core.AuditRecord{ActorID: "demo", Tool: "forecast", Outcome: "ok", Endpoint: "/mcp"}, TraceID: traceID,
	}}))
	m.Update(eventMsg(core.Event{Seq: 11, Time: t0, Data: core.CallFinished{
		Record: core.AuditRecord{ActorID: "demo", Tool: "untraced_tool", Outcome: "ok", Endpoint: "/mcp"},
	}}))
	view := m.View()
	if !strings.Contains(view, "/mcp trace "+traceID) {
		t.Fatalf("the traced call's entry lacks its trace id:\n%s", view)
	}
	if strings.Count(view, " trace ") != 1 {
		t.Fatalf("an untraced call shows a trace:\n%s", view)
	}
}

// OP-10, CO-7: enter on a call in the Activity pane shows its audit
// record, the arguments only as their hash, and in words whether each
// record's chain verifies; the view fits 80×24; esc goes back to the
// feed; enter on an entry that is no call reads nothing.
func TestActivityShowsACallsAuditRecord(t *testing.T) {
	const hash = "9f2c4b1e8a7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6b5a493827160f5e4d3"
	f := newFake()
	f.audits = map[string][]core.AuditCheck{"call-7": {
		{Record: core.AuditRecord{Time: t0, ActorID: "demo", Endpoint: "/mcp", Tool: "weather_forecast", Source: "weather", RemoteName: "forecast",
			ArgsHash: "hmac-sha256:5e1f", Outcome: core.AuditIntent, CallID: "call-7", Rule: "default"},
			Chain: "a1b2c3d4e5f6a1b2c3d4e5f6", Seq: 41, Hash: hash, Verified: true, SignedTo: 64, KeyKnown: true},
		{Record: core.AuditRecord{Time: t0, ActorID: "demo", Endpoint: "/mcp", Tool: "weather_forecast", Outcome: "ok", CallID: "call-7"},
			Chain: "a1b2c3d4e5f6a1b2c3d4e5f6", Seq: 42, Hash: hash, Problem: "it does not match its hash: its content was changed, or it was inserted"},
	}}
	m := ready(t, f, 80, 24)
	press(t, m, "6")
	m.Update(eventMsg(core.Event{Seq: 10, Time: t0, Data: core.Warning{Source: "gateway", Message: "a warning"}}))
	press(t, m, "enter")
	if strings.Contains(strings.Join(f.Calls(), "\n"), "audit") {
		t.Fatalf("enter on a warning read an audit: %v", f.Calls())
	}
	m.Update(eventMsg(core.Event{Seq: 11, Time: t0, Data: core.CallFinished{
		Record: core.AuditRecord{ActorID: "demo", Tool: "weather_forecast", Outcome: "ok", Endpoint: "/mcp", CallID: "call-7"},
	}}))
	press(t, m, "enter")
	view := m.View()
	checkSize(t, view, 80, 24)
	for _, want := range []string{"Audit of call call-7", "hmac-sha256:5e1f", "weather forecast", "seq 41", hash,
		"✓ verifies", "signed up to seq 64", "✗ DOES NOT VERIFY: it does not match its hash"} {
		if !strings.Contains(view, want) {
			press(t, m, "pgdown")
			if v := m.View(); !strings.Contains(v, want) {
				t.Errorf("the audit view lacks %q:\n%s\n…\n%s", want, view, v)
			}
			press(t, m, "pgup")
		}
	}
	press(t, m, "esc")
	if v := m.View(); strings.Contains(v, "Audit of call") || !strings.Contains(v, "weather_forecast") {
		t.Errorf("esc did not go back to the feed:\n%s", v)
	}
}

// OP-10: a record from before the audit had chains is shown as unchained,
// not as altered; a record verified without a key says how far its chain's
// links were checked, and claims no checkpoint.
func TestActivityShowsUnchainedAndUnsignedRecords(t *testing.T) {
	f := newFake()
	f.audits = map[string][]core.AuditCheck{"call-8": {
		{Record: core.AuditRecord{Time: t0, ActorID: "demo", Endpoint: "/mcp", Tool: "weather_forecast", Outcome: "ok", CallID: "call-8"},
			Unchained: true, Problem: "written before the audit had chains: it cannot be verified"},
		{Record: core.AuditRecord{Time: t0, ActorID: "demo", Endpoint: "/mcp", Tool: "weather_forecast", Outcome: "ok", CallID: "call-8"},
			Chain: "a1b2c3d4e5f6a1b2c3d4e5f6", Seq: 3, Hash: "ab", Verified: true, CheckedTo: 12},
	}}
	m := ready(t, f, 160, 60)
	press(t, m, "6")
	m.Update(eventMsg(core.Event{Seq: 11, Time: t0, Data: core.CallFinished{
		Record: core.AuditRecord{ActorID: "demo", Tool: "weather_forecast", Outcome: "ok", Endpoint: "/mcp", CallID: "call-8"},
	}}))
	press(t, m, "enter")
	view := m.View()
	for _, want := range []string{"unchained: written before the audit had chains",
		"✓ verifies", "no checkpoint key; links checked up to seq 12"} {
		if !strings.Contains(view, want) {
			t.Errorf("the audit view lacks %q:\n%s", want, view)
		}
	}
	if strings.Contains(view, "DOES NOT VERIFY") {
		t.Errorf("a record from before the chains is shown as altered:\n%s", view)
	}
}

// IN-2, CO-7: a call whose content inspection flagged, redacted or
// blocked shows in the feed what was found where and what was done —
// kinds, detectors and places, never a value — and so does its audit.
func TestActivityShowsInspectionFindings(t *testing.T) {
	const findings = `[{"type":"secrets","detector":"github-token","path":"/content/0/text","action":"redact","in":"result"}]`
	f := newFake()
	f.audits = map[string][]core.AuditCheck{"call-9": {{Record: core.AuditRecord{Time: t0, ActorID: "demo", Endpoint: "/mcp",
		Tool: "ci_log", Outcome: "ok", CallID: "call-9", Findings: findings}, Verified: true}}}
	m := ready(t, f, 200, 30)
	press(t, m, "6")
	m.Update(eventMsg(core.Event{Seq: 10, Time: t0, Data: core.CallFinished{
		Record: core.AuditRecord{ActorID: "demo", Tool: "ci_log", Outcome: "ok", Endpoint: "/mcp", CallID: "call-9", Findings: findings},
	}}))
	want := "found secrets github-token in result /content/0/text: redact"
	if view := m.View(); !strings.Contains(view, want) {
		t.Fatalf("the feed lacks the finding:\n%s", view)
	}
	press(t, m, "enter")
	if view := m.View(); !strings.Contains(view, "secrets github-token in result /content/0/text: redact") {
		t.Errorf("the audit view lacks the finding:\n%s", view)
	}
}
