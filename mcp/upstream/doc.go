// Package upstream is toolgate's upstream side: the MCP clients that
// implement core.Upstream for the servers it governs.
//
// New builds a core.Upstream for one configured MCP server: a stdio
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
// Options.Supervisor set (toolgate always sets it) the group is led
// by a small supervisor that stops it even when the gateway is SIGKILLed,
// and, as a child subreaper on Linux, every descendant that left the group.
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
//     they came, on the call's own response stream (package mcp/serve's
//     stream.go), ahead of the result.
//   - Sampling and elicitation over Streamable HTTP arrive on the stream of
//     the call that caused them, and so carry that call's context: they go
//     to exactly that session, on that call's own stream, and its answer
//     goes back as the client wrote it, however long a person takes (the
//     gateway posts it itself: mcp-go's client would cut it at 30 s).
//   - What carries no reference to a call — log messages, and sampling or
//     elicitation over stdio, where there is one pipe for everything — is
//     attributed only when every call in flight on that upstream comes from
//     one session. A call without a session (2026-07-28, a stateless
//     endpoint) is a session of its own, even beside another call of the
//     same actor, so such a message reaches it only while it is the one
//     call in flight. Otherwise it goes to nobody: a log message is
//     dropped, a request is refused with an error. It is never sent to a
//     guessed session, since that would show one client another's data.
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
//   - Resource subscriptions are counted across sessions (package mcp/serve's
//     Hub): the upstream is subscribed on the first and unsubscribed after
//     the last, and notifications/resources/updated goes to the subscribed
//     sessions.
//   - list_changed for tools, prompts and resources makes the importer
//     refresh that upstream; the endpoints then tell every session.
//
// The legacy SSE transport has no way to take requests from the server in
// mcp-go, so an upstream reached over SSE is not offered sampling or
// elicitation.
//
// The calling client is reached through package mcp/downstream: the
// serving side (package mcp/serve) puts a downstream.Downstream in each call's
// context, and what this package passes on goes through it, so nothing
// here knows of sessions, streams or mcp-go's server. Resource updates go
// to the downstream.Hub in Options.
package upstream
