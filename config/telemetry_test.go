package config

import (
	"errors"
	"strings"
	"testing"
)

const otlpTokenValue = "otlp-" + leakMarker + "-token"

// OP-9: telemetry.traces loads; the headers are secrets the dump never
// shows; sampleRatio defaults to 1 and 0 stays 0.
func TestTracesConfigLoads(t *testing.T) {
	path := writeConfig(t, "telemetry:\n  traces:\n    endpoint: http://127.0.0.1:4318\n    protocol: grpc\n    headers: {authorization: \"${OTLP_TOKEN}\"}\n    sampleRatio: 0.25\n")
	cfg, _ := mustLoad(t, path, withEnv(map[string]string{"OTLP_TOKEN": otlpTokenValue}))
	tr := cfg.Telemetry.Traces
	if tr.Endpoint != "http://127.0.0.1:4318" || tr.Protocol != "grpc" || tr.Ratio() != 0.25 || tr.Headers["authorization"].Reveal() != otlpTokenValue {
		t.Errorf("telemetry.traces = %+v (ratio %v)", tr, tr.Ratio())
	}
	dump, err := Dump(cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertNoLeak(t, "the dump", string(dump))

	cfg, _ = mustLoad(t, writeConfig(t, "telemetry:\n  traces:\n    endpoint: http://127.0.0.1:4318\n"), withEnv(nil))
	if r := cfg.Telemetry.Traces.Ratio(); r != 1 {
		t.Errorf("default sampleRatio = %v, want 1", r)
	}
	cfg, _ = mustLoad(t, writeConfig(t, "telemetry:\n  traces:\n    endpoint: http://127.0.0.1:4318\n    sampleRatio: 0\n"), withEnv(nil))
	if r := cfg.Telemetry.Traces.Ratio(); r != 0 {
		t.Errorf("sampleRatio 0 read as %v", r)
	}
}

// OP-9: bad telemetry values are errors naming the key path, without the
// header's value.
func TestTracesConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, path, msg string }{
		{"not a URL", "telemetry:\n  traces:\n    endpoint: 127.0.0.1:4318\n    headers: {x: " + otlpTokenValue + "}\n", "telemetry.traces.endpoint", "http:// or https://"},
		{"other scheme", "telemetry:\n  traces:\n    endpoint: ftp://127.0.0.1:4318\n", "telemetry.traces.endpoint", "http:// or https://"},
		{"protocol", "telemetry:\n  traces:\n    protocol: thrift\n", "telemetry.traces.protocol", "http or grpc"},
		{"ratio above 1", "telemetry:\n  traces:\n    sampleRatio: 1.5\n", "telemetry.traces.sampleRatio", "between 0 and 1"},
		{"negative ratio", "telemetry:\n  traces:\n    sampleRatio: -0.1\n", "telemetry.traces.sampleRatio", "between 0 and 1"},
		{"unknown key", "telemetry:\n  traces:\n    url: http://127.0.0.1:4318\n", "", `telemetry.traces: unknown key "url"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Load(writeConfig(t, tc.yaml), optionsFor(withEnv(nil)))
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			assertNoLeak(t, "the error", err.Error())
			var ve *ValidationErrors
			if tc.path == "" {
				if !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("error %q does not name %s", err, tc.msg)
				}
				return
			}
			if !errors.As(err, &ve) {
				t.Fatalf("error %T %v, want *ValidationErrors", err, err)
			}
			for _, fe := range ve.Errors {
				if fe.Path == tc.path && strings.Contains(fe.Message, tc.msg) {
					return
				}
			}
			t.Fatalf("errors %v lack %s: …%s…", err, tc.path, tc.msg)
		})
	}
}
