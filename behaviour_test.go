package toolgate_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Requirement ids as the code writes them: IM-19 in comments and strings,
// and glued into test names (TestReviewRugPullCLIRV3, TestFooAU4AU9).
var (
	idRef     = regexp.MustCompile(`\b(IM|SV|AU|CF|RV|CO|OP|PO|UI|QB)-(\d+)\b`)
	testName  = regexp.MustCompile(`\bfunc (Test[A-Za-z0-9_]*)`)
	gluedID   = regexp.MustCompile(`(IM|SV|AU|CF|RV|CO|OP|PO|UI|QB)(\d+)`)
	docHeadID = regexp.MustCompile(`(?m)^- \*\*((?:IM|SV|AU|CF|RV|CO|OP|PO|UI|QB)-\d+)\*\*`)
)

// idsInGo returns each id cited in src, comments, strings and test names
// alike.
func idsInGo(src string) []string {
	var ids []string
	for _, m := range idRef.FindAllStringSubmatch(src, -1) {
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
	documented := map[string]bool{}
	for _, m := range docHeadID.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	if len(documented) == 0 {
		t.Fatal("docs/behaviour.md documents no id as `- **ID** rule`")
	}
	usedIn := map[string]string{}
	files := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		// This file's fixtures are made-up ids.
		if d.IsDir() || !strings.HasSuffix(path, ".go") || path == "behaviour_test.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, id := range idsInGo(string(src)) {
			if _, ok := usedIn[id]; !ok {
				usedIn[id] = path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 || len(usedIn) < 50 {
		t.Fatalf("scanned %d files and found %d ids: the walk did not see the repository", files, len(usedIn))
	}
	var missing []string
	for id, path := range usedIn {
		if !documented[id] {
			missing = append(missing, id+" (used in "+path+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("docs/behaviour.md does not explain %s", m)
	}
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
	src := "// IM-19 and CF-1..7 (SV-20)\nx := \"RV-4\"\nfunc TestReviewRugPullCLIRV3(t *testing.T) {}\n" +
		"func TestOversizedTokenRefusedLocallyAU4AU9(t *testing.T) {}\nfunc TestFaultReadRetriedAfterCrashIM27IM28(t *testing.T) {}\n" +
		"func TestStoreURLOP5(t *testing.T) {}\nfunc TestSHA256(t *testing.T) {}\n// XIM-3 IM-3x\n"
	got := map[string]bool{}
	for _, id := range idsInGo(src) {
		got[id] = true
	}
	for _, want := range []string{"IM-19", "CF-1", "SV-20", "RV-4", "RV-3", "AU-4", "AU-9", "IM-27", "IM-28", "OP-5"} {
		if !got[want] {
			t.Errorf("missed %s; got %v", want, got)
		}
	}
	for _, bad := range []string{"IM-3"} {
		if got[bad] {
			t.Errorf("read %s that is not an id; got %v", bad, got)
		}
	}
}
