package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/flows"
	"github.com/toolgate/toolgate/core/policy"
	ds "github.com/toolgate/toolgate/mcp/downstream"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
	"github.com/toolgate/toolgate/mcp/session"
	"github.com/toolgate/toolgate/telemetry"
)

// DefaultMaxRequestBytes is the request body limit when none is set (SV-8).
const DefaultMaxRequestBytes = 4 << 20

// SourceMetaKey carries an imported tool's upstream in its _meta (IM-16).
const SourceMetaKey = "dev.toolgate/source"

// EndpointOptions configures one served MCP endpoint (SV-1, SV-3).
type EndpointOptions struct {
	Path         string
	Name         string
	Version      string
	Instructions string
	// Tools is the endpoint's allow-list of registry names (globs); empty
	// allows all.
	Tools []string
	// Stateless serves without sessions (SV-2), for replicas behind a
	// load balancer.
	Stateless bool
	// MaxRequestBytes bounds a request body (SV-8); 0 is the default.
	MaxRequestBytes int64

	Registry *core.Registry
	// Gate serves action tools behind preview → confirm (CF-1); nil serves
	// no action tool at all.
	Gate *confirm.Gate
	// ElicitConfirm asks clients that declared elicitation to confirm an
	// action in the same call instead of a second one (CF-6).
	ElicitConfirm bool
	// Audit records every call (OP-6); nil records nothing.
	Audit core.Auditor
	// AuditKey keys the hash of audited arguments, so low-entropy values
	// cannot be recovered by guessing; nil hashes with plain SHA-256.
	AuditKey []byte
	// Catalog passes upstreams' resources and prompts on (IM-34); nil
	// serves none.
	Catalog Catalog
	// Sessions records live sessions for the console; nil records nothing.
	Sessions *core.Sessions
	// Hub carries upstreams' resource updates to subscribed sessions; nil
	// offers no subscriptions.
	Hub *Hub
	// SessionIdleTimeout ends a session after that long without a request
	// or an open stream (SV-2); 0 is DefaultSessionIdleTimeout, negative
	// never.
	SessionIdleTimeout time.Duration
	// SessionParkAfter lets go of an idle session's session object after
	// that long without a request or an open stream; its next request
	// makes it again from the sealed id (package session). 0 is
	// DefaultSessionParkAfter, negative never. Only with a SessionKey.
	SessionParkAfter time.Duration
	// Limits caps sessions in all and per actor (SV-2); endpoints of one
	// gateway share it. nil is a cap of this endpoint's own at the
	// defaults.
	Limits *session.Limits
	// MaxStreamsPerSession caps a session's open GET streams (SV-2); 0 is
	// DefaultMaxStreamsPerSession.
	MaxStreamsPerSession int
	// WriteTimeout bounds each write of a response (SV-9); event streams
	// move it on with every event and heartbeat. 0 is DefaultWriteTimeout,
	// negative none. The body-read deadline is WithDeadlines'.
	WriteTimeout time.Duration
	// Inspection is what calls may carry in and out (IN-1); nil inspects
	// nothing. SetRules replaces it.
	Inspection *Inspection
	// HeartbeatInterval is how often an event stream (GET streams, calls
	// answering as SSE) gets an SSE comment; 0 is
	// DefaultHeartbeatInterval, negative none.
	HeartbeatInterval time.Duration
	// ListTTL is the ttlMs of the lists a client of a revision without
	// sessions (2026-07-28) gets; they depend on the actor, so their
	// cacheScope is always private. 0: revalidate every time.
	ListTTL time.Duration
	// Actor returns the caller the authentication middleware derived for
	// this request (AU-3). Requests without one are refused.
	Actor func(ctx context.Context) (core.Actor, bool)
	// SessionStarted and SessionEnded, when set, are told of each session
	// with the context of the initialize that opened it (the gateway
	// remembers the credentials it was opened with, OP-8), and when it
	// ends, however it ends.
	SessionStarted func(ctx context.Context, id string)
	SessionEnded   func(id string)
	// SessionKey (16, 24 or 32 bytes) seals session ids so that any
	// endpoint holding the same key continues a session it did not open
	// (package session); nil mints plain random ids, known only here.
	SessionKey []byte
	// SessionTerminated, when set, is told of each session ended for good
	// — by DELETE or by an operator, during a shutdown too — but not of
	// those a shutdown leaves to other replicas to continue, nor of idle
	// expiries: idleness is this endpoint's own view, and another replica
	// may be serving it. It runs outside every lock of the endpoint.
	SessionTerminated func(id string)
	// Replica names this gateway process in the sessions it records.
	Replica string
	// Peers and ForwardKey let a request that belongs to another
	// replica's call or session reach it (forward.go); nil serves every
	// request here.
	Peers      Peers
	ForwardKey []byte
	Logger     *slog.Logger
	// Policy decides calls and hides tools by rules (PO-1, PO-2); nil
	// applies none. SetRules replaces it.
	Policy *policy.Policy
	// Limits are rates and quotas, shared by the gateway's endpoints
	// (PO-3); nil applies none. SetRules replaces them.
	CallLimits *policy.Limits
	// Discovery lists search_tools and call_tool instead of every tool
	// (DS-1, discovery.go); nil lists every tool.
	Discovery *Discovery
	// FlowLabels keeps the labels flows gathered where other replicas,
	// and this gateway after a restart, read them (IN-3, core/flows); nil
	// keeps them in memory only.
	FlowLabels core.FlowLabels
	// FlowGrew, when set, is told of each flow whose labels grew in
	// FlowLabels (by its digest), for the other replicas to read it
	// again (FlowChangedElsewhere).
	FlowGrew func(digest string)
}

// Endpoint serves the live registry as a Streamable HTTP MCP server. It is
// an http.Handler meant to sit behind the authentication middleware.
type Endpoint struct {
	opts   EndpointOptions
	levels logLevels
	asks   pendingRequests
	listed listedTools
	// router takes subscriptions and completions; nil when the catalog
	// cannot.
	router CatalogRouter
	mcp    *server.MCPServer
	// ids are the legacy sessions, their whole life (package session).
	ids *session.Table[*legacySession]
	// inflight cancels the calls a legacy session has running, by session
	// and request id.
	inflight ds.Cancels
	// streams are a stateless endpoint's GET streams' sessions by id
	// (concurrent GETs of an id share one).
	streams sync.Map
	sub     *core.BusSubscription
	synced  sync.WaitGroup
	// table names the tools served, as follow last set them; only follow
	// (and NewEndpoint before it) touches it.
	table map[string]struct{}
	// applied is the last bus event follow has applied: a request that must
	// see every committed change waits for it (SV-1).
	applied seqBarrier
	// shown is the catalog as last set; only follow touches it.
	shown shownCatalog
	// unsolicited rate-limits the log lines of responses to requests the
	// gateway never made.
	unsolicited unsolicited
	// running are the POSTs being served, for CutCalls (SV-9).
	running running
	// rules are the allow-list, policy, limits and inspection in force:
	// the options' until a reload swaps in another set (OP-8).
	rules atomic.Pointer[Rules]
	// stopSweep ends the idle-session sweeper; nil without one.
	stopSweep chan struct{}
	swept     sync.WaitGroup
	closeOnce sync.Once
	// macs keeps the audit's argument-hash HMACs (*auditMAC) under
	// opts.AuditKey.
	macs sync.Pool
	// flows are the labels sessions and sessionless clients gathered
	// (IN-3).
	flows flows.Set
	// states seals the requestState of confirmations asked as input
	// requests (CF-6, revision 2026-07-28).
	states *requestStates
	// fwd passes requests to other replicas; nil without Peers.
	fwd *forwarder
	// clients are the 2026-07-28 clients served, for the console (CO-5).
	clients *modernClients
	// infoMeta is the _meta naming this server that every 2026-07-28
	// result carries.
	infoMeta []byte
	// disco is the tool search (DS-1); nil without discovery.
	disco *discoverer
}

// NewEndpoint builds the endpoint and starts following the registry.
func NewEndpoint(opts EndpointOptions) (*Endpoint, error) {
	switch {
	case opts.Registry == nil:
		return nil, errors.New("endpoint: no registry")
	case opts.Actor == nil:
		return nil, errors.New("endpoint: no actor function")
	case opts.Path == "":
		return nil, errors.New("endpoint: no path")
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Name == "" {
		opts.Name = "toolgate"
	}
	if opts.SessionIdleTimeout == 0 {
		opts.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if opts.SessionParkAfter == 0 {
		opts.SessionParkAfter = DefaultSessionParkAfter
	}
	if opts.Limits == nil {
		opts.Limits = session.NewLimits(0, 0)
	}
	if opts.MaxStreamsPerSession <= 0 {
		opts.MaxStreamsPerSession = DefaultMaxStreamsPerSession
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	e := &Endpoint{opts: opts}
	sessions := session.Options{Path: opts.Path, IdleTimeout: opts.SessionIdleTimeout, ParkAfter: opts.SessionParkAfter}
	if len(opts.SessionKey) > 0 {
		seal, err := session.NewSeal(opts.SessionKey)
		if err != nil {
			return nil, fmt.Errorf("endpoint: session key: %w", err)
		}
		sessions.Seal = seal
	}
	if opts.Stateless {
		sessions.ParkAfter = 0
	}
	e.ids = session.New[*legacySession]((*sessionHost)(e), sessions)
	e.states = newRequestStates(opts.SessionKey)
	e.fwd = newForwarder(opts.Replica, opts.ForwardKey, opts.Peers)
	e.clients = newModernClients(opts)
	e.infoMeta = e.serverInfoMeta()
	e.rules.Store(&Rules{Tools: opts.Tools, Policy: opts.Policy, Limits: opts.CallLimits, Inspection: opts.Inspection})
	e.disco = newDiscoverer(opts.Discovery)

	hooks := &server.Hooks{}
	hooks.AddAfterSetLevel(func(ctx context.Context, _ any, req *mcpgo.SetLevelRequest, _ *mcpgo.EmptyResult) {
		if s := server.ClientSessionFromContext(ctx); s != nil {
			e.levels.set(s.SessionID(), req.Params.Level)
		}
	})
	serverOpts := []server.ServerOption{
		// tools/list and tools/call are the gateway's own (serve_tools.go):
		// mcp-go only says the endpoint has tools.
		server.WithToolCapabilities(true),
		server.WithHooks(hooks),
		// Upstreams' log messages are passed on, filtered by each
		// session's logging/setLevel.
		server.WithLogging(),
		// Every list is the actor's own (SV-4): never shared between
		// principals by a cache.
		server.WithCacheHints(opts.ListTTL.Milliseconds(), mcpgo.CacheScopePrivate),
	}
	if opts.Instructions != "" {
		serverOpts = append(serverOpts, server.WithInstructions(opts.Instructions))
	}
	if opts.Catalog != nil {
		e.router, _ = opts.Catalog.(CatalogRouter)
		routes := e.router != nil
		subscribe := routes && opts.Hub != nil && !opts.Stateless
		serverOpts = append(serverOpts, server.WithResourceCapabilities(subscribe, true), server.WithPromptCapabilities(true))
		if subscribe {
			hooks.AddBeforeSubscribe(e.subscribe)
			hooks.AddBeforeUnsubscribe(e.unsubscribe)
		}
		if routes {
			serverOpts = append(serverOpts, server.WithCompletions(),
				server.WithPromptCompletionProvider(completer{e}), server.WithResourceCompletionProvider(completer{e}))
		}
	}
	e.mcp = server.NewMCPServer(opts.Name, opts.Version, serverOpts...)
	if opts.Sessions != nil {
		// Stateless endpoints list 2026-07-28 clients, whose listen
		// streams an operator can end.
		opts.Sessions.SetEnder(opts.Path, e.EndSession)
	}

	// Room for a whole start-up burst of registrations without a resync.
	snap, sub := opts.Registry.Bus().Subscribe(4096)
	e.sub = sub
	e.resetTools(snap.Tools)
	e.flush(&burst{tools: true, catalog: true})
	e.applied.advance(snap.Seq)
	// What the first flush set is no change any session could have missed.
	e.ids.Tell(func(c *session.Changes) { *c = session.Changes{} })
	e.synced.Add(1)
	go e.follow()
	if !opts.Stateless && (opts.SessionIdleTimeout > 0 || e.ids.Parks()) {
		e.stopSweep = make(chan struct{})
		e.swept.Add(1)
		go e.sweep(e.stopSweep)
	}
	return e, nil
}

// follow keeps the served tools equal to the registry. Every event already
// queued is one burst: its changes are applied at once, and live sessions
// get one notifications/tools/list_changed for the whole burst, whatever it held — an import of a thousand tools, a refresh
// that changed one, a review decision (IM-25). It ends when the
// subscription is closed.
func (e *Endpoint) follow() {
	defer e.synced.Done()
	for ev := range e.sub.C() {
		var b burst
		last := ev.Seq
		e.take(&b, ev)
		for queued := true; queued; {
			select {
			case next, ok := <-e.sub.C():
				if !ok {
					queued = false
					break
				}
				last = next.Seq
				e.take(&b, next)
			default:
				queued = false
			}
		}
		e.flush(&b)
		e.applied.advance(max(last, b.resynced))
	}
	e.applied.stop()
}

// burst is what one run of queued events changed.
type burst struct {
	tools   bool // the served tools changed
	notify  bool // what actors may see changed without the tools (review)
	catalog bool // resources, templates or prompts may have changed
	// resynced is the sequence number of the snapshot a resync applied:
	// the events it stands for were dropped, never received.
	resynced uint64
}

func (e *Endpoint) take(b *burst, ev core.Event) {
	switch d := ev.Data.(type) {
	case core.ToolRegistered:
		b.mark(e.putTool(d.Tool))
	case core.ToolUpdated:
		if d.Old.Name != d.New.Name {
			b.mark(e.dropTool(d.Old.Name))
		}
		b.mark(e.putTool(d.New))
	case core.ToolUnregistered:
		b.mark(e.dropTool(d.Tool.Name))
	case core.ToolReviewed:
		if d.Kind != core.EntryTool {
			// A prompt's or resource's decision: the catalog's gate (RV-3).
			b.catalog = true
		} else {
			b.notify = true
		}
	case core.RefreshApplied:
		b.catalog = true
	case core.Resync:
		snap := e.sub.Resync()
		e.resetTools(snap.Tools)
		b.tools, b.catalog, b.resynced = true, true, snap.Seq
	}
}

// mark records that the served tools changed, if they did.
func (b *burst) mark(changed bool) {
	b.tools = b.tools || changed
}

func (e *Endpoint) flush(b *burst) {
	e.ids.Tell(func(c *session.Changes) {
		if b.tools && e.disco != nil {
			e.disco.changed() // DS-3
		}
		// The burst, whatever it held, is one notification to every
		// session (IM-25): a start-up of 2,000 tools in 20 bursts is 20,
		// not 2,000.
		if b.tools || b.notify {
			c.Tools++
			e.mcp.SendNotificationToAllClients(mcpgo.MethodNotificationToolsListChanged, nil)
		}
		if b.catalog {
			e.syncCatalog(c)
		}
	})
}

// putTool serves t (or stops serving it, if it is not to be served now)
// and reports whether the table changed.
func (e *Endpoint) putTool(t core.ToolInfo) bool {
	raw, ok := e.listingOf(t)
	if !ok {
		return e.dropTool(t.Name)
	}
	e.table[t.Name] = struct{}{}
	e.listed.set(t.Name, raw)
	return true
}

func (e *Endpoint) dropTool(name string) bool {
	if _, ok := e.table[name]; !ok {
		return false
	}
	delete(e.table, name)
	e.listed.remove(name)
	return true
}

// resetTools makes the table exactly tools. The listing is built aside and
// swapped in whole: a listing served meanwhile sees the old tools or the
// new, never a part.
func (e *Endpoint) resetTools(tools []core.ToolInfo) {
	e.table = make(map[string]struct{}, len(tools))
	listed := make(map[string][]byte, len(tools))
	for _, t := range tools {
		if raw, ok := e.listingOf(t); ok {
			e.table[t.Name] = struct{}{}
			listed[t.Name] = raw
		}
	}
	e.listed.replace(listed)
}

// served reports whether a tool is offered over MCP at all. Without a
// confirm gate, action tools are withheld: serving them ungated would let
// one model call cause a side effect with no human in the loop.
func (e *Endpoint) served(t core.ToolInfo) bool {
	return !t.Disabled && (t.Kind == core.KindRead || t.Kind == core.KindAction && e.opts.Gate != nil)
}

// listingOf is t as tools/list shows it, or false when it is not served.
func (e *Endpoint) listingOf(t core.ToolInfo) ([]byte, bool) {
	input, output, ok := e.advertisedSchemas(t)
	if !ok {
		return nil, false
	}
	raw, err := listingJSON(t, input, output)
	if err != nil {
		e.opts.Logger.Warn("tool not served", "tool", t.Name, "err", err)
		return nil, false
	}
	return raw, true
}

// advertisedSchemas are the schemas a served tool is listed with: the
// input schema verbatim (IM-17) with the object type MCP requires (IM-36),
// for an action tool plus the gate's two fields (CF-1); a read tool's
// output schema verbatim. An action's first call answers with the gate's
// preview, not the upstream's result: its outputSchema would not describe
// it, and clients that check structuredContent against it would fail.
func (e *Endpoint) advertisedSchemas(t core.ToolInfo) (input, output json.RawMessage, ok bool) {
	if !e.served(t) {
		return nil, nil, false
	}
	input, err := servedInputSchema(t.InputSchema)
	if err == nil && t.Kind == core.KindAction {
		input, err = confirm.AdvertisedSchema(input)
	}
	if err != nil {
		e.opts.Logger.Warn("tool not served", "tool", t.Name, "err", err)
		return nil, nil, false
	}
	if t.Kind == core.KindRead {
		output = t.OutputSchema
	}
	return input, output, true
}

// ServeHTTP enforces the body limit and the session's owner, then serves
// the request from the method table (methods.go): the body is read once,
// and every step dispatches on its envelope (SV-1).
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && mcpgo.IsModernProtocol(r.Header.Get(mcpgo.HeaderProtocolVersion)) {
		// No session, no GET stream, nothing to DELETE (SV-2).
		e.serveSessionlessMethod(w, r, "")
		return
	}
	body, ok := e.readBody(w, r)
	if !ok {
		return
	}
	p := &post{body: body, env: jsonrpc.Read(body)}
	var refused *modernError
	p.modern, p.isModern, refused = readModern(r, &p.env, body)
	if telemetry.DeferredFrom(r.Context()) != nil {
		// The request span waited for the body: the trace context may be
		// in a 2026-07-28 request's _meta (OP-9).
		var tp, ts string
		if p.modern != nil {
			tp, ts = p.modern.traceparent, p.modern.tracestate
		}
		r = r.WithContext(telemetry.Resume(r.Context(), tp, ts))
	}
	if refused != nil {
		writeModernError(w, p.modern.rawID, refused)
		return
	}
	if !p.isModern {
		// The 2026-07-28 revision has no sessions: its header is ignored.
		p.id = r.Header.Get(server.HeaderKeySessionID)
	}
	p.legacy = !e.opts.Stateless && !p.isModern
	if e.route(w, r, p) {
		return
	}
	if p.id != "" && p.legacy {
		done, ok := e.enterSession(w, r, p)
		if !ok {
			return
		}
		defer done()
	}
	switch {
	case r.Method != http.MethodPost && p.legacy:
		e.serveSessionMethod(w, r, p.id, &p.owed)
		return
	case r.Method != http.MethodPost:
		e.serveSessionlessMethod(w, r, p.id)
		return
	}
	if !e.acceptable(w, r, p) {
		return
	}
	switch p.env.Kind {
	case jsonrpc.Batch:
		e.serveBatch(w, r, body, p.id)
	case jsonrpc.Response:
		e.serveAnswer(w, r, p)
	default:
		e.serveMessage(w, r, p)
	}
}

// post is one request as ServeHTTP dispatches it, its body read once.
type post struct {
	body []byte
	env  jsonrpc.Envelope
	// modern is the 2026-07-28 request's own fields; isModern says the
	// request is of that revision.
	modern   *modernInbound
	isModern bool
	// id is the legacy session the request names ("" for none).
	id string
	// legacy: a request of the revisions with sessions on a stateful
	// endpoint, whose session transport is the endpoint's own (legacy.go).
	legacy bool
	// owed are the list changes a woken session missed while parked: told
	// on this request's answer ahead of it, or else queued for its stream.
	owed []string
	// forwarded: another replica passed the request on (forward.go).
	forwarded bool
}

// readBody reads a POST's body whole, at most one byte past the limit: a
// larger body is refused without being read whole (SV-8). false when the
// answer is written.
func (e *Endpoint) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Method != http.MethodPost {
		return nil, true
	}
	if r.ContentLength > e.opts.MaxRequestBytes {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, e.opts.MaxRequestBytes+1))
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			// Sent too slowly, or shorter than its Content-Length.
			w.Header().Set("Connection", "close")
			http.Error(w, "request body not received in time", http.StatusRequestTimeout)
			return nil, false
		}
		http.Error(w, "reading request body failed", http.StatusBadRequest)
		return nil, false
	}
	// The body is in: a read deadline passing during a long answer
	// would cancel it.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	if int64(len(body)) > e.opts.MaxRequestBytes {
		w.Header().Set("Connection", "close")
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// enterSession admits a request to the legacy session p.id: adopted if it
// was opened on another replica or before a restart (OP-5), owned by the
// request's actor, woken if parked. done runs when the request ends; false
// when the answer is written.
func (e *Endpoint) enterSession(w http.ResponseWriter, r *http.Request, p *post) (done func(), ok bool) {
	actor, _ := e.opts.Actor(r.Context())
	if e.ids.Resumable() && !e.ids.Lookup(p.id).Phase.Serves() && e.adopt(w, r, p.body, p.id, actor) {
		return nil, false
	}
	// A session belongs to the actor that opened it: another actor's
	// token cannot ride on it, and an unknown or ended id is 404.
	if v := e.ids.Lookup(p.id); !v.Phase.Serves() || !v.OwnedBy(actor.ID) {
		// Its client's DELETE of a session a shutdown or the idle sweep is
		// ending makes that end for good (OP-5).
		ending := v.Phase.State == session.TakenIdle || v.Phase.State == session.Ending
		if r.Method == http.MethodDelete && ending && v.OwnedBy(actor.ID) {
			if end, upgraded := e.ids.End(p.id, session.ByClient); end || upgraded {
				w.WriteHeader(http.StatusOK)
				return nil, false
			}
		}
		http.Error(w, "unknown session", http.StatusNotFound)
		return nil, false
	}
	if e.opts.Sessions != nil {
		e.opts.Sessions.Touch(p.id, false)
	}
	// A session is not idle while a request or stream of it is open.
	leave := e.ids.Enter(p.id)
	if e.ids.Lookup(p.id).Phase.State != session.Parked {
		return leave, true
	}
	owed, ok := e.wake(p.id)
	if !ok {
		http.Error(w, "unknown session", http.StatusNotFound)
		leave()
		return nil, false
	}
	p.owed = owed
	return func() { e.tellOwed(p.id, p.owed); leave() }, true
}

// acceptable checks what every POST must be, whoever answers it: JSON, and
// on a legacy session parseable and of a revision served. false when the
// answer is written.
func (e *Endpoint) acceptable(w http.ResponseWriter, r *http.Request, p *post) bool {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && !isJSONMediaType(ct) {
		http.Error(w, "Invalid content type: must be 'application/json'", http.StatusBadRequest)
		return false
	}
	if p.legacy && p.env.Kind == jsonrpc.Invalid && !json.Valid(p.body) {
		writeRPCError(w, http.StatusBadRequest, mcpgo.PARSE_ERROR, "request body is not valid json")
		return false
	}
	if p.legacy && !p.env.Is(mcpgo.MethodInitialize) && refuseVersion(w, r) {
		return false
	}
	return true
}

// serveAnswer takes a client's answer to a request made of it: the
// gateway's (an upstream's, relayed); without a legacy session, it answers
// nothing asked (serveSessionless). The session's owner was checked, so
// only the client a request went to can answer it.
func (e *Endpoint) serveAnswer(w http.ResponseWriter, r *http.Request, p *post) {
	if p.id != "" && e.asks.answer(p.id, p.env.RawID, p.body) {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if p.legacy {
		if e.answerElsewhere(r, p) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if !p.forwarded {
			// Passed to every replica, an answer is unsolicited at all but
			// one: the one it came to says so if none took it.
			e.unsolicited.note(e.opts.Logger, e.opts.Path, p.id, p.body)
		}
		http.Error(w, "no request of this id is waiting for an answer", http.StatusBadRequest)
		return
	}
	cs := newCallStream(w)
	e.serveSessionless(cs, r, p)
	cs.finish()
}

// serveMessage serves a request or notification from the method table:
// the gateway's own methods, initialize and the rest of a legacy session
// (legacy.go), or the rest without one (serveSessionless).
func (e *Endpoint) serveMessage(w http.ResponseWriter, r *http.Request, p *post) {
	// opens: an initialize, which opens a new session even when it carries
	// an id, held to the caps as any other.
	var slot *session.Slot
	m := methods[p.env.Method]
	opens := p.legacy && p.env.Kind == jsonrpc.Request && m.opens
	if opens {
		actor, _ := e.opts.Actor(r.Context())
		var err error
		if slot, err = e.opts.Limits.Acquire(actor.ID); err != nil {
			refuseSession(w, r, p.body, err)
			return
		}
		defer slot.RequestDone()
	}
	if p.legacy && !opens && p.id == "" && p.env.Kind != jsonrpc.Invalid {
		http.Error(w, noSessionText, http.StatusBadRequest)
		return
	}
	var s *legacySession
	if p.legacy && p.id != "" {
		s = e.ids.Lookup(p.id).Conn
	}
	if p.env.Kind == jsonrpc.Notification && s != nil {
		e.cancelFast(&p.env, p.id)
		e.serveLegacy(r.Context(), &callStream{w: w, hdr: http.Header{}}, s, p.body)
		return
	}
	cs := newCallStream(w)
	cs.dl = newDeadline(w, e.opts.WriteTimeout)
	defer heartbeat(e.opts.HeartbeatInterval, cs.ping)()
	if len(p.owed) > 0 && p.env.Kind == jsonrpc.Request && !opens {
		// A woken session is told of what it missed on this answer, ahead
		// of it. An initialize's answer is a new session's: what the
		// session it carried missed waits for that one's GET stream.
		for _, method := range p.owed {
			_ = cs.send(mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION, Notification: mcpgo.Notification{Method: method}})
		}
		p.owed = nil
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	defer e.running.add(&runningPost{cs: cs, body: p.body, cancel: cancel})()
	if p.modern != nil {
		if actor, ok := e.opts.Actor(r.Context()); ok {
			var listen context.CancelCauseFunc
			if p.modern.method == string(mcpgo.MethodSubscriptionsListen) {
				listen = cancel
			}
			defer e.clients.request(actor, p.modern, listen)()
		}
	}
	r = r.WithContext(context.WithValue(ctx, callStreamKey{}, cs))
	if in, ok := e.readInbound(r, &p.env, p.modern, p.id, cancel); ok {
		m.own(e, r.Context(), cs, in)
		cs.finish()
		return
	}
	switch {
	case opens:
		actor, _ := e.opts.Actor(r.Context())
		e.serveInitialize(r.Context(), cs, p.body, actor, slot)
	case p.legacy:
		// ping, logging, resources, prompts, completions, and the
		// errors of what no method serves.
		e.serveLegacy(r.Context(), cs, s, p.body)
	default:
		// A stateless endpoint's, or a 2026-07-28 client's.
		if p.env.Kind == jsonrpc.Notification {
			e.cancelModern(r, &p.env)
		}
		e.serveSessionless(cs, r, p)
	}
	cs.finish()
}

// serveSessionMethod answers a GET or DELETE (or any method but POST) of a
// legacy request on a stateful endpoint: the session's GET stream, or its
// end. The session's owner was checked, and a parked session woken; owed
// are what it missed, queued for its stream before the stream opens.
func (e *Endpoint) serveSessionMethod(w http.ResponseWriter, r *http.Request, id string, owed *[]string) {
	switch r.Method {
	case http.MethodGet, http.MethodDelete:
	case http.MethodHead:
		w.WriteHeader(http.StatusOK)
		return
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if refuseVersion(w, r) {
		return
	}
	if id == "" {
		http.Error(w, noSessionText, http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodDelete {
		*owed = nil
		e.ids.End(id, session.ByClient)
		w.WriteHeader(http.StatusOK)
		return
	}
	e.tellOwed(id, *owed)
	*owed = nil
	s := e.ids.Lookup(id).Conn
	if s == nil {
		// Ended by a request racing this one.
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	// Counted under the cap of GET streams per session (SV-2).
	leave, ok := e.ids.Listen(id, e.opts.MaxStreamsPerSession)
	if !ok {
		tooManyStreams(w, e.opts.MaxStreamsPerSession)
		return
	}
	defer leave()
	e.serveStream(w, r, s)
}

// tooManyStreams refuses a GET stream over the session's cap (SV-2).
func tooManyStreams(w http.ResponseWriter, max int) {
	http.Error(w, fmt.Sprintf("too many GET streams on this session: at most %d may be open at once (gateway.maxStreamsPerSession); close one first", max), http.StatusTooManyRequests)
}

// ToolsChanged tells every live session that its tool list may have
// changed without the registry changing: the allow-list, or the roles and
// review rules that decide what an actor sees (OP-8).
func (e *Endpoint) ToolsChanged() {
	e.ids.Tell(func(c *session.Changes) {
		c.Tools++
		e.mcp.SendNotificationToAllClients(mcpgo.MethodNotificationToolsListChanged, nil)
		// Review gates prompts and resources too: a mode change may show
		// or withhold some.
		e.syncCatalog(c)
	})
}

// EndSession ends a session from the gateway side, exactly as the client's
// DELETE would; its next request gets 404. A session whose end is under
// way but not for good (a shutdown, the idle sweep) is ended for good.
func (e *Endpoint) EndSession(id string) error {
	if known, err := e.clients.end(id); known {
		return err
	}
	if end, upgraded := e.ids.End(id, session.ByClient); !end && !upgraded {
		return fmt.Errorf("%w: %q", core.ErrUnknownSession, id)
	}
	return nil
}

// EndedElsewhere is told that another replica ended session id: it is not
// adopted here, and ended if it was (OP-5).
func (e *Endpoint) EndedElsewhere(id string) { e.ids.EndedElsewhere(id) }

// Close stops the sweeper and following the registry, and ends every
// session (SV-9).
func (e *Endpoint) Close(ctx context.Context) error {
	e.closeOnce.Do(func() {
		if e.stopSweep != nil {
			close(e.stopSweep)
		}
	})
	e.swept.Wait()
	e.clients.close()
	e.states.closeRelays()
	e.fwd.close()
	// From here on no session opens, and every one that did ends, not
	// for good: another replica, or this gateway restarted, may continue
	// it.
	e.ids.Close()
	if e.opts.Hub != nil {
		e.opts.Hub.detach(e)
	}
	e.sub.Close()
	e.synced.Wait()
	e.streams.Range(func(_, s any) bool {
		s.(*legacySession).close()
		e.streamGone(s.(*legacySession))
		return true
	})
	return nil
}

// randomIDPair is a call's id and its idempotency key, 32 hex digits each,
// from one read of the random source. The call id starts with the time in
// nanoseconds, big-endian, and ends with 64 random bits: ids made one after
// the other sort together, so the audit's index on call ids grows at its
// end instead of taking a page of its own for each record (the store's
// writer spends half its time per record on that index otherwise). The
// idempotency key, which an upstream may trust to tell calls apart, stays
// all random.
func randomIDPair() (string, string) {
	var b [32]byte
	_, _ = rand.Read(b[8:])
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixNano()))
	h := hex.EncodeToString(b[:])
	return h[:32], h[32:]
}

// isJSONMediaType reports whether ct names application/json, parameters
// allowed; the plain header, the common one, is matched before the parse.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
