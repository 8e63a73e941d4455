package toolgate_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/idtest"
)

// Requirement ids as the code writes them: IM-19 in comments and strings,
// and glued into test names (TestReviewRugPullCLIRV3, TestFooAU4AU9).
// idShape is any two capitals, a dash and a number, whatever the area, so
// a mistyped or unknown area (SX-3) is read and then found unexplained;
// glued ids need the known areas, since TestSHA256 holds "HA256".
var (
	idShape   = regexp.MustCompile(`\b([A-Z]{2})-(\d+)\b`)
	testName  = regexp.MustCompile(`\bfunc (Test[A-Za-z0-9_]*)`)
	gluedID   = regexp.MustCompile(`(` + strings.Join(idtest.Areas, "|") + `)(\d+)`)
	docHeadID = regexp.MustCompile(`(?m)^- \*\*([A-Z]{2}-\d+)\*\*`)
	docArea   = regexp.MustCompile(`(?m)^## .*\(([A-Z]{2})\)$`)
)

// idsInGo returns each id cited in src, comments, strings and test names
// alike.
func idsInGo(src string) []string {
	var ids []string
	for _, m := range idShape.FindAllStringSubmatch(src, -1) {
		ids = append(ids, m[1]+"-"+m[2])
	}
	for _, m := range testName.FindAllStringSubmatch(src, -1) {
		// Glued ids follow anything, an acronym included (…CLIRV3).
		for _, g := range gluedID.FindAllStringSubmatch(m[1], -1) {
			ids = append(ids, g[1]+"-"+g[2])
		}
	}
	return ids
}

// Every requirement id the code cites is explained in docs/behaviour.md, so
// a reader meeting "RV-3" or TestFooRV3 finds its rule inside the
// repository.
func TestBehaviourDocCoversEveryCitedID(t *testing.T) {
	doc, err := os.ReadFile("docs/behaviour.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(explainedIDs(string(doc))) == 0 {
		t.Fatal("docs/behaviour.md documents no id as `- **ID** rule`")
	}
	usedIn, files, err := citedIDs(".")
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 || len(usedIn) < 50 {
		t.Fatalf("scanned %d files and found %d ids: the walk did not see the repository", files, len(usedIn))
	}
	for _, m := range unexplained(string(doc), usedIn) {
		t.Errorf("docs/behaviour.md does not explain %s", m)
	}
}

// The check above fails on what it exists for: an id cited in a comment, a
// string or a test name anywhere in a Go tree, in a known area or not, that
// the doc does not explain, and only on that.
func TestBehaviourScanFindsUnexplainedIDs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", "package a\n\n// Parked sessions (SV-2, SV-20).\nvar s = \"IN-3\"\n")
	write("b/b_test.go", "package b\n\nfunc TestScanDS2(t *testing.T) {}\n// SX-1 is no area\n")
	write("c/c.md", "SV-21 in Markdown is not code\n")
	doc := "## Serving the registry (SV)\n\n- **SV-2** Sessions.\n- **IN-3** Inspection.\n"
	usedIn, files, err := citedIDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if files != 2 {
		t.Errorf("scanned %d Go files, want 2", files)
	}
	got := unexplained(doc, usedIn)
	want := []string{"DS-2 (used in b/b_test.go)", "SV-20 (used in a/a.go)", "SX-1 (used in b/b_test.go)"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("unexplained = %q, want %q", got, want)
	}
}

// Every area docs/behaviour.md heads a section with is one the scan reads
// glued into test names.
func TestBehaviourDocAreasKnown(t *testing.T) {
	doc, err := os.ReadFile("docs/behaviour.md")
	if err != nil {
		t.Fatal(err)
	}
	heads := docArea.FindAllStringSubmatch(string(doc), -1)
	if len(heads) < 8 {
		t.Fatalf("found %d area headings in docs/behaviour.md", len(heads))
	}
	for _, h := range heads {
		if !slices.Contains(idtest.Areas, h[1]) {
			t.Errorf("area %s of docs/behaviour.md is not in idtest.Areas", h[1])
		}
	}
}

// explainedIDs are the ids the doc explains, each as `- **ID** rule`.
func explainedIDs(doc string) map[string]bool {
	documented := map[string]bool{}
	for _, m := range docHeadID.FindAllStringSubmatch(doc, -1) {
		documented[m[1]] = true
	}
	return documented
}

// citedIDs maps each id cited in the .go files under root (this file
// aside: its fixtures are made up) to the first file citing it, with the
// number of files read.
func citedIDs(root string) (map[string]string, int, error) {
	usedIn := map[string]string{}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() || !strings.HasSuffix(path, ".go") || rel == "behaviour_test.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, id := range idsInGo(string(src)) {
			if _, ok := usedIn[id]; !ok {
				usedIn[id] = rel
			}
		}
		return nil
	})
	return usedIn, files, err
}

// unexplained lists, sorted, each cited id the doc does not explain.
func unexplained(doc string, usedIn map[string]string) []string {
	documented := explainedIDs(doc)
	var missing []string
	for id, path := range usedIn {
		if !documented[id] {
			missing = append(missing, id+" (used in "+path+")")
		}
	}
	sort.Strings(missing)
	return missing
}

// Every id of the spec's areas that docs/behaviour.md lists is written once,
// so a search lands on one rule.
func TestBehaviourDocIDsOnce(t *testing.T) {
	doc, err := os.ReadFile("docs/behaviour.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range docHeadID.FindAllStringSubmatch(string(doc), -1) {
		seen[m[1]]++
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("%s is explained %d times", id, n)
		}
	}
}

// The scanner reads ids in every form the code writes them, and no more.
func TestIDsInGo(t *testing.T) {
	src := "// IM-19 and CF-1..7 (OP-10)\nx := \"RV-4\"\nfunc TestReviewRugPullCLIRV3(t *testing.T) {}\n" +
		"func TestOversizedTokenRefusedLocallyAU4AU9(t *testing.T) {}\nfunc TestFaultReadRetriedAfterCrashIM27IM28(t *testing.T) {}\n" +
		"func TestStoreURLOP5(t *testing.T) {}\nfunc TestSHA256(t *testing.T) {}\n// XIM-3 IM-3x UTF-8 SX-9\n"
	got := map[string]bool{}
	for _, id := range idsInGo(src) {
		got[id] = true
	}
	for _, want := range []string{"IM-19", "CF-1", "OP-10", "RV-4", "RV-3", "AU-4", "AU-9", "IM-27", "IM-28", "OP-5", "SX-9"} {
		if !got[want] {
			t.Errorf("missed %s; got %v", want, got)
		}
	}
	for _, bad := range []string{"IM-3", "HA-256", "TF-8"} {
		if got[bad] {
			t.Errorf("read %s that is not an id; got %v", bad, got)
		}
	}
}
