package pgtest

import (
	"strings"
	"testing"
)

// OP-5: missing binaries are an error that says what is missing and how to
// install them or skip on purpose, so a test fails loudly rather than
// passing by skipping.
func TestMissingBinariesSaySo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findBinaries(t.TempDir() + "/*/bin")
	if err == nil {
		t.Fatal("binaries found in empty directories")
	}
	for _, want := range []string{"initdb", "pg_ctl", "apt-get install postgresql", SkipEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
