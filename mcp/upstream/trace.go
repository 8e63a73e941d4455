package upstream

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/mcp/jsonrpc"
	"github.com/toolgate/toolgate/telemetry"
)

// appendTraceMeta appends the call's W3C trace context to the _meta object
// being written in b (OP-9): traceparent and tracestate, the names the
// MCP trace-context convention gives them, so that a stdio upstream, which
// has no headers, continues the trace too.
func appendTraceMeta(b []byte, meta *callMeta) []byte {
	if meta.Traceparent == "" {
		return b
	}
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, `"traceparent":`...)
	b = jsonrpc.AppendString(b, meta.Traceparent)
	if meta.Tracestate != "" {
		b = append(b, `,"tracestate":`...)
		b = jsonrpc.AppendString(b, meta.Tracestate)
	}
	return b
}

// withTraceMeta is params with ctx's W3C trace context in its _meta
// (OP-9), for the requests other than tools/call (whose params carry it
// already): a stdio upstream has no headers to take it from. Each member
// of params goes on as the bytes it was; params that are not a plain JSON
// object, or ctx without a trace, are returned as they are.
func withTraceMeta(ctx context.Context, params any) any {
	tp, ts := telemetry.Context(ctx)
	if tp == "" {
		return params
	}
	var raw []byte
	switch p := params.(type) {
	case nil:
	case json.RawMessage:
		raw = p
	default:
		b, err := json.Marshal(p)
		if err != nil {
			return params // the request's own encoding reports it
		}
		raw = b
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		raw = []byte("{}")
	}
	rest := make([]byte, 0, len(raw))
	var meta []byte
	plain := jsonrpc.EachMember(raw, func(key, v []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 {
			return false // a key encoding/json would read otherwise
		}
		if string(key) == "_meta" {
			meta = v
			return true
		}
		rest = append(rest, ',', '"')
		rest = append(rest, key...)
		rest = append(rest, '"', ':')
		rest = append(rest, v...)
		return true
	})
	if !plain {
		return params
	}
	out := make([]byte, 0, len(rest)+len(meta)+len(tp)+len(ts)+48)
	out = append(out, `{"_meta":{`...)
	out = appendTraceMeta(out, &callMeta{Traceparent: tp, Tracestate: ts})
	if len(meta) > 0 && string(meta) != "null" {
		// The request's own _meta members, but for the trace context
		// this hop replaces.
		if !jsonrpc.EachMember(meta, func(key, v []byte) bool {
			if string(key) == "traceparent" || string(key) == "tracestate" {
				return true
			}
			out = append(out, ',', '"')
			out = append(out, key...)
			out = append(out, '"', ':')
			out = append(out, v...)
			return true
		}) {
			return params
		}
	}
	out = append(out, '}')
	out = append(out, rest...)
	return json.RawMessage(append(out, '}'))
}
