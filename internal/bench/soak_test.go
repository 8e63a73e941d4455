package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

// BenchmarkSoak is the soak (sessions opening, calling, left
// to expire) as a benchmark: each iteration soaks for TOOLGATE_SOAK (a Go
// duration, default 3s) and reports the heap's growth over the load and
// after the sessions expired. Not part of `go test`; run it with
//
//	go test -run '^$' -bench Soak -benchtime 1x ./internal/bench/
//
// `toolgate bench --soak` is the same run with a table of samples.
func BenchmarkSoak(b *testing.B) {
	d := 3 * time.Second
	if v := os.Getenv("TOOLGATE_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("TOOLGATE_SOAK=%q: %v", v, err)
		}
	}
	for b.Loop() {
		res, err := Soak(context.Background(), SoakConfig{Duration: d, IdleTimeout: 500 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		if res.Errors > 0 {
			b.Errorf("%d requests failed", res.Errors)
		}
		b.ReportMetric(res.HeapGrowth, "heap-drained2/drained1")
		b.ReportMetric(res.DrainedOverStart, "heap-drained2/start")
		b.ReportMetric(float64(res.Opened), "sessions")
		b.ReportMetric(float64(res.Samples[len(res.Samples)-1].HeapBytes)/(1<<20), "drained-heap-MiB")
	}
}
