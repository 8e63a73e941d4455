package inspect

import (
	"strings"
	"testing"
)

// benchText is about 2 KB of what a tool returns: prose, a list, links,
// numbers, an address — with nothing to redact but the address.
func benchText(size int) string {
	para := "The deployment finished at 14:02 UTC on build 20240115.3 (commit 3f786850e387550fdab836ed7e6dc881de23001b). " +
		"Three services restarted; see https://status.example.com/incidents/42 and [the runbook](https://docs.example.com/runbooks/restart). " +
		"Contact ops@example.com if latency stays above 250 ms for request 550e8400-e29b-41d4-a716-446655440000. " +
		"- api: 12 pods, 0 errors\n- worker: 4 pods, queue depth 1,234\n"
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(para)
	}
	return b.String()[:size]
}

// BenchmarkText2KB is one 2 KB result through every detector: the CPU
// inspection adds to a call (goal: 30 µs).
func BenchmarkText2KB(b *testing.B) {
	in := mustNew(b, nil)
	s := benchText(2048)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		in.Text(s, "/content/0/text", All)
	}
}

// BenchmarkText2KBPerType splits the same figure by kind.
func BenchmarkText2KBPerType(b *testing.B) {
	in := mustNew(b, nil)
	s := benchText(2048)
	for _, t := range Types {
		b.Run(string(t), func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				in.Text(s, "", Bit(t))
			}
		})
	}
}

// BenchmarkText1MB: a large result, to show time and memory grow with the
// size and no faster.
func BenchmarkText1MB(b *testing.B) {
	in := mustNew(b, nil)
	s := benchText(1 << 20)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		in.Text(s, "", All)
	}
}

// BenchmarkText1MBWithoutInjection: the same without the scanner's rules,
// the detectors' own cost on a large result.
func BenchmarkText1MBWithoutInjection(b *testing.B) {
	in := mustNew(b, nil)
	s := benchText(1 << 20)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		in.Text(s, "", All&^Bit(Injection))
	}
}

// BenchmarkCheckOff: a policy with every action off, as a call pays it.
func BenchmarkCheckOff(b *testing.B) {
	p := &Policy{Inspector: mustNew(b, nil)}
	raw := []byte(`{"content":[{"type":"text","text":"` + benchText(2048) + `"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = p.Check(Results, raw)
	}
}
