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
// resources, prompts and completions on. It serves the legacy session
// transport itself (legacy.go): it mints a session id only once initialize
// succeeded, answers 404 for ids it did not mint or that ended, and binds
// each session to the actor that opened it. Authentication is not done
// here: the auth package's middleware sits in front and puts the actor in
// the request context.
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
// An endpoint with tool search (discovery.go) lists two tools of its own
// instead of the registry's: search_tools is answered from an index of
// the served tools filtered by the caller's listing test, and call_tool
// is unwrapped into the tools/call of its inner tool, which then goes the
// one way every call goes.
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
// The legacy session transport is the endpoint's own too (legacy.go):
// initialize and the id it hands out, the session's GET stream and its
// DELETE, adopting a session opened elsewhere (resume.go), parking an idle
// one and waking it; each record's phase moves only through package
// session's transition function (sessions.go). The session is a type of
// the gateway's (legacySession: client info, capabilities, log level, protocol
// revision, and mcp-go's requests to the client — sampling, elicitation —
// which it asks on its GET stream), registered with mcp-go's server, so
// mcp-go's hooks and its notifications to a session or to all reach it;
// what is queued for it waits for its GET stream, and no POST's answer
// takes it from there. The gateway's own requests to a client go on the
// call's own stream instead (relay.go).
// mcp-go's transport mints an id before it reads the initialize, hands it
// out with an error too, and leaves behind every POST a goroutine that
// can take a queued notification and drop it; and a session living in it
// can only be made or let go of by requests made of it. A session of the
// gateway's is made from its sealed id, and let go of, directly.
//
// mcp-go answers, on a legacy session, through MCPServer.HandleMessage
// with the session in the context: initialize's result, ping,
// logging/setLevel, resources, prompts and completions (the catalog's
// handlers), and the errors of what no method serves. Those are the
// protocol's bookkeeping, which mcp-go implements to the letter and keeps
// up with the revisions; their cost is no call's. The endpoint writes the
// answer HandleMessage returns, as it returned it.
//
// mcp-go's transport (StreamableHTTPServer, reached through Handle with
// the body already read, library.go) still serves what has no legacy
// session: every request of a stateless endpoint but tools/call and
// tools/list, and the same of a 2026-07-28 client — server/discover,
// subscriptions/listen (whose streams mcp-go's broadcasts reach through a
// registry it keeps unexported), what the revision refuses (a GET or
// DELETE: 405) and its notifications. Its types are used throughout, and
// its client carries the upstream side (package mcp/upstream).
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
package serve
