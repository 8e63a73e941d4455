package otlptest

import (
	"bytes"
	"net/http"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// export is an encoded request of spans per scope, in two resources, with
// attributes around the spans that the count must skip.
func export(t *testing.T, perScope ...int) []byte {
	t.Helper()
	attr := []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "toolgate"}}}}
	var req collectorpb.ExportTraceServiceRequest
	for i := range 2 {
		rs := &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: attr}, SchemaUrl: "https://opentelemetry.io/schemas/1.41.0"}
		for j, n := range perScope {
			if j%2 != i {
				continue
			}
			ss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: "scope"}}
			for range n {
				ss.Spans = append(ss.Spans, &tracepb.Span{Name: "s", TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8),
					Attributes: attr, StartTimeUnixNano: 1, EndTimeUnixNano: 2})
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		req.ResourceSpans = append(req.ResourceSpans, rs)
	}
	b, err := proto.Marshal(&req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// OP-9, the tracing benchmark's receiver: a counting receiver counts the spans of every export from the wire
// format, whatever resources and scopes hold them, and refuses an export
// that is not well-formed protobuf.
func TestCountingReceiverCountsFromTheWire(t *testing.T) {
	r := StartCounting(t)
	post := func(body []byte) int {
		t.Helper()
		res, err := http.Post(r.URL+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post(export(t, 3, 0, 4, 1)); code != http.StatusOK {
		t.Fatalf("an export was answered %d", code)
	}
	if code := post(export(t)); code != http.StatusOK {
		t.Fatalf("an empty export was answered %d", code)
	}
	if got := r.Count(); got != 8 {
		t.Fatalf("counted %d spans, want 8", got)
	}
	good := export(t, 2)
	for name, bad := range map[string][]byte{
		"truncated":   good[:len(good)-3],
		"bad tag":     {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"long length": {0x0a, 0x7f, 0x12},
	} {
		if code := post(bad); code != http.StatusBadRequest {
			t.Errorf("%s: answered %d, want 400", name, code)
		}
	}
	if got := r.Count(); got != 8 {
		t.Fatalf("after malformed exports the count is %d, want 8", got)
	}
}
