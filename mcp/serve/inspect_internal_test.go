package serve

import (
	"testing"

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
