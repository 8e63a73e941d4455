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
// runs in its own process group, which Close stops as a whole; with
// UpstreamOptions.Supervisor set (toolgate always sets it) the group is led
// by a small supervisor that stops it even when the gateway is SIGKILLed.
//
// # Serving side
//
// Endpoint serves the live registry as one Streamable HTTP MCP server: it
// follows the registry's events (a change notifies sessions), filters
// tools/list and tools/call per actor, puts action tools behind core's
// confirm gate, records every call for the audit log, and passes upstreams'
// resources and prompts on. Its own session-id manager answers 404 for ids it
// did not mint or that ended, and binds each session to the actor that opened
// it. Authentication is not done here: the auth package's middleware sits in
// front and puts the actor in the request context.
//
// Upstream connections are shared by all downstream sessions: one
// connection per upstream, opened by the importer. Server-to-client requests
// from an upstream (sampling, elicitation) are therefore not routed to a
// downstream session yet; that needs per-call attribution and is open work.
package mcp
