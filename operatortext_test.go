package toolgate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/idtest"
)

// sqlComment is a line comment inside SQL text (migrations): a comment,
// not something an operator is shown.
var sqlComment = regexp.MustCompile(`(?m)(^|\s)-- .*$`)

// literalsWithIDs returns "file:line: text" for each string literal in the
// non-test Go files under root that holds a requirement id. Such a literal
// is an error, log message, flag help, metric HELP or console text: the
// product prints strings, not comments. Packages named …test (storetest,
// pgtest) are test support whose text only tests read; SQL comments are
// comments.
func literalsWithIDs(t *testing.T, root string) (found []string, files int) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || strings.HasSuffix(name, "test")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			if ids := idtest.Find(sqlComment.ReplaceAllString(s, "")); len(ids) > 0 {
				p := fset.Position(lit.Pos())
				rel, _ := filepath.Rel(root, p.Filename)
				found = append(found, rel+":"+strconv.Itoa(p.Line)+": "+strings.Join(ids, ", ")+" in "+lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found, files
}

// Operators read plain words: no string of the product (errors, log
// messages and their attributes, flag help, metric HELP, console text)
// carries a requirement id. Ids stay in comments, test names and
// docs/behaviour.md. (QB-4)
func TestNoRequirementIDInProductStrings(t *testing.T) {
	found, files := literalsWithIDs(t, ".")
	if files < 200 {
		t.Fatalf("read %d Go files: the walk did not see the module", files)
	}
	for _, f := range found {
		t.Errorf("an operator would read a requirement id: %s", f)
	}
}

// The scan finds an id in each kind of string the product prints, and
// leaves comments, test files, test-support packages and SQL comments
// alone. (QB-4)
func TestProductStringScan(t *testing.T) {
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
	write("a/a.go", "package a\n\n"+
		"import (\"errors\"; \"fmt\"; \"log/slog\")\n\n"+
		"// SV-2 in a comment is fine.\n"+
		"var e = errors.New(\"sessions are capped (SV-2)\")\n"+
		"func f(l *slog.Logger) error {\n"+
		"\tl.Warn(\"open mode\", \"rule\", \"AU-7\")\n"+
		"\treturn fmt.Errorf(`needs a secret (CF-3): %w`, e)\n}\n"+
		"const migration = `CREATE TABLE x (\n\t-- single use (CF-4)\n\tid text\n);`\n")
	write("a/a_test.go", "package a\n\nvar _ = \"IM-1 in a test\"\n")
	write("storetest/s.go", "package storetest\n\nvar _ = \"CF-4/UseTokenSingleUse\"\n")
	found, files := literalsWithIDs(t, dir)
	if files != 1 {
		t.Errorf("read %d files, want 1", files)
	}
	want := []string{"SV-2", "AU-7", "CF-3"}
	if len(found) != len(want) {
		t.Fatalf("found %d literals, want %d: %q", len(found), len(want), found)
	}
	for i, id := range want {
		if !strings.Contains(found[i], ": "+id+" in ") {
			t.Errorf("finding %d = %q, want %s", i, found[i], id)
		}
	}
}

// userDocs are the pages and files operators read (the commented example
// config and the deployment files among them); docs/behaviour.md, which
// explains the ids, is not among them.
var userDocs = []string{"README.md", "docs/configuration.md", "docs/operations.md", "docs/security.md",
	"docs/console.md", "docs/performance.md", "docs/architecture.md", "testdata/toolgate.example.yaml",
	"testdata/demo.yaml", "deploy/Containerfile", "deploy/toolgate.service"}

// The user docs say things in words and link to each other; the ids are
// explained in docs/behaviour.md alone. (QB-4)
func TestNoRequirementIDInUserDocs(t *testing.T) {
	for _, p := range userDocs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if ids := idtest.Find(line); len(ids) > 0 {
				t.Errorf("%s:%d: %s", p, i+1, strings.Join(ids, ", "))
			}
		}
	}
}
