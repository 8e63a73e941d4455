// Package serve is toolgate's serving side over mcp-go
// (github.com/mark3labs/mcp-go): the endpoint MCP clients connect to. The
// upstream side, toolgate as the MCP client of its upstreams, is package
// mcp/upstream.
//
// # Serving side
//
// Endpoint serves the live registry as one MCP server over Streamable
// HTTP: it follows the registry's events (a change notifies sessions),
// filters tools/list and tools/call per actor, puts action tools behind
// core's confirm gate, records every call for the audit log, and passes
// upstreams' resources, prompts and completions on.
//
// Every endpoint serves both protocol eras on one path, and answers every
// request itself: no request reaches mcp-go's HTTP transport. A POST body
// is read once into an envelope (package jsonrpc: kind, method, id,
// params); a request whose _meta (or Mcp-Protocol-Version header) names
// 2026-07-28 is checked against that revision's wire rules once
// (server_modern.go). Every method is then one entry of one table,
// methods (methods.go): who answers it — the gateway, or mcp-go's
// MCPServer.HandleMessage — in which eras, and what it needs. tools/call
// and tools/list are the gateway's (serve_tools.go), one implementation
// for a legacy session, a stateless endpoint and a 2026-07-28 client
// alike: their results are the upstream's bytes (mcp-go's types lose
// fields), their listings kept JSON, and a call needs its own stream for
// progress and an upstream's requests. A confirmation a 2026-07-28 client
// can ask its user for rides an input request whose requestState the
// gateway seals (server_state.go). The rest — initialize's result, ping,
// logging, resources, prompts, completions, server/discover,
// subscriptions/listen and the errors of what no method serves — is the
// protocol's bookkeeping, which HandleMessage answers to the letter with
// a session of the gateway's in the context; the endpoint writes its
// answer as JSON, or as an event stream once notifications went out first.
//
// An endpoint with tool search (discovery.go) lists two tools of its own
// instead of the registry's: search_tools is answered from an index of
// the served tools filtered by the caller's listing test, and call_tool
// is unwrapped into the tools/call of its inner tool, which then goes the
// one way every call goes.
//
// # Sessions
//
// The legacy session transport is the endpoint's own (legacy.go):
// initialize and the id it hands out only once it succeeded, 404 for ids
// it did not mint or that ended, each session bound to the actor that
// opened it, its GET stream and its DELETE, adopting a session opened
// elsewhere (resume.go), parking an idle one and waking it; each record's
// phase moves only through package session's transition function
// (sessions.go). A session (legacySession: client info, capabilities, log
// level, revision, and requests to the client asked on its GET stream) is
// registered with mcp-go's server, so its notifications to a session or
// to all reach it; what is queued for it waits for its GET stream. The
// gateway's own requests to a client go on the call's own stream
// (relay.go).
//
// What has no legacy session gets a session of its own for the request
// (methods.go): a 2026-07-28 request, or a stateless endpoint's, whose GET
// streams share one per id. A subscriptions/listen stream receives
// mcp-go's broadcasts through one session registered for all of them,
// filtered by what each asked for. Authentication is not done here: the
// auth package's middleware sits in front and puts the actor in the
// request context.
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
