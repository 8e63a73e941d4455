package config

import "testing"

// OP-7: /metrics is on by default; gateway.metrics.enabled: false turns it
// off, and true keeps it on.
func TestMetricsOnByDefault(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		on   bool
	}{
		{"", true},
		{"gateway:\n  metrics: {}\n", true},
		{"gateway:\n  metrics: {enabled: true}\n", true},
		{"gateway:\n  metrics: {enabled: false}\n", false},
	} {
		cfg, _ := mustLoad(t, writeConfig(t, tt.yaml), fixedEnv)
		if got := cfg.Gateway.Metrics.On(); got != tt.on {
			t.Errorf("%q: metrics on = %v, want %v", tt.yaml, got, tt.on)
		}
	}
}
