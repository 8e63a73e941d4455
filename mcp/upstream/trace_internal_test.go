package upstream

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// OP-9: a traced request other than tools/call gets the trace context in
// its _meta, replacing one it had and keeping its other _meta members and
// every other member's bytes; params that are no plain object, and any
// params without a trace, go as they were.
func TestTraceMetaJoinsEveryRequest(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("vendor=1")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	const tp = `"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"vendor=1"`

	for _, c := range []struct {
		in   any
		want string
	}{
		{nil, `{"_meta":{` + tp + `}}`},
		{map[string]string{"uri": "file:///a"}, `{"_meta":{` + tp + `},"uri":"file:///a"}`},
		{json.RawMessage(`{ "name" : "p", "arguments": {"n": 1.50, "s":"\u00e9"} }`), `{"_meta":{` + tp + `},"name":"p","arguments":{"n": 1.50, "s":"\u00e9"}}`},
		{json.RawMessage(`{"_meta":{"progressToken":3,"traceparent":"00-old"},"cursor":"c"}`), `{"_meta":{` + tp + `,"progressToken":3},"cursor":"c"}`},
		{json.RawMessage(`null`), `{"_meta":{` + tp + `}}`},
	} {
		got, ok := withTraceMeta(ctx, c.in).(json.RawMessage)
		if !ok || string(got) != c.want {
			t.Errorf("%v: %s, want %s", c.in, got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("%v: %s is not JSON", c.in, got)
		}
	}
	for _, in := range []any{json.RawMessage(`[1]`), json.RawMessage(`{"_m\u0065ta":{}}`), json.RawMessage(`{"_meta":[1]}`)} {
		if got := withTraceMeta(ctx, in); !reflect.DeepEqual(got, in) {
			t.Errorf("%s: became %s", in, got)
		}
	}
	in := map[string]string{"uri": "file:///a"}
	if got := withTraceMeta(context.Background(), in); !reflect.DeepEqual(got, in) {
		t.Errorf("without a trace: %v became %v", in, got)
	}
}
