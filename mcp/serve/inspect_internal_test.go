package serve

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/inspect"
)

// IN-1: inspection off costs a call nothing it allocates: no inspection
// at the endpoint, or none for the tool's source.
func TestInspectionOffAllocatesNothing(t *testing.T) {
	r := &Rules{}
	if n := testing.AllocsPerRun(100, func() {
		if r.inspectFor("github") != nil {
			t.Fatal("inspection where none is set")
		}
	}); n != 0 {
		t.Errorf("no inspection: %v allocations a call", n)
	}
	r = &Rules{Inspection: &Inspection{BySource: map[string]*Inspect{"other": {Policy: &inspect.Policy{}}}}}
	if n := testing.AllocsPerRun(100, func() {
		if r.inspectFor("github") != nil {
			t.Fatal("inspection for a source without any")
		}
	}); n != 0 {
		t.Errorf("another source's inspection: %v allocations a call", n)
	}
}

// IN-1: what an upstream sends during a call passes the result rules:
// a log message's credential is redacted in place, a progress message
// whose kind is blocked is dropped, other notifications pass untouched;
// what was found is kept for the call's result and audit.
func TestStreamFilterAppliesResultRules(t *testing.T) {
	det, err := inspect.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	pol := &inspect.Policy{Inspector: det, Results: [4]inspect.Action{inspect.ActionRedact, inspect.ActionBlock}}
	f := &streamFilter{pol: pol}
	key := "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" // built here: no credential-shaped literal in the source
	log := map[string]any{"level": "info", "data": map[string]any{"line": "using " + key}}
	out, ok := f.apply("notifications/message", log)
	if !ok || out["data"].(map[string]any)["line"] != "using [redacted:stripe-key]" || out["level"] != "info" {
		t.Errorf("log message: %v %v", out, ok)
	}
	if _, ok := f.apply("notifications/progress", map[string]any{"progressToken": "t", "progress": 1, "message": "mailing jane@example.org"}); ok {
		t.Error("a progress message with blocked personal data was passed on")
	}
	other := map[string]any{"uri": "file:///" + key}
	if out, ok := f.apply("notifications/resources/updated", other); !ok || out["uri"] != other["uri"] {
		t.Errorf("another notification was changed: %v", out)
	}
	got := f.taken()
	if len(got) != 2 || got[0].In != "log" || got[0].Path != "/data/line" || got[1].In != "progress" || got[1].Path != "/message" {
		t.Errorf("found %+v", got)
	}
}

// IN-3: a sessionless client's labels are forgotten a flow window after
// its last call, a session's only when it ends; a call's gathered labels
// follow what reached the client.
func TestFlowStore(t *testing.T) {
	var s flowStore
	ctx := context.Background()
	mem := flowBacking{}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	labels := func(key string, sessioned bool, at time.Time) []string {
		t.Helper()
		got, err := s.labels(ctx, mem, key, sessioned, time.Hour, at)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	add := func(key string, sessioned bool, at time.Time, ls []string) {
		t.Helper()
		if err := s.add(ctx, mem, key, sessioned, time.Hour, at, ls); err != nil {
			t.Fatal(err)
		}
	}
	key, sessioned := flowKey("", core.Actor{ID: "dev"}, "modern-peer")
	add(key, sessioned, t0, []string{"untrusted"})
	add(key, sessioned, t0.Add(50*time.Minute), []string{"private", "untrusted"})
	if got := labels(key, sessioned, t0.Add(100*time.Minute)); !slices.Equal(got, []string{"private", "untrusted"}) {
		t.Errorf("within the window of the last call: %v", got)
	}
	if got := labels(key, sessioned, t0.Add(111*time.Minute)); got != nil {
		t.Errorf("a window after the last call: %v", got)
	}
	sk, sessioned := flowKey("sess-1", core.Actor{ID: "dev"}, "sdk")
	add(sk, sessioned, t0, []string{"private"})
	if got := labels(sk, sessioned, t0.Add(48*time.Hour)); !slices.Equal(got, []string{"private"}) {
		t.Errorf("a session's labels after a long pause: %v", got)
	}
	s.forget(sk)
	if got := labels(sk, sessioned, t0); got != nil {
		t.Errorf("an ended session's labels: %v", got)
	}

	found := []inspect.Reported{
		{Type: inspect.Injection, Action: inspect.ActionFlag, In: "result"},
		{Type: inspect.PII, Action: inspect.ActionBlock, In: "result"},       // not read
		{Type: inspect.Secrets, Action: inspect.ActionFlag, In: "arguments"}, // the client's own
	}
	if got := gathered([]string{"sends-out"}, found); !slices.Equal(got, []string{"sends-out", "untrusted"}) {
		t.Errorf("gathered %v", got)
	}
	if got := gathered([]string{LabelOpenWorld}, nil); !slices.Equal(got, []string{LabelOpenWorld, LabelUntrusted}) {
		t.Errorf("an open-world tool: %v", got)
	}
	tl := ToolLabels(&LabelRules{Labels: []string{"crm"}, ByGlob: map[string][]string{"send_*": {"sends-out"}}},
		core.Tool{Name: "crm_send_mail", RemoteName: "send_mail", Annotations: []byte(`{"openWorldHint":true,"readOnlyHint":false}`)})
	if !slices.Equal(tl, []string{"crm", "open-world", "sends-out"}) {
		t.Errorf("tool labels %v", tl)
	}
}
