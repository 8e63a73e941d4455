package scan

import (
	"testing"
)

// BenchmarkScanTool scans every tool of the benign corpus, each against
// the names of all the others, and reports the time per tool: real
// descriptions are what the scanner reads most, and most of them hold
// nothing to flag.
func BenchmarkScanTool(b *testing.B) {
	var ins []ScanInput
	var names []string
	for _, s := range readCorpus[benignServer](b, "benign") {
		for _, tool := range s.Tools {
			names = append(names, tool.Name)
		}
	}
	for _, s := range readCorpus[benignServer](b, "benign") {
		for _, tool := range s.Tools {
			ins = append(ins, tool.input(names))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, in := range ins {
			ScanTool(in)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ins)), "ns/tool")
}

// BenchmarkLearnedModelDecode is the learned reader's one-time cost, paid
// by the first scan of a process that finds no rule to warn about.
func BenchmarkLearnedModelDecode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeLearnedModel(learnedModelFile); err != nil {
			b.Fatal(err)
		}
	}
}
