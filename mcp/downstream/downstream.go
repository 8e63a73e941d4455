// Package downstream is the seam between toolgate's two MCP sides: what the
// upstream side (package mcp/upstream) needs of the client whose call it
// is carrying, and what the serving side (package mcp/serve) provides.
//
// A tools/call the endpoint serves is sent upstream on a connection every
// session shares. What the upstream sends during the call — progress, log
// messages, sampling and elicitation requests — must reach the session
// that made it, on that call's own stream where there is one. The serving
// side puts a Downstream for the call in its context (With); the upstream
// side finds it there (From) and passes things on through it, knowing
// nothing of sessions, streams or mcp-go's server. What an upstream sends
// outside any call (notifications/resources/updated) goes to a Hub.
package downstream

import (
	"context"
	"encoding/json"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// Downstream is the client a tools/call came from, as the upstream side
// sees it: where the upstream's progress, log messages and requests made
// during that call are sent.
type Downstream interface {
	// ProgressToken is the client's own progress token; nil when it asked
	// for none.
	ProgressToken() any
	// LogLevel is the level the client set for log messages (a session's
	// logging/setLevel, a 2026-07-28 request's own); ok is false when it
	// set none, and then every message is passed on.
	LogLevel() (level mcpgo.LoggingLevel, ok bool)
	// Notify sends a notification to the client, on the call's own stream
	// where the transport has one. params is the upstream's object; numbers
	// keep their exact text.
	Notify(method string, params map[string]any)
	// Streamed reports whether anything was passed on during the call.
	Streamed() bool
	// Request asks the client on the upstream's behalf (sampling,
	// elicitation) and returns its answer. ctx ends when the upstream
	// withdraws its request; the call's end ends it too.
	Request(ctx context.Context, method string, params json.RawMessage) (any, error)
	// Session names the client session: two calls of one session have
	// equal values (comparable with ==). A call the serving side cannot
	// show to be of one session with another (2026-07-28, a stateless
	// endpoint) has a value no other call has: same actor is not same
	// client.
	Session() any
	// CanElicitURL reports whether the client declared URL-mode
	// elicitation and can be asked during this call: on its session, or
	// (2026-07-28) in the call's own capabilities with an input request.
	CanElicitURL() bool
	// NotifyCallStream sends a notification on the call's own response
	// stream and reports whether it went; false where the call has none.
	NotifyCallStream(method string, params map[string]any) bool
	// SessionNotifier returns what sends a notification to the client's
	// session once the call has ended, for as long as the session lasts;
	// it holds nothing of the call. nil for a client without a session
	// (2026-07-28).
	SessionNotifier() func(method string, params map[string]any)
}

type key struct{}

// With returns ctx carrying d: what the upstream sends during the call
// made with ctx goes to d.
func With(ctx context.Context, d Downstream) context.Context {
	return context.WithValue(ctx, key{}, d)
}

// From returns the Downstream in ctx, or nil when the call came from no
// MCP client (or from none the serving side relays to).
func From(ctx context.Context) Downstream {
	d, _ := ctx.Value(key{}).(Downstream)
	return d
}

// WantsLog reports whether d asked for log messages of level.
func WantsLog(d Downstream, level mcpgo.LoggingLevel) bool {
	min, ok := d.LogLevel()
	return !ok || level.ShouldSendTo(min)
}

// Hub carries what upstreams send outside any call to the sessions that
// asked for it.
type Hub interface {
	// ResourceUpdated passes an upstream's notifications/resources/updated
	// (its params as sent) to every session subscribed to the URI, and to
	// nobody else.
	ResourceUpdated(params json.RawMessage)
}
