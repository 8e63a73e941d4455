// Package mcp is toolgate's serving side over mcp-go
// (github.com/mark3labs/mcp-go): the endpoint MCP clients connect to. The
// upstream side, toolgate as the MCP client of its upstreams, is package
// mcp/upstream.
//
// # Serving side
//
// Endpoint serves the live registry as one Streamable HTTP MCP server: it
// follows the registry's events (a change notifies sessions), filters
// tools/list and tools/call per actor, puts action tools behind core's
// confirm gate, records every call for the audit log, and passes upstreams'
// resources, prompts and completions on. Its own session-id manager answers 404 for ids it
// did not mint or that ended, and binds each session to the actor that opened
// it. Authentication is not done here: the auth package's middleware sits in
// front and puts the actor in the request context.
//
// Every endpoint serves both protocol eras on one path. A POST body is
// read once into an envelope (package jsonrpc: kind, method, id, params), and
// a request whose _meta (or Mcp-Protocol-Version header) names 2026-07-28
// is checked against that revision's wire rules once (server_modern.go).
// The endpoint then dispatches from one table, ownMethods (serve_tools.go):
// tools/call and tools/list have one implementation each, for a legacy
// session, a stateless endpoint and a 2026-07-28 client alike, so the eras
// are governed alike and cost alike. A confirmation a 2026-07-28 client
// can ask its user for rides an input request whose requestState the
// gateway seals (server_state.go).
//
// # What mcp-go serves, and why
//
// The gateway answers the two methods that carry nearly all traffic and
// all of governance itself: their results are the upstream's bytes
// (mcp-go's types lose fields), their listings are kept as JSON (mcp-go
// marshals every tool per request), and a tools/call needs the call's own
// stream for progress and an upstream's requests. mcp-go keeps its tool
// table empty and never sees either method.
//
// mcp-go serves the rest, through Handle with the body already read
// (library.go): initialize and the legacy session it opens, the GET stream
// and DELETE of a session, ping, logging/setLevel, resources, prompts and
// completions (the catalog's handlers), server/discover and
// subscriptions/listen. Those are the protocol's bookkeeping, which mcp-go
// implements to the letter for both eras and keeps up with the revisions;
// their cost is no call's. Its types are used throughout, and its client
// carries the upstream side (package mcp/upstream).
//
// The one answer of mcp-go the endpoint still edits is a failed
// initialize's: mcp-go's transport mints the session id before it reads
// the request, and hands it out with an error too (initializeRewrite). The
// legacy session's state lives in mcp-go's transport, so making it again
// for an adopted or parked session (resume.go) and letting go of it
// (EndSession, parking) are requests the endpoint makes of mcp-go itself.
// Owning the legacy session transport would end both.
//
// # Upstream connections and downstream sessions
//
// The upstream clients are package mcp/upstream, whose doc says why one
// connection per upstream carries every session's calls and how what an
// upstream sends during a call is attributed to it. The two sides meet in
// package mcp/downstream: the endpoint puts the calling client in each
// call's context as a downstream.Downstream (relay.go), which the upstream
// side passes progress, log messages and requests to, and the Hub, which
// counts resource subscriptions across sessions, takes what upstreams send
// outside any call. Package mcp imports nothing of mcp/upstream, and
// mcp/upstream nothing of mcp (layering_test.go).
package mcp
