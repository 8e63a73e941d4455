package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/idtest"
)

// Operators read plain words: no command's help, flag help included, names
// a requirement id. (QB-4)
func TestHelpHasNoRequirementIDs(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"peers", "--help"}, {"replicas", "--help"}, {"collector", "--help"}, {"startup", "--help"}} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, &out, &errOut); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errOut.String())
		}
		page := out.String() + errOut.String()
		if len(args) > 1 && args[0] != "collector" && !strings.Contains(page, "-json") || args[0] == "collector" && !strings.Contains(page, "-listen") {
			t.Errorf("%q shows no flags:\n%s", args, page)
		}
		if ids := idtest.Find(page); len(ids) > 0 {
			t.Errorf("%q names %s:\n%s", args, strings.Join(ids, ", "), page)
		}
	}
}
