// Package serve is toolgate's serving side over mcp-go
// (github.com/mark3labs/mcp-go): the endpoint MCP clients connect to, one
// Streamable HTTP MCP server over the live registry per endpoint. The
// upstream side is package mcp/upstream; the two meet only in package
// mcp/downstream (relay.go puts the calling client in each call's context;
// the Hub takes what upstreams send outside any call), and import nothing
// of each other (layering_test.go). Authentication is not done here: the
// auth package's middleware sits in front and puts the actor in the
// request context.
//
// Every endpoint serves both protocol eras on one path and writes every
// answer itself; no request reaches mcp-go's HTTP transport. A POST body
// is read once into an envelope (package jsonrpc), a 2026-07-28 request is
// checked against that revision's wire rules once (server_modern.go), and
// every method is one entry of one table, methods (methods.go): who
// answers it, in which eras, what it needs. tools/call and tools/list are
// the gateway's, one implementation for every era and session mode
// (serve_tools.go; the call's steps in order in pipeline.go): their
// results are the upstream's bytes and their listings kept JSON, which
// mcp-go's types would lose. The protocol's bookkeeping is mcp-go's
// MCPServer.HandleMessage's, run with a session of the gateway's in the
// context: the legacy session the request names (legacy.go), or, without
// one, a session of the request's own (methods.go).
//
// The legacy session transport is the endpoint's (legacy.go): an id
// minted only once initialize succeeded, bound to the actor that opened
// it, 404 once ended; its GET stream and its DELETE. The session's life —
// adoption on another replica, park and wake, the caps, the idle sweep,
// its end — is package session's table, whose host the endpoint is
// (sessions.go, resume.go). docs/architecture.md shows the method table
// and the session's states.
package serve
