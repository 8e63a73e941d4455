package discovery

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

// benign reads the real tool definitions of testdata/review/benign, one
// upstream per file, named as the importer names them (IM-11).
func benign(tb testing.TB) []core.ToolInfo {
	tb.Helper()
	files, err := filepath.Glob("../../testdata/review/benign/*.json")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no benign definitions: %v", err)
	}
	var out []core.ToolInfo
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var file struct {
			Tools []struct {
				Name         string          `json:"name"`
				Title        string          `json:"title"`
				Description  string          `json:"description"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
				Annotations  json.RawMessage `json:"annotations"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(raw, &file); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		up := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, t := range file.Tools {
			out = append(out, core.ToolInfo{Name: core.ToolName(up, t.Name), Source: up, RemoteName: t.Name,
				Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
				OutputSchema: t.OutputSchema, Annotations: t.Annotations})
		}
	}
	return out
}

// task is one labelled request: the tools (upstream/name) that serve it.
type task struct {
	Query  string   `json:"query"`
	Accept []string `json:"accept"`
}

func tasks(tb testing.TB, file string) []task {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("../../testdata/discovery", file))
	if err != nil {
		tb.Fatal(err)
	}
	var f struct {
		Tasks []task `json:"tasks"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	return f.Tasks
}

// scores are a task set's figures (DS-3).
type scores struct {
	n                int
	recall1, recall5 float64
	mrr              float64
	missed5          []string // queries with no acceptable tool in the top 5
}

// evaluate runs every task against ix: recall@k is the share of tasks with
// an acceptable tool in the first k, MRR the mean of 1/rank of the first
// acceptable tool within the first MaxLimit (0 beyond).
func evaluate(tb testing.TB, ix *Index, known map[string]bool, ts []task) scores {
	tb.Helper()
	s := scores{n: len(ts)}
	for _, t := range ts {
		accept := map[string]bool{}
		for _, a := range t.Accept {
			up, name, _ := strings.Cut(a, "/")
			full := core.ToolName(up, name)
			if !known[full] {
				tb.Fatalf("task %q accepts %s, which is no tool of the corpus", t.Query, a)
			}
			accept[full] = true
		}
		rank := 0
		for i, h := range ix.Search(t.Query, MaxLimit, nil) {
			if accept[h.Name] {
				rank = i + 1
				break
			}
		}
		if rank == 1 {
			s.recall1++
		}
		if rank >= 1 && rank <= 5 {
			s.recall5++
		} else {
			s.missed5 = append(s.missed5, t.Query)
		}
		if rank > 0 {
			s.mrr += 1 / float64(rank)
		}
	}
	s.recall1 /= float64(s.n)
	s.recall5 /= float64(s.n)
	s.mrr /= float64(s.n)
	return s
}

func (s scores) String() string {
	return fmt.Sprintf("%3d tasks  recall@1 %5.1f%%  recall@5 %5.1f%%  MRR %.3f", s.n, 100*s.recall1, 100*s.recall5, s.mrr)
}

func corpus(tb testing.TB) (*Index, map[string]bool) {
	tools := benign(tb)
	docs := make([]Doc, len(tools))
	known := map[string]bool{}
	for i, t := range tools {
		docs[i] = DocOf(t)
		known[t.Name] = true
	}
	return Build(docs), known
}

// TestRecall holds the search to its goal on the tasks it was not tuned
// on (DS-3): an acceptable tool in the first five for nine requests in
// ten. The tuning set is held to the same floor; the other languages' set
// is only reported, lexical search not being meant for it.
func TestRecall(t *testing.T) {
	ix, known := corpus(t)
	for _, set := range []struct {
		file  string
		floor float64
	}{{"heldout.json", 0.9}, {"tuning.json", 0.9}, {"languages.json", 0}} {
		s := evaluate(t, ix, known, tasks(t, set.file))
		t.Logf("%-15s %v", set.file, s)
		for _, q := range s.missed5 {
			t.Logf("  not in the first 5: %q", q)
		}
		if s.recall5 < set.floor {
			t.Errorf("%s: recall@5 %.1f%%, want at least %.0f%%", set.file, 100*s.recall5, 100*set.floor)
		}
	}
}

// Equal scores rank by name; the caller's filter applies before the limit,
// so a hidden tool never takes a place; stopwords and unknown words find
// nothing (DS-2, DS-3).
func TestSearchTieBreakAndFilter(t *testing.T) {
	ix := Build([]Doc{
		{Name: "b_send_mail", Description: "Send an email."},
		{Name: "a_send_mail", Description: "Send an email."},
		{Name: "c_send_mail", Description: "Send an email."},
		{Name: "read_calendar", Description: "Read calendar events."},
	})
	var names []string
	for _, h := range ix.Search("send emails", 10, nil) {
		names = append(names, h.Name)
	}
	if want := []string{"a_send_mail", "b_send_mail", "c_send_mail"}; !slices.Equal(names, want) {
		t.Errorf("equal scores: got %v, want name order %v", names, want)
	}
	names = nil
	for _, h := range ix.Search("send emails", 1, func(n string) bool { return n != "a_send_mail" }) {
		names = append(names, h.Name)
	}
	if want := []string{"b_send_mail"}; !slices.Equal(names, want) {
		t.Errorf("keep filters before the limit: got %v, want %v", names, want)
	}
	if hits := ix.Search("the of and", 5, nil); hits != nil {
		t.Errorf("a query of stopwords found %v", hits)
	}
	if hits := ix.Search("zzz", 5, nil); hits != nil {
		t.Errorf("an unknown word found %v", hits)
	}
}

// Names split into words, case and accents folded, light stemming and
// stopwords, text without spaces kept whole (DS-3).
func TestTerms(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"linear_getViewer", "linear get viewer"},
		{"HTTPRequest", "http request"},
		{"API-post-search", "api post search"},
		{"Créer des Dépôts", "creer des depot"},
		{"creating created creates create", "creat creat creat creat"},
		{"repositories Issues mapped filled", "repository issu map fill"},
		{"creation deletion relations relation", "creat delet relat relat"},
		{"the list of all branches", "list branch"},
		{"ファイルを読む", "ファイルを読む"},
	} {
		if got := strings.Join(Terms(tt.in), " "); got != tt.want {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
