package serve

import (
	"testing"

	"github.com/toolgate/toolgate/core/inspect"
)

// IN-1: inspection off costs a call nothing it allocates: no inspection
// at the endpoint, or none for the tool's source.
func TestInspectionOffAllocatesNothing(t *testing.T) {
	e := &Endpoint{}
	if n := testing.AllocsPerRun(100, func() {
		if e.inspectFor("github") != nil {
			t.Fatal("inspection where none is set")
		}
	}); n != 0 {
		t.Errorf("no inspection: %v allocations a call", n)
	}
	e.SetInspection(&Inspection{BySource: map[string]*Inspect{"other": {Policy: &inspect.Policy{}}}})
	if n := testing.AllocsPerRun(100, func() {
		if e.inspectFor("github") != nil {
			t.Fatal("inspection for a source without any")
		}
	}); n != 0 {
		t.Errorf("another source's inspection: %v allocations a call", n)
	}
}
