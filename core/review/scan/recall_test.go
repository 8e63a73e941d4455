package scan

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
)

// recallSet is a file of testdata/review/recall: poisoned tools written
// without the usual trigger words. training.json is what the rules were
// tuned on; heldout.json was written before that and is only measured.
type recallSet struct {
	Source string `json:"source"`
	Cases  []struct {
		Class      string     `json:"class"`
		Lang       string     `json:"lang"`
		Tool       corpusTool `json:"tool"`
		OtherTools []string   `json:"otherTools"`
	} `json:"cases"`
}

func readRecallSet(t testing.TB, name string) recallSet {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(scanCorpus, "recall", name))
	if err != nil {
		t.Fatal(err)
	}
	var s recallSet
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// measureRecall scans every case and returns how many got a warn or danger
// flag, logging the misses and the recall per class.
func measureRecall(t *testing.T, name string) (caught, total int) {
	s := readRecallSet(t, name)
	type tally struct{ caught, total int }
	byClass := map[string]*tally{}
	for i, c := range s.Cases {
		if c.Class == "" || c.Tool.Name == "" {
			t.Fatalf("%s case %d: a case needs a class and a tool", name, i)
		}
		in := c.Tool.input(c.OtherTools)
		flags := ScanTool(in)
		checkFlags(t, in, flags)
		tl := byClass[c.Class]
		if tl == nil {
			tl = &tally{}
			byClass[c.Class] = tl
		}
		tl.total++
		total++
		if slices.ContainsFunc(flags, func(f core.Flag) bool { return f.Kind.Severity() != core.SeverityInfo }) {
			tl.caught++
			caught++
			continue
		}
		t.Logf("%s: missed %s/%s %s", name, c.Class, c.Lang, c.Tool.Name)
	}
	var classes []string
	for k, v := range byClass {
		classes = append(classes, fmt.Sprintf("%s %d/%d", k, v.caught, v.total))
	}
	slices.Sort(classes)
	t.Logf("RV-2 recall on %s: %d of %d (%.1f%%); by class: %s", name, caught, total,
		100*float64(caught)/float64(total), strings.Join(classes, ", "))
	return caught, total
}

// TestRV2ScanRecall measures recall on poisoned tools that carry none of
// the usual trigger words. The held-out set was written before the rules
// were tuned and never tuned on: its floor is what was measured, not a
// target, and it is expected to stay below the training set's.
func TestRV2ScanRecall(t *testing.T) {
	for _, set := range []struct {
		file  string
		min   int // cases
		floor float64
	}{
		{"training.json", 40, 0},
		{"heldout.json", 40, 0},
	} {
		caught, total := measureRecall(t, set.file)
		if total < set.min {
			t.Errorf("%s has %d cases, want at least %d", set.file, total, set.min)
		}
		if r := float64(caught) / float64(total); r < set.floor {
			t.Errorf("%s: recall %.3f below its floor %.3f", set.file, r, set.floor)
		}
	}
}
