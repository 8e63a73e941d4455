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
