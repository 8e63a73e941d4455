// Package mcp holds toolgate's protocol adapters over mcp-go
// (github.com/mark3labs/mcp-go).
//
// # Upstream side
//
// NewUpstream builds a core.Upstream for one configured MCP server: a stdio
// child process, a Streamable HTTP endpoint or a legacy SSE endpoint (with
// "auto" trying Streamable HTTP first). mcp-go supplies the transports and the
// initialize handshake; everything the gateway must pass on untouched —
// tools/list schemas and annotations, tools/call results — is sent and read
// raw, because mcp-go's typed results lose fields. Transport errors are
// classified for the importer's retry rules (core.ErrNotSent,
// core.ErrSessionExpired, *core.StatusError, core.Transient).
//
// Network upstreams carry their headers, bearer token and HMAC signature in an
// http.RoundTripper, so every request — including the event stream and the
// DELETE that ends a session — is authenticated the same way. A stdio child
// runs in its own process group, which Close stops as a whole.
//
// # Serving side
//
// The Streamable HTTP server that offers core's registry to clients lives here
// too (added separately).
package mcp
