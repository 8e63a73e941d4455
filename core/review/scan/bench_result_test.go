package scan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// resultText is about size bytes of what a tool returns: prose, a list,
// links, numbers, an address. hostile mixes in instructions of the
// poisoned corpus, as an issue body or a web page carrying them would.
func resultText(tb testing.TB, size int, hostile bool) string {
	para := "The deployment finished at 14:02 UTC on build 20240115.3 (commit 3f786850e387550fdab836ed7e6dc881de23001b). " +
		"Three services restarted; see https://status.example.com/incidents/42 and [the runbook](https://docs.example.com/runbooks/restart). " +
		"Contact ops@example.com if latency stays above 250 ms for request 550e8400-e29b-41d4-a716-446655440000. " +
		"- api: 12 pods, 0 errors\n- worker: 4 pods, queue depth 1,234\n"
	var poison []string
	if hostile {
		corpus := readCorpus[poisonedCase](tb, "poisoned")
		keys := make([]string, 0, len(corpus))
		for k := range corpus {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if d := corpus[k].Description; d != "" && len(d) < 400 {
				poison = append(poison, d)
			}
		}
	}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(para)
		if len(poison) > 0 {
			b.WriteString(poison[i%len(poison)])
			b.WriteString("\n")
		}
	}
	return b.String()[:size]
}

// entryOf is a result's text as the injection inspector hands it to the
// scanner: an entry's description.
func entryOf(tb testing.TB, s string) EntryInput {
	raw, err := json.Marshal(map[string]string{"description": s})
	if err != nil {
		tb.Fatal(err)
	}
	return EntryInput{Raw: raw}
}

func benchEntry(b *testing.B, s string) {
	in := entryOf(b, s)
	ScanEntry(in) // the rules are built on first use; that is BenchmarkFirstUse
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		ScanEntry(in)
	}
}

// BenchmarkResult2KBBenign: a 2 KB tool result with nothing to flag, the
// common case of the injection inspector.
func BenchmarkResult2KBBenign(b *testing.B) { benchEntry(b, resultText(b, 2048, false)) }

// BenchmarkResult2KBHostile: a 2 KB result full of instructions to the
// model, where every rule has work to do.
func BenchmarkResult2KBHostile(b *testing.B) { benchEntry(b, resultText(b, 2048, true)) }

// BenchmarkResult32KB: a result at the size the injection inspector used
// to stop reading at.
func BenchmarkResult32KB(b *testing.B) { benchEntry(b, resultText(b, 32<<10, false)) }

// BenchmarkResult32KBHostile: the same, with instructions mixed in.
func BenchmarkResult32KBHostile(b *testing.B) { benchEntry(b, resultText(b, 32<<10, true)) }

// BenchmarkScanToolOne: one typical tool definition (GitHub's
// create_issue: a description and a schema of a few properties).
func BenchmarkScanToolOne(b *testing.B) {
	var names []string
	var in ScanInput
	for _, s := range readCorpus[benignServer](b, "benign") {
		for _, tool := range s.Tools {
			names = append(names, tool.Name)
		}
	}
	for _, tool := range readCorpus[benignServer](b, "benign")["github"].Tools {
		if tool.Name == "create_issue" {
			in = tool.input(names)
		}
	}
	if in.Name == "" {
		b.Fatal("create_issue not in the benign corpus")
	}
	ScanTool(in)
	b.ReportAllocs()
	for b.Loop() {
		ScanTool(in)
	}
}

// BenchmarkFirstUse: building every rule and its gate, what the first scan
// of a process pays once (nothing is built at package init).
func BenchmarkFirstUse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range allRegexps {
			l.build()
		}
	}
}
