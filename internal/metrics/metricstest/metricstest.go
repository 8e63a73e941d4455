// Package metricstest reads parsed Prometheus metrics in tests.
package metricstest

import dto "github.com/prometheus/client_model/go"

// Value is the value of the series of family name with exactly the given
// labels (name, value pairs): a counter's or gauge's value, a histogram's
// sample count; ok is false when there is no such series.
func Value(fams map[string]*dto.MetricFamily, name string, labels ...string) (v float64, ok bool) {
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range fams[name].GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		for _, l := range m.GetLabel() {
			if want[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}
