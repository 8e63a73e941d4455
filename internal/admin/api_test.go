package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
)

// Every event type the gateway publishes crosses the API unchanged (CO-9):
// the attached console sees what the local one sees.
func TestEventRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tool := core.ToolInfo{Name: "notes_add", Source: "notes", RemoteName: "add", Kind: core.KindAction,
		Description: "adds a note", InputSchema: json.RawMessage(`{"type":"object"}`)}
	events := []core.EventData{
		core.ToolRegistered{Tool: tool},
		core.ToolUpdated{Old: tool, New: tool},
		core.ToolUnregistered{Tool: tool},
		core.CollisionRecorded{Collision: core.Collision{Name: "x", Kept: core.Claimant{Source: "a"}, Refused: core.Claimant{Source: "b"}}},
		core.CollisionsForgotten{Source: "a"},
		core.Resync{},
		core.SessionStarted{Session: core.Session{ID: "s1", Endpoint: "/mcp", Actor: core.Actor{ID: "ann", Roles: []string{"MEMBER"}}, Started: at, LastActivity: at}},
		core.SessionEnded{Session: core.Session{ID: "s1", Started: at, LastActivity: at}, ByOperator: true},
		core.SessionsElsewhere{Sessions: []core.Session{{ID: "k1", Endpoint: "/mcp", Actor: core.Actor{ID: "bob"}, Started: at, LastActivity: at, Replica: "b:2", Elsewhere: true}}},
		core.CallFinished{Record: core.AuditRecord{Time: at, Tool: "notes_add", Outcome: "ok", Latency: time.Millisecond}},
		core.ConfirmationPending{Pending: core.PendingConfirmation{ID: "c1", Tool: "notes_add", Arguments: json.RawMessage(`{"a":1}`), Created: at, Deadline: at.Add(time.Minute)}},
		core.ConfirmationDecided{ID: "c1", Decision: core.DecisionReject, By: "alice", Reason: "no"},
		core.UpstreamChanged{Status: core.UpstreamStatus{Name: "notes", State: core.StateFailed, LastError: "gone", LastErrorAt: at}},
		core.ToolsDropped{Source: "notes", Drops: []core.Drop{{Source: "notes", RemoteName: "bad", Kind: core.DropPattern, Reason: "(a+)+"}}},
		core.RefreshApplied{Diff: core.Diff{Upstream: "notes", Added: []core.ToolInfo{tool}}},
		core.Warning{Source: "notes", Message: "careful"},
		core.ToolReviewed{Source: "notes", RemoteName: "add", Name: "notes_add", State: core.ReviewApproved, By: "alice"},
		core.OperatorAction{Operator: "alice", Action: core.ActionApproveConfirmation, Target: "c1"},
		core.ConnectionChanged{Connection: core.Connection{ID: "conn_1", Upstream: "crm", ActorID: "alice", Scopes: []string{"crm.read"}, CreatedAt: at}, Change: "connected"},
	}
	if len(events) != len(eventTypes) {
		t.Fatalf("the test covers %d event types, the codec knows %d", len(events), len(eventTypes))
	}
	for i, d := range events {
		ev := core.Event{Seq: uint64(i + 1), Time: at, Data: d}
		b, err := EncodeEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeEvent(b)
		if err != nil {
			t.Fatalf("%s: %v", d.EventName(), err)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v", d.EventName(), got, ev)
		}
	}
}

// CO-9.
func TestDecodeUnknownAndBrokenEvents(t *testing.T) {
	ev, err := DecodeEvent([]byte(`{"seq":3,"type":"future.thing","data":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := ev.Data.(UnknownEvent); !ok || u.Type != "future.thing" || ev.Seq != 3 {
		t.Fatalf("got %#v", ev)
	}
	for _, bad := range []string{`{`, `{"seq":1,"type":"tool.registered","data":{"tool":7}}`} {
		if _, err := DecodeEvent([]byte(bad)); err == nil {
			t.Errorf("%s: decoded without error", bad)
		}
	}
}

// CO-9: an error crosses the API and still matches its sentinel on the other side.
func TestErrorCodesRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		err      error
		status   int
		sentinel error
	}{
		{core.ErrUnknownTool, http.StatusNotFound, core.ErrUnknownTool},
		{core.ErrUnknownPrompt, http.StatusNotFound, core.ErrUnknownPrompt},
		{core.ErrUnknownResource, http.StatusNotFound, core.ErrUnknownResource},
		{confirm.ErrUnknownConfirmation, http.StatusNotFound, confirm.ErrUnknownConfirmation},
		{core.ErrUnknownSession, http.StatusNotFound, core.ErrUnknownSession},
		{core.ErrUnknownPlan, http.StatusNotFound, core.ErrUnknownPlan},
		{&confirm.DecidedError{ID: "c1", Decision: core.DecisionApprove, By: "bob", At: at}, http.StatusConflict, confirm.ErrAlreadyDecided},
		{errors.New("disk on fire"), http.StatusInternalServerError, nil},
	}
	for _, c := range cases {
		ae := ErrorFor(c.err)
		if ae.Status != c.status {
			t.Errorf("%v: status %d, want %d", c.err, ae.Status, c.status)
		}
		b, _ := json.Marshal(ErrorBody{Error: ae})
		var back ErrorBody
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if c.sentinel != nil && !errors.Is(back.Error, c.sentinel) {
			t.Errorf("%v: decoded error %v does not match its sentinel", c.err, back.Error)
		}
		if back.Error.Message != c.err.Error() {
			t.Errorf("message %q, want %q", back.Error.Message, c.err.Error())
		}
	}
	var de *confirm.DecidedError
	back := ErrorFor(&confirm.DecidedError{ID: "c1", Decision: core.DecisionApprove, By: "bob", At: at})
	if !errors.As(back, &de) || de.By != "bob" || !de.At.Equal(at) {
		t.Fatalf("decided error lost who and when: %#v", de)
	}
}
