package discovery

import (
	"encoding/json"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

// thousand is the benign corpus grown to 1,000 tools: linear's and
// cloudflare's definitions again under two more upstream names.
func thousand(tb testing.TB) []Doc {
	tools := benign(tb)
	var docs []Doc
	for _, t := range tools {
		docs = append(docs, DocOf(t))
	}
	for _, t := range tools {
		if t.Source == "linear" || t.Source == "cloudflare" {
			t.Source += "2"
			t.Name = core.ToolName(t.Source, t.RemoteName)
			docs = append(docs, DocOf(t))
		}
	}
	return docs
}

func allQueries(tb testing.TB) []string {
	var qs []string
	for _, f := range []string{"heldout.json", "tuning.json"} {
		for _, t := range tasks(tb, f) {
			qs = append(qs, t.Query)
		}
	}
	return qs
}

// BenchmarkSearch is one search of the labelled queries, in turn, over
// 1,000 tools (DS-3).
func BenchmarkSearch(b *testing.B) {
	ix := Build(thousand(b))
	qs := allQueries(b)
	i := 0
	for b.Loop() {
		ix.Search(qs[i%len(qs)], DefaultLimit, nil)
		i++
	}
}

// BenchmarkBuild builds the index of 1,000 tools (DS-3).
func BenchmarkBuild(b *testing.B) {
	docs := thousand(b)
	for b.Loop() {
		Build(docs)
	}
}

// BenchmarkFigures prints the figures docs/performance.md reports (DS-3):
// recall@1, recall@5 and MRR on the held-out, tuning and other-language
// tasks over the 713 real tools; build time, heap held by the index and
// search p50/p95 over 1,000; and the tools/list size with and without
// discovery. Printed, never asserted: speed is the machine's.
func BenchmarkFigures(b *testing.B) {
	for b.Loop() {
	}
	ix, known := corpus(b)
	for _, f := range []string{"heldout.json", "tuning.json", "languages.json"} {
		b.Logf("%-15s %v", f, evaluate(b, ix, known, tasks(b, f)))
	}

	docs := thousand(b)
	var builds []time.Duration
	for range 9 {
		start := time.Now()
		Build(docs)
		builds = append(builds, time.Since(start))
	}
	slices.Sort(builds)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	big := Build(docs)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	qs := allQueries(b)
	var lat []time.Duration
	for range 20 {
		for _, q := range qs {
			start := time.Now()
			big.Search(q, DefaultLimit, nil)
			lat = append(lat, time.Since(start))
		}
	}
	slices.Sort(lat)
	p50, p95 := lat[len(lat)/2], lat[len(lat)*95/100]
	b.Logf("%d tools: build %v (median of 9), index heap %.2f MiB, search p50 %v p95 %v (%d searches)",
		big.Len(), builds[len(builds)/2], float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/(1<<20), p50, p95, len(lat))
	b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(p95.Nanoseconds()), "p95-ns")

	full, meta := listingSizes(b)
	b.Logf("tools/list: %d tools %d bytes (~%d tokens); with discovery %d bytes (~%d tokens): %.0f× smaller",
		len(known), full, full/4, meta, meta/4, float64(full)/float64(meta))
	runtime.KeepAlive(big)
	runtime.KeepAlive(docs) // live across both readings: only the index differs
}

// listingSizes are the bytes of a tools/list result listing every real
// tool as the endpoint does (name, title, description, input and output
// schemas, annotations, the upstream in _meta) and one listing only the
// two meta-tools.
func listingSizes(b *testing.B) (full, meta int) {
	var all []json.RawMessage
	for _, t := range benign(b) {
		raw, err := json.Marshal(struct {
			Name         string          `json:"name"`
			Title        string          `json:"title,omitempty"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
			Annotations  json.RawMessage `json:"annotations,omitempty"`
			Meta         map[string]any  `json:"_meta"`
		}{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations, map[string]any{"dev.toolgate/source": t.Source}})
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, raw)
	}
	list := func(tools []json.RawMessage) int {
		raw, _ := json.Marshal(map[string]any{"tools": tools})
		return len(raw)
	}
	return list(all), list([]json.RawMessage{SearchToolJSON, CallToolJSON})
}
