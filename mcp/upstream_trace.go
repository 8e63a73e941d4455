package mcp

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
	b = appendJSONString(b, meta.Traceparent)
	if meta.Tracestate != "" {
		b = append(b, `,"tracestate":`...)
		b = appendJSONString(b, meta.Tracestate)
	}
	return b
}
