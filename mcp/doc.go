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
// by a small supervisor that stops it even when the gateway is SIGKILLed,
// and, as a child subreaper on Linux, every descendant that left the group.
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
// one and waking it. The session is a type of the gateway's
// (legacySession: client info, capabilities, log level, protocol
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
// its client carries the upstream side.
//
// # Upstream connections and downstream sessions
//
// Upstream connections are shared: one connection per upstream, opened by
// the importer, carries the calls of every downstream session. The
// alternatives were weighed and refused. A connection per session would
// spawn a child process per session for every stdio upstream (hundreds of
// processes for a busy endpoint, each with its own start-up delay and
// memory), multiply upstream sessions and their rate limits, and still not
// attribute anything a call did not cause. A pool has the same attribution
// problem as one connection while adding the cost of several.
//
// What an upstream sends during a call is attributed to the call, and
// through it to the session, as precisely as the protocol allows:
//
//   - Progress: the client's progressToken is replaced, upstream, by one
//     the gateway mints per call; notifications/progress carrying it go back
//     to the calling session under the client's own token, in the order
//     they came, on the call's own response stream (stream.go), ahead of
//     the result.
//   - Sampling and elicitation over Streamable HTTP arrive on the stream of
//     the call that caused them, and so carry that call's context: they go
//     to exactly that session, on that call's own stream, and its answer
//     goes back as the client wrote it, however long a person takes (the
//     gateway posts it itself: mcp-go's client would cut it at 30 s).
//   - What carries no reference to a call — log messages, and sampling or
//     elicitation over stdio, where there is one pipe for everything — is
//     attributed only when every call in flight on that upstream comes from
//     one session. Otherwise it goes to nobody: a log message is dropped,
//     a request is refused with an error. It is never sent to a guessed
//     session, since that would show one client another's data.
//   - notifications/cancelled from a client cancels the call's context,
//     and the gateway sends notifications/cancelled for the upstream
//     request. An upstream's notifications/cancelled for a request it made
//     of the gateway ends the gateway's wait for the client's answer.
//   - roots/list is answered by the gateway from the upstream's configured
//     roots. The clients' roots are paths on their machines and mean
//     nothing to an upstream running elsewhere.
//   - logging/setLevel is kept per session and filters the messages passed
//     to it; it is not sent upstream, where it would change the level for
//     every session sharing the connection.
//   - Resource subscriptions are counted across sessions (Hub): the
//     upstream is subscribed on the first and unsubscribed after the last,
//     and notifications/resources/updated goes to the subscribed sessions.
//   - list_changed for tools, prompts and resources makes the importer
//     refresh that upstream; the endpoints then tell every session.
//
// The legacy SSE transport has no way to take requests from the server in
// mcp-go, so an upstream reached over SSE is not offered sampling or
// elicitation.
package mcp
