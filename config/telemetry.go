package config

import (
	"net/url"
)

// Telemetry is the telemetry section: OpenTelemetry traces (OP-9).
type Telemetry struct {
	Traces Traces `koanf:"traces" json:"traces,omitzero" yaml:"traces,omitempty"`
}

// Traces is telemetry.traces: where spans are exported over OTLP. With no
// endpoint here and none in the OTEL_EXPORTER_OTLP_* environment, nothing
// is traced.
type Traces struct {
	// Endpoint is the collector's URL, e.g. http://127.0.0.1:4318 (OTLP over
	// HTTP) or http://127.0.0.1:4317 with protocol grpc.
	Endpoint string `koanf:"endpoint" json:"endpoint,omitempty" yaml:"endpoint,omitempty"`
	// Protocol is http (OTLP/HTTP protobuf) or grpc; empty: the
	// OTEL_EXPORTER_OTLP_PROTOCOL environment, else http.
	Protocol string `koanf:"protocol" json:"protocol,omitempty" yaml:"protocol,omitempty"`
	// Headers go with every export, typically a collector's token.
	Headers map[string]Secret `koanf:"headers" json:"headers,omitempty" yaml:"headers,omitempty"`
	// SampleRatio is the share of new traces recorded, 0 to 1; a caller's
	// sampled flag is followed. nil: 1.
	SampleRatio *float64 `koanf:"sampleRatio" json:"sampleRatio,omitempty" yaml:"sampleRatio,omitempty"`
}

// Ratio is SampleRatio with its default.
func (t Traces) Ratio() float64 {
	if t.SampleRatio == nil {
		return 1
	}
	return *t.SampleRatio
}

// telemetry validates the telemetry section.
func (v *validator) telemetry() {
	t := v.c.Telemetry.Traces
	if t.Endpoint != "" {
		u, err := url.Parse(t.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.fail("telemetry.traces.endpoint", "must be an http:// or https:// URL such as http://127.0.0.1:4318")
		}
	}
	switch t.Protocol {
	case "", "http", "grpc":
	default:
		v.fail("telemetry.traces.protocol", "must be http or grpc, not %q", t.Protocol)
	}
	if r := t.Ratio(); r < 0 || r > 1 || r != r {
		v.fail("telemetry.traces.sampleRatio", "must be between 0 and 1")
	}
	for k := range t.Headers {
		if k == "" {
			v.fail("telemetry.traces.headers", "a header name is empty")
		}
	}
}
