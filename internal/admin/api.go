// Package admin is the gateway's admin API (CO-9): the console's snapshot,
// event stream and commands over HTTP, on a listener of the gateway's own
// (gateway.admin.listen, never the MCP listener), for `toolgate console
// --attach` and the headless operator commands.
//
// This file is the contract both sides build on: the routes, the bodies,
// the event stream's framing and the error codes.
//
// Every request carries `Authorization: Bearer <admin key>`; the key names
// the operator that the audit and the other consoles see. Bodies are JSON
// (at most MaxBodyBytes); an error is answered with its HTTP status and an
// ErrorBody.
//
// The event stream (GET /v1/events) is text/event-stream:
//
//	event: snapshot          data: core.Snapshot (first frame, and after each resync)
//	event: event  id: SEQ    data: WireEvent
//	event: resync            the gateway dropped events for this stream; a snapshot follows
//	: heartbeat              a comment every HeartbeatInterval, so a dead link shows
//
// A reconnecting client gets a fresh snapshot: there is no replay.
//
// On the wire every frame but the heartbeat has an `event:` line and one
// `data:` line of JSON (the resync frame's data is `{}`); event frames have
// an `id:` line between them; a blank line ends each frame:
//
//	event: snapshot\ndata: {...}\n\n
//	event: event\nid: 42\ndata: {"seq":42,...}\n\n
//	event: resync\ndata: {}\n\n
//	: heartbeat\n\n
//
// A stream whose client takes no frame within the server's write timeout
// (10 s) is ended; at most 64 streams are open at once, the next is
// refused with CodeTooManyStreams.
package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/review"
)

// Route is one admin API route, declared once for the server that serves
// it, the client that calls it, and, for a command, the gateway's console
// that records it and the CLI verb that runs it. Path segments in braces
// are escaped with url.PathEscape by the client.
type Route struct {
	// Pattern is the net/http pattern: "METHOD /path/{param}".
	Pattern string
	// Action is the name an operator's command is recorded under, in the
	// audit log and in every console's Activity (core.Action…); empty for
	// a read.
	Action string
	// Verb is the headless command that runs it ("connections revoke");
	// empty when only a console does.
	Verb string
}

// routes is every route, in the order declared: the server serves each
// and the tests hold the client and the CLI to them.
var routes []Route

// route declares a route; commands name their action and CLI verb.
func route(pattern, action, verb string) Route {
	r := Route{Pattern: pattern, Action: action, Verb: verb}
	routes = append(routes, r)
	return r
}

// Routes is every route of the admin API, in the order declared.
func Routes() []Route { return slices.Clone(routes) }

// Method is the route's HTTP method.
func (r Route) Method() string {
	m, _, _ := strings.Cut(r.Pattern, " ")
	return m
}

// Path is the route's path with each {param} replaced, in order, by the
// escaped value of params; it panics when the counts differ, a mistake in
// the caller, not in what it was given.
func (r Route) Path(params ...string) string {
	_, p, _ := strings.Cut(r.Pattern, " ")
	var b strings.Builder
	for {
		open := strings.IndexByte(p, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(p[open:], '}')
		if end < 0 || len(params) == 0 {
			panic("admin: too few parameters for " + r.Pattern)
		}
		b.WriteString(p[:open])
		b.WriteString(seg(params[0]))
		p, params = p[open+end+1:], params[1:]
	}
	if len(params) > 0 {
		panic("admin: too many parameters for " + r.Pattern)
	}
	b.WriteString(p)
	return b.String()
}

// Routes of the console's state, commands and the audit log (CO-9).
var (
	RouteInfo                = route("GET /v1/info", "", "")                                                           // → core.ConsoleInfo
	RouteWhoami              = route("GET /v1/whoami", "", "")                                                         // → Whoami
	RouteSnapshot            = route("GET /v1/snapshot", "", "")                                                       // → core.Snapshot
	RouteEvents              = route("GET /v1/events", "", "")                                                         // → event stream
	RoutePlanRefresh         = route("POST /v1/refresh/plans", core.ActionRefreshPlan, "refresh")                      // PlanRequest → core.RefreshPlan
	RouteApplyRefresh        = route("POST /v1/refresh/plans/{id}/apply", core.ActionRefreshApply, "refresh")          // → core.Diff
	RouteCancelRefresh       = route("DELETE /v1/refresh/plans/{id}", core.ActionRefreshCancel, "refresh")             // → 204
	RouteRefreshAll          = route("POST /v1/refresh/all", core.ActionRefreshAll, "refresh")                         // → []core.Diff (applied at once)
	RoutePing                = route("POST /v1/upstreams/{name}/ping", core.ActionPing, "")                            // → PingResult
	RouteReviews             = route("GET /v1/reviews", "", "")                                                        // → map[string]core.ReviewState
	RouteReviewEntries       = route("GET /v1/review/entries", "", "")                                                 // → []core.ReviewEntry
	RouteToolFlags           = route("GET /v1/tools/{name}/flags", "", "")                                             // → []core.Flag; {name} also a prompt's or resource's core.ReviewRef
	RouteApproveTool         = route("POST /v1/tools/{name}/approve", core.ActionApproveTool, "review approve")        // → 204; {name} as for RouteToolFlags
	RouteRejectTool          = route("POST /v1/tools/{name}/reject", core.ActionRejectTool, "review reject")           // → 204; {name} as for RouteToolFlags
	RouteConfirmations       = route("GET /v1/confirmations", "", "")                                                  // → []core.PendingConfirmation
	RouteApproveConfirmation = route("POST /v1/confirmations/{id}/approve", core.ActionApproveConfirmation, "approve") // → 204
	RouteRejectConfirmation  = route("POST /v1/confirmations/{id}/reject", core.ActionRejectConfirmation, "reject")    // RejectRequest → 204
	RouteSessions            = route("GET /v1/sessions", "", "")                                                       // → []core.Session: this replica's, then the others' (Elsewhere, ID a core.SessionKey)
	RouteEndSession          = route("DELETE /v1/sessions/{id}", core.ActionEndSession, "end-session")                 // {id}: a session id or a core.SessionKey, of any replica → 204
	RouteAudit               = route("GET /v1/audit", "", "")                                                          // ?since=RFC3339|duration&limit=N → []core.AuditRecord
	RoutePolicyTest          = route("POST /v1/policy/test", "", "")                                                   // PolicyTestRequest → policy.Trial
	RouteAuditCall           = route("GET /v1/audit/calls/{id}", "", "")                                               // → []core.AuditCheck: one call's records, each with its chain check
	RoutePolicies            = route("GET /v1/policy", "", "")                                                         // → core.PolicyReport: rules and limits with their hits in the last hour, quotas with their heaviest users
)

const (
	// EnvAdminKey is where the console and the headless commands read the
	// admin key from when --admin-key is not given.
	EnvAdminKey = "TOOLGATE_ADMIN_KEY"
	// EnvAttach is the default --attach URL of the headless commands.
	EnvAttach = "TOOLGATE_ATTACH"
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes = 64 << 10
	// HeartbeatInterval is how often the event stream sends a comment when
	// it has nothing else to send; a client that hears nothing for
	// 3×HeartbeatInterval treats the link as lost.
	HeartbeatInterval = 10 * time.Second
)

// SSE event names of the stream.
const (
	FrameSnapshot = "snapshot"
	FrameEvent    = "event"
	FrameResync   = "resync"
)

// PlanRequest asks for a refresh plan of one upstream.
type PlanRequest struct {
	Upstream string `json:"upstream"`
}

// PolicyTestRequest asks which policy rule decides a call, without making
// it (PO-4). The actor's roles and tenant are those of the gateway's config
// for Actor, unless Roles or Tenant is given.
type PolicyTestRequest struct {
	// Endpoint is the endpoint's path; empty: the first.
	Endpoint string          `json:"endpoint,omitempty"`
	Actor    string          `json:"actor"`
	Roles    *[]string       `json:"roles,omitempty"`
	Tenant   *string         `json:"tenant,omitempty"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args,omitempty"`
	// Via tries the call through that meta-tool ("call_tool", DS-2);
	// empty: a direct call.
	Via string `json:"via,omitempty"`
	// SessionLabels are session.labels for the trial (IN-3).
	SessionLabels []string `json:"sessionLabels,omitempty"`
}

// RejectRequest carries a rejection's reason; the body may be empty.
type RejectRequest struct {
	Reason string `json:"reason,omitempty"`
}

// PingResult is an upstream's round trip, in nanoseconds like any
// time.Duration in JSON.
type PingResult struct {
	Latency time.Duration `json:"latency"`
}

// Whoami is the operator the request's key names.
type Whoami struct {
	Operator string `json:"operator"`
}

// WireEvent is one event on the stream. Data is the JSON of the core event
// type that Type names (core.EventData.EventName).
type WireEvent struct {
	Seq  uint64          `json:"seq"`
	Time time.Time       `json:"time"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// UnknownEvent is an event of a type this build does not know (a newer
// gateway's): shown by name, otherwise ignored.
type UnknownEvent struct {
	Type string
	Data json.RawMessage
}

func (e UnknownEvent) EventName() string { return e.Type }

type eventDecoder func(json.RawMessage) (core.EventData, error)

func decoderOf[T core.EventData]() eventDecoder {
	return func(b json.RawMessage) (core.EventData, error) {
		var v T
		err := json.Unmarshal(b, &v)
		return v, err
	}
}

// eventTypes are the event types that cross the API, by name. ConnectionLost
// is the client's own and never crosses it.
var eventTypes = map[string]eventDecoder{
	core.ToolRegistered{}.EventName():      decoderOf[core.ToolRegistered](),
	core.ToolUpdated{}.EventName():         decoderOf[core.ToolUpdated](),
	core.ToolUnregistered{}.EventName():    decoderOf[core.ToolUnregistered](),
	core.CollisionRecorded{}.EventName():   decoderOf[core.CollisionRecorded](),
	core.CollisionsForgotten{}.EventName(): decoderOf[core.CollisionsForgotten](),
	core.Resync{}.EventName():              decoderOf[core.Resync](),
	core.SessionStarted{}.EventName():      decoderOf[core.SessionStarted](),
	core.SessionEnded{}.EventName():        decoderOf[core.SessionEnded](),
	core.SessionsElsewhere{}.EventName():   decoderOf[core.SessionsElsewhere](),
	core.CallFinished{}.EventName():        decoderOf[core.CallFinished](),
	core.ConfirmationPending{}.EventName(): decoderOf[core.ConfirmationPending](),
	core.ConfirmationDecided{}.EventName(): decoderOf[core.ConfirmationDecided](),
	core.UpstreamChanged{}.EventName():     decoderOf[core.UpstreamChanged](),
	core.ToolsDropped{}.EventName():        decoderOf[core.ToolsDropped](),
	core.RefreshApplied{}.EventName():      decoderOf[core.RefreshApplied](),
	core.Warning{}.EventName():             decoderOf[core.Warning](),
	core.ToolReviewed{}.EventName():        decoderOf[core.ToolReviewed](),
	core.OperatorAction{}.EventName():      decoderOf[core.OperatorAction](),
	core.ConnectionChanged{}.EventName():   decoderOf[core.ConnectionChanged](),
}

// EncodeEvent is ev's wire form.
func EncodeEvent(ev core.Event) ([]byte, error) {
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", ev.Data.EventName(), err)
	}
	return json.Marshal(WireEvent{Seq: ev.Seq, Time: ev.Time, Type: ev.Data.EventName(), Data: data})
}

// DecodeEvent reads an event's wire form. An unknown type decodes to an
// UnknownEvent rather than failing, so an older console keeps working
// against a newer gateway.
func DecodeEvent(b []byte) (core.Event, error) {
	var w WireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return core.Event{}, fmt.Errorf("event: %w", err)
	}
	ev := core.Event{Seq: w.Seq, Time: w.Time}
	dec, ok := eventTypes[w.Type]
	if !ok {
		ev.Data = UnknownEvent{Type: w.Type, Data: w.Data}
		return ev, nil
	}
	d, err := dec(w.Data)
	if err != nil {
		return core.Event{}, fmt.Errorf("event %s: %w", w.Type, err)
	}
	ev.Data = d
	return ev, nil
}

// ErrorBody is every error answer's body.
type ErrorBody struct {
	Error *Error `json:"error"`
}

// Error is an admin API error: the HTTP status, a stable code and a message
// for a human. A client gets it back as an error that errors.Is matches
// against the sentinel its code stands for (core.ErrUnknownTool, …).
type Error struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// For CodeAlreadyDecided: the earlier decision.
	Decision  core.Decision `json:"decision,omitempty"`
	DecidedBy string        `json:"decidedBy,omitempty"`
	DecidedAt time.Time     `json:"decidedAt,omitzero"`
	// ID is the confirmation's, for CodeAlreadyDecided.
	ID string `json:"id,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Unwrap is the sentinel the code stands for, so errors.Is works across the
// API; nil for codes without one.
func (e *Error) Unwrap() error {
	if e.Code == CodeAlreadyDecided {
		return &confirm.DecidedError{ID: e.ID, Decision: e.Decision, By: e.DecidedBy, At: e.DecidedAt}
	}
	for _, c := range codes {
		if c.code == e.Code {
			return c.sentinel
		}
	}
	return nil
}

// Error codes.
const (
	CodeUnauthorized        = "unauthorized"         // 401: no key or a wrong one
	CodeBadRequest          = "bad_request"          // 400: malformed JSON, a bad parameter
	CodeTooLarge            = "too_large"            // 413
	CodeNotFound            = "not_found"            // 404: no such route
	CodeMethodNotAllowed    = "method_not_allowed"   // 405
	CodeUnknownTool         = "unknown_tool"         // 404
	CodeUnknownUpstream     = "unknown_upstream"     // 404
	CodeUnknownPrompt       = "unknown_prompt"       // 404: a review ref names no listed prompt
	CodeUnknownResource     = "unknown_resource"     // 404: a review ref names no listed resource
	CodeUnknownPlan         = "unknown_plan"         // 404: never made, applied, cancelled or expired
	CodeUnknownConfirmation = "unknown_confirmation" // 404
	CodeUnknownSession      = "unknown_session"      // 404
	CodeAlreadyDecided      = "already_decided"      // 409: see Error.DecidedBy/DecidedAt
	CodeNotReviewable       = "not_reviewable"       // 409: a native tool
	CodeShuttingDown        = "shutting_down"        // 503
	CodeTooManyStreams      = "too_many_streams"     // 503: every event stream slot is taken
	CodeInternal            = "internal"             // 500
)

// ErrUnauthorized is what a client's error unwraps to for CodeUnauthorized.
var ErrUnauthorized = errors.New("admin key missing or not accepted")

// ErrTooManyStreams is what a client's error unwraps to for
// CodeTooManyStreams: retry later.
var ErrTooManyStreams = errors.New("too many admin event streams")

var codes = []struct {
	sentinel error
	code     string
	status   int
}{
	{core.ErrUnknownTool, CodeUnknownTool, http.StatusNotFound},
	{core.ErrUnknownUpstream, CodeUnknownUpstream, http.StatusNotFound},
	{core.ErrUnknownPrompt, CodeUnknownPrompt, http.StatusNotFound},
	{core.ErrUnknownResource, CodeUnknownResource, http.StatusNotFound},
	{core.ErrUnknownPlan, CodeUnknownPlan, http.StatusNotFound},
	{confirm.ErrUnknownConfirmation, CodeUnknownConfirmation, http.StatusNotFound},
	{core.ErrUnknownSession, CodeUnknownSession, http.StatusNotFound},
	{review.ErrNotReviewable, CodeNotReviewable, http.StatusConflict},
	{confirm.ErrShuttingDown, CodeShuttingDown, http.StatusServiceUnavailable},
	{ErrUnauthorized, CodeUnauthorized, http.StatusUnauthorized},
	{ErrTooManyStreams, CodeTooManyStreams, http.StatusServiceUnavailable},
}

// ErrorFor is err as the API answers it: a known sentinel gets its code and
// status, anything else is CodeInternal with err's text.
func ErrorFor(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	var de *confirm.DecidedError
	if errors.As(err, &de) {
		return &Error{Status: http.StatusConflict, Code: CodeAlreadyDecided, Message: de.Error(),
			ID: de.ID, Decision: de.Decision, DecidedBy: de.By, DecidedAt: de.At}
	}
	for _, c := range codes {
		if errors.Is(err, c.sentinel) {
			return &Error{Status: c.status, Code: c.code, Message: err.Error()}
		}
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: err.Error()}
}
