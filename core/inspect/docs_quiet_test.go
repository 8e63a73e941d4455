package inspect

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/lab/peers"
)

// docParagraphs are the paragraphs of this repository's documentation and
// of the npm peers' READMEs: prose about tools, models, agents and
// instructions written for people.
func docParagraphs(t *testing.T) (paras []string, readmes int) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "..", "README.md"))
	// Dir installs the peers when they are missing or stale, under the
	// lock every test binary takes, so a README is never read mid-install.
	nm := filepath.Join(peers.Dir(t), "node_modules")
	_ = filepath.WalkDir(nm, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.EqualFold(d.Name(), "README.md") {
			files = append(files, path)
			readmes++
		}
		return nil
	})
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range strings.Split(string(raw), "\n\n") {
			if p = strings.TrimSpace(p); len(p) >= 20 {
				paras = append(paras, p)
			}
		}
	}
	return paras, readmes
}

// The result rules stay quiet on documentation written for people (IN-1):
// the paragraphs of this repository's docs, which describe attacks on
// models at length, and of the npm peers' READMEs (installed when
// missing). What is flagged there was measured before and after the
// rules of injection_fresh20.json: the same four paragraphs, all of this
// repository's own text about injection (three by the description
// scanner's rules, one a pair of weak orders), two of them with a result
// rule's finding before in.Text's filters; the ceilings are those.
func TestResultRulesQuietOnDocsIN1(t *testing.T) {
	in := mustNew(t, nil)
	paras, readmes := docParagraphs(t)
	if len(paras) < 500 {
		t.Fatalf("read only %d paragraphs (%d peer READMEs)", len(paras), readmes)
	}
	flagged, byRules := 0, 0
	for _, p := range paras {
		if fs := in.Text(p, "", Bit(Injection)); len(fs) > 0 {
			flagged++
			t.Logf("flagged: %v %.120q", detectors(p, fs, Injection), p)
		}
		if len(addressFindings(p, "")) > 0 {
			byRules++
		}
	}
	t.Logf("%d paragraphs (%d peer READMEs), %d flagged, %d by the result rules", len(paras), readmes, flagged, byRules)
	if flagged > 4 || byRules > 2 {
		t.Errorf("%d paragraphs flagged (at most 4), %d by the result rules (at most 2)", flagged, byRules)
	}
}
