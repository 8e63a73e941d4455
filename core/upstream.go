package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"
)

// RPCError is a JSON-RPC error answer from an upstream: a definite failure.
type RPCError struct {
	Code    int
	Message string
}

// Upstream is one connection to an MCP server that tools are imported from.
// The mcp package implements it over stdio, Streamable HTTP and SSE; FakeUpstream
// implements it in memory.
//
// Connect may be called again after Close or after a failure: it then makes a
// fresh connection. ListTools, CallTool and Ping may run concurrently with each
// other once connected; Connect and Close are never called concurrently with
// anything by the importer.
type Upstream interface {
	Connect(ctx context.Context) (ServerInfo, error)
	// ListTools returns the upstream's whole current list (every page),
	// with schemas and annotations as raw JSON.
	ListTools(ctx context.Context) ([]RemoteTool, error)
	// CallTool calls a tool by its remote name. A result with isError is a
	// Result, not an error.
	CallTool(ctx context.Context, remoteName string, args json.RawMessage) (Result, error)
	Ping(ctx context.Context) error
	Close() error
}

// ToolsChangedNotifier is implemented by upstreams that can report the
// server's notifications/tools/list_changed (IM-25).
type ToolsChangedNotifier interface {
	// OnToolsChanged sets the function called for each such notification.
	// It must not block.
	OnToolsChanged(func())
}

// CallPreparer is implemented by upstreams that may need something of the
// caller before a call can be sent at all: a perActor OAuth upstream asks
// an actor not yet connected to open the connect link and waits for the
// person to sign in (UI-2). PrepareCall runs once per call before its
// attempts, within the call's own lifetime but not its per-attempt timeout
// (a person signing in takes minutes, an attempt seconds), and sends
// nothing to the upstream, so retries and never-twice for actions are
// untouched. ok false ends the call with res.
type CallPreparer interface {
	PrepareCall(ctx context.Context, remoteName string) (res Result, ok bool)
}

// TransportReporter is implemented by upstreams that pick their transport
// when they connect: a url with transport auto tries Streamable HTTP, then
// SSE (IM-2). The operator sees the one picked (IM-9).
type TransportReporter interface {
	// Transport names the transport of the last successful Connect, "http"
	// or "sse"; "" before one. Safe to call at any time.
	Transport() string
}

// ServerInfo is what an upstream said about itself at initialize.
type ServerInfo struct {
	Name     string `json:"name,omitempty"`
	Version  string `json:"version,omitempty"`
	Protocol string `json:"protocol,omitempty"`
}

// RemoteTool is one entry of an upstream's tools/list, kept raw where the
// gateway must pass it on untouched.
type RemoteTool struct {
	Name string
	// Description is nil when the upstream sent none (IM-36).
	Description *string
	InputSchema json.RawMessage
	// OutputSchema is nil when the upstream declared none.
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
	// Title, Icons, Execution and Meta (_meta) as the upstream sent them;
	// empty when it sent none.
	Title     string
	Icons     json.RawMessage
	Execution json.RawMessage
	Meta      json.RawMessage
}

var (
	// ErrNotSent marks a failure that provably happened before the request
	// left (dial refused, DNS, TLS handshake): safe to retry for any kind.
	ErrNotSent = errors.New("request was not sent")
	// ErrSessionExpired marks an upstream that no longer knows our session.
	ErrSessionExpired = errors.New("upstream session expired")
	// ErrOutcomeUnknown is what the caller of an action gets when the call
	// may or may not have run upstream (IM-29).
	ErrOutcomeUnknown = errors.New("outcome unknown: the call may have run upstream; it was not re-issued")
	// ErrUnknownUpstream: no upstream of that name is configured (IM-24).
	ErrUnknownUpstream = errors.New("unknown upstream")
	// ErrUnknownPlan: no refresh plan of that id is held (applied, cancelled,
	// expired or never made).
	ErrUnknownPlan = errors.New("unknown refresh plan")
)

// StatusError is an HTTP status from an upstream.
type StatusError struct{ Code int }

// Transient reports whether err is the kind of failure after which the
// connection should be dropped and made again (IM-27): connection refused,
// reset or closed, EOF, broken pipe, an expired session, a timeout, HTTP
// 500/502/503.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var se *StatusError
	var timeout interface{ Timeout() bool }
	switch {
	case errors.Is(err, ErrNotSent), errors.Is(err, ErrSessionExpired),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.ErrClosedPipe),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &se):
		return se.Code == 500 || se.Code == 502 || se.Code == 503
	case errors.As(err, &timeout):
		return timeout.Timeout()
	}
	return false
}

// RetryClassifier decides whether a failed call of a tool of the given kind
// may be issued again. One function decides for every kind (IM-31).
type RetryClassifier func(kind Kind, err error) bool

// DefaultRetry retries reads on any transient failure (IM-28) and actions
// only when the request provably never left (IM-29).
func DefaultRetry(kind Kind, err error) bool {
	if errors.Is(err, ErrNotSent) {
		return true
	}
	return kind == KindRead && Transient(err)
}

// Backoff returns how long to wait before attempt n (n >= 1 is the first
// retry).
type Backoff func(n int) time.Duration

func (e *StatusError) Error() string { return fmt.Sprintf("upstream answered HTTP %d", e.Code) }
