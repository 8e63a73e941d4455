// Package gateway assembles a toolgate gateway from its configuration: the
// store, review, registry, importer, confirm gate, approval queue, sessions
// and the MCP endpoints behind their authentication. It owns the lifecycle
// (New → Start → Close) so that the command line, the console, the bench and
// the tests all run the same assemblies: New (serving), NewHandler (serving
// on the caller's server) and NewImporter (review, registry and importer
// only), built from the same parts.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditchain"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/core/review"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/telemetry"
)

// Options adjust what New and NewHandler build. nil means defaults: a
// serving gateway over the store cfg.Gateway.Store names.
type Options struct {
	// Logger receives the gateway's logs; nil discards them.
	Logger *slog.Logger
	// Store is used instead of opening cfg.Gateway.Store. The caller keeps
	// it: Close does not close a store it was given.
	Store core.Store
	// Demo and Notice are shown by the console (OP-4).
	Demo   bool
	Notice string
	// Operator is who the in-process console's actions are accounted to
	// (CO-9); empty: the name its caller passes as `by`, else "console".
	Operator string
	// Admin tunes the admin API's server (gateway.admin).
	Admin AdminOptions
}

// Gateway is one assembled gateway. Its accessors are safe to call from any
// goroutine once New has returned.
type Gateway struct {
	cfg       *config.Config
	log       *slog.Logger
	opts      Options
	store     core.Store
	ownStore  bool
	export    *auditchain.Exporter // audit.export; nil: none
	reg       *core.Registry
	importer  *upstreams.Importer
	review    *review.Reviewer
	sessions  *core.Sessions
	gate      *confirm.Gate // nil: no confirm secret, action tools are not served
	approvals *confirm.ApprovalQueue
	hub       *serve.Hub
	oauth     *oauthState // nil: no upstream has oauth (UI-1)
	metrics   *metrics.Metrics
	ops       *opsLog // nil without a logger
	handler   http.Handler
	endpoints []*serve.Endpoint
	ln        net.Listener
	srv       *http.Server
	served    chan error // Serve's result, should it stop by itself
	admin     *adminAPI  // nil without gateway.admin
	shared    *shared    // nil unless the store is shared (OP-5)
	// replica names this gateway among those sharing a store; sessionShare
	// lists their sessions (nil unless the store can, CO-5).
	replica      string
	sessionShare *sessionShare
	// sessionEnds are the endpoints told of sessions other replicas ended,
	// once built: the shared events start arriving before they are.
	sessionEnds atomic.Pointer[[]*serve.Endpoint]
	ready       atomic.Bool
	// life bounds what lives as long as the gateway rather than as long as
	// New's context: the OAuth strategies' key-set refresh. Close ends it.
	life    context.Context
	endLife context.CancelFunc

	// creds, switches, operators, reloadMu, cfgMu and reloader are config
	// reload's (OP-8, reload.go).
	creds     *credentials
	switches  map[string]*endpointSwitch // by endpoint path; fixed after New
	operators atomic.Pointer[map[string]bool]
	reloadMu  sync.Mutex
	reloads   reloads
	cfgMu     sync.Mutex // guards cfg, which a reload replaces

	// lifeMu orders Start against Close: closing is set by Close, and
	// Start serves nothing once it is.
	lifeMu  sync.Mutex
	closing bool

	// traces is the tracer provider; nil: tracing off (OP-9).
	traces *telemetry.Provider

	// callLimits are the rates and quotas in force: their quota leases
	// are returned to the store when a reload replaces them and when the
	// gateway closes (PO-3).
	callLimits atomic.Pointer[policy.Limits]

	endpointsClosed sync.Once
	closeOnce       sync.Once
	closeErr        error
}

// New builds the serving gateway cfg describes and binds its listener and
// admin API, so a taken port fails here with the address. Nothing
// connects to an upstream yet. On error everything built so far is
// released.
func New(ctx context.Context, cfg *config.Config, opts *Options) (*Gateway, error) {
	return assemble(ctx, cfg, opts, assembly{
		open: (*Gateway).openStore, background: true,
		steps: []func(*Gateway, context.Context) error{(*Gateway).buildServing, (*Gateway).bind},
	})
}

// NewHandler builds the serving gateway cfg describes, as New does, but
// binds nothing: no listener and no admin API. Handler serves its
// endpoints on a server of the caller's (tests mount it on their own).
func NewHandler(ctx context.Context, cfg *config.Config, opts *Options) (*Gateway, error) {
	return assemble(ctx, cfg, opts, assembly{
		open: (*Gateway).openStore, background: true,
		steps: []func(*Gateway, context.Context) error{(*Gateway).buildServing},
	})
}

// assembly is what one constructor builds beyond the parts every gateway
// has (its life, review, registry, importer and operator log).
type assembly struct {
	// open sets the gateway's store.
	open func(*Gateway, context.Context) error
	// background: the importer retries and refreshes behind the first
	// import. Only a gateway that serves needs it: a one-shot command
	// reports what one import found, and retrying behind it would only
	// change the answer while it is being printed.
	background bool
	// steps build the rest, in order.
	steps []func(*Gateway, context.Context) error
}

// assemble builds the parts every gateway has, then runs a's steps. On
// error everything built so far is released.
func assemble(ctx context.Context, cfg *config.Config, opts *Options, a assembly) (res *Gateway, err error) {
	g := &Gateway{cfg: cfg, served: make(chan error, 1), creds: newCredentials()}
	g.setOperators(cfg)
	if opts != nil {
		g.opts = *opts
	}
	g.log = g.opts.Logger
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	// While New runs, ctx also bounds the issuers' discovery and first
	// key-set fetch; after it, only Close ends the gateway's life.
	g.life, g.endLife = context.WithCancel(context.WithoutCancel(ctx))
	unbind := context.AfterFunc(ctx, g.endLife)
	defer func() {
		if !unbind() && err == nil {
			err = fmt.Errorf("building the gateway: %w", context.Cause(ctx))
		}
		if err != nil {
			_ = g.Close(context.Background())
			res = nil
		}
	}()
	if err = a.open(g, ctx); err != nil {
		return nil, fmt.Errorf("opening the store: %w", err)
	}
	if err = g.buildRegistry(ctx, a.background); err != nil {
		return nil, fmt.Errorf("building the gateway: %w", err)
	}
	if g.opts.Logger != nil {
		// Drops, collisions and refresh diffs, for whoever reads the log
		// rather than the console (OP-7).
		g.ops = startOpsLog(g.log, g.reg.Bus(), opsLogBuffer)
	}
	for _, step := range a.steps {
		if err = step(g, ctx); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// openStore is the serving gateway's store: the one Options gave, or
// cfg.Gateway.Store's, created if missing.
func (g *Gateway) openStore(ctx context.Context) (err error) {
	if g.opts.Store != nil {
		g.store = g.opts.Store
		return nil
	}
	if g.store, err = OpenStore(ctx, g.cfg.Gateway.Store); err != nil {
		return err
	}
	g.ownStore = true
	return nil
}

// buildServing builds what serves: audit, sessions, the confirm gate and
// approval queue, replica sharing, metrics, tracing and the endpoints
// behind their authentication.
func (g *Gateway) buildServing(ctx context.Context) (err error) {
	if err = g.startAudit(); err != nil {
		return err
	}
	bus := g.reg.Bus()
	g.sessions = core.NewSessions(bus)
	g.replica = replicaName()
	g.startSessionShare()
	g.approvals = confirm.NewApprovalQueue(bus)
	if g.gate, err = newGate(ctx, g.cfg, g.store, g.approvals, g.needsOperator); err != nil {
		return fmt.Errorf("confirm gate: %w", err)
	}
	g.startShared(ctx)
	g.startMetrics()
	if err = g.startTracing(ctx, g.cfg); err != nil {
		return err
	}
	if err = g.buildHandler(g.life); err != nil {
		return fmt.Errorf("building endpoints: %w", err)
	}
	return nil
}

// bind binds the endpoints' listener and the admin API's.
func (g *Gateway) bind(context.Context) (err error) {
	if g.ln, err = net.Listen("tcp", g.cfg.Gateway.Listen); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	g.advertise()
	return g.bindAdmin()
}

// buildRegistry builds review, registry and importer.
// background: see assembly.
func (g *Gateway) buildRegistry(ctx context.Context, background bool) error {
	bus := core.NewBus()
	rev, err := review.NewReviewer(ctx, core.ReviewMode(g.cfg.Gateway.Review.Mode), g.store, bus)
	if err != nil {
		return err
	}
	// SV-4: review state is the last filter of what an actor sees (RV-3).
	g.reg = core.NewRegistry(&core.RegistryOptions{Bus: bus, CanUse: rev.CanUse, Fingerprint: review.FingerprintOf})
	bus.AddSnapshotPart(func(s *core.Snapshot) { s.Reviews = rev.States(s.Tools) })
	g.review = rev
	g.hub = serve.NewHub()
	specs := make([]upstreams.UpstreamSpec, 0, len(g.cfg.Upstreams))
	for _, u := range g.cfg.Upstreams {
		s, err := g.specOf(u, g.hub)
		if err != nil {
			return err
		}
		specs = append(specs, s)
	}
	g.importer = upstreams.NewImporter(g.reg, specs, &upstreams.ImporterOptions{ReviewState: rev.State, NoBackground: !background})
	return nil
}

// Start serves the endpoints on the bound listener and imports every
// upstream (IM-7, IM-8); it returns when the first import is done, with its
// error. /readyz turns ready after a successful import. The console calls
// Start in the background to show the upstreams connecting.
func (g *Gateway) Start(ctx context.Context) error {
	// Start and Close may run at once (the console starts in the
	// background): once Close began, nothing is started.
	g.lifeMu.Lock()
	if g.closing {
		g.lifeMu.Unlock()
		return ErrClosing
	}
	g.startServing()
	g.lifeMu.Unlock()
	if err := g.importer.Start(ctx); err != nil {
		return err
	}
	g.ready.Store(true)
	return nil
}

// startServing serves the endpoints and the admin API on their bound
// listeners, once. lifeMu must be held.
func (g *Gateway) startServing() {
	if g.ln != nil && g.srv == nil {
		g.srv = &http.Server{Handler: g.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: g.Config().Gateway.IdleTimeout}
		// Ending sessions first lets their event streams close, so Shutdown
		// waits only for calls in flight.
		g.srv.RegisterOnShutdown(g.closeEndpoints)
		srv, ln := g.srv, g.ln
		go func() { g.served <- srv.Serve(ln) }()
		g.log.Info("serving", "listen", g.Addr(), "endpoints", len(g.Config().Endpoints))
	}
	g.serveAdmin()
}

// cutGrace is how long calls cut at the shutdown deadline have to return
// their error answers before their connections are closed.
const cutGrace = time.Second

// PendingApprovals is how many confirmations wait for an operator: what
// Close rejects.
func (g *Gateway) PendingApprovals() int {
	if g.approvals == nil {
		return 0
	}
	return len(g.approvals.Pending())
}

// ErrClosing is Start's answer once Close has begun.
var ErrClosing = errors.New("the gateway is closing")

// ErrCloseStuck is Close's answer when a part did not stop within
// CloseOverrun of ctx's deadline.
var ErrCloseStuck = errors.New("shutdown deadline passed")

// CloseOverrun is how long, after the deadline of the context given to
// Close, the rest of closing (sessions, upstream processes, the store) may
// take before Close gives up on it and returns ErrCloseStuck naming the part
// that did not stop. The caller then exits anyway; upstream process groups
// are stopped by their supervisors when the gateway's process ends (IM-10).
const CloseOverrun = 10 * time.Second

// Close rejects pending operator approvals at once, then shuts the
// endpoints down gracefully within ctx (SV-9); a call still running at the
// deadline gets a JSON-RPC error, then every
// upstream connection and child process (IM-10), then the operator log
// (once it has logged every event before), then the store if the gateway
// opened it. The error says in-flight calls had to be cut, or that a part
// did not stop within CloseOverrun of ctx's deadline (ErrCloseStuck). Close
// is safe after a partial New, beside a Start, and more than once.
func (g *Gateway) Close(ctx context.Context) error {
	g.closeOnce.Do(func() {
		g.lifeMu.Lock()
		g.closing = true
		g.lifeMu.Unlock()
		g.closeErr = closeWithin(ctx, CloseOverrun, g.log, func(enter func(string)) error { return g.close(ctx, enter) })
	})
	return g.closeErr
}

// closeWithin runs work, which names each step as it enters it, and
// returns its error — or, when work is still running overrun after ctx's
// deadline, ErrCloseStuck naming the step it is in, logged at ERROR. Work
// then goes on in the background; the caller is expected to exit. Without
// a deadline on ctx it waits for work.
func closeWithin(ctx context.Context, overrun time.Duration, log *slog.Logger, work func(enter func(step string)) error) error {
	var mu sync.Mutex
	step := ""
	enter := func(name string) {
		mu.Lock()
		step = name
		mu.Unlock()
	}
	done := make(chan error, 1)
	go func() { done <- work(enter) }()
	var late <-chan time.Time
	if deadline, ok := ctx.Deadline(); ok {
		t := time.NewTimer(time.Until(deadline) + overrun)
		defer t.Stop()
		late = t.C
	}
	select {
	case err := <-done:
		return err
	case <-late:
		mu.Lock()
		stuck := step
		mu.Unlock()
		log.Error("shutdown deadline passed; exiting without waiting for what did not stop", "stopping", stuck, "overrun", overrun.String())
		return fmt.Errorf("%w: %s did not stop", ErrCloseStuck, stuck)
	}
}

// close is Close's work, step by step.
func (g *Gateway) close(ctx context.Context, enter func(step string)) (err error) {
	// No reload may start on parts being closed (OP-8).
	enter("config reload")
	g.stopReloads()
	// No operator will decide once the gateway is gone: the callers are
	// told now rather than at their own timeout (SV-9).
	if g.approvals != nil {
		if n := g.approvals.Shutdown(); n > 0 {
			g.log.Info("pending approvals rejected: the gateway is shutting down", "count", n)
		}
	}
	// Nor will a person finish signing in to an upstream through this
	// gateway: the calls waiting for that answer the link now (UI-2).
	g.endConnectWaits()
	enter("admin API")
	g.closeAdmin(ctx)
	enter("calls in flight")
	switch {
	case g.srv != nil:
		if serr := g.srv.Shutdown(ctx); serr != nil {
			cut := 0
			for _, ep := range g.endpoints {
				cut += ep.CutCalls()
			}
			g.log.Error("calls still in flight at the deadline were cut", "calls", cut, "err", serr)
			// The cut calls' handlers return once their contexts end; a
			// moment more lets their error answers reach the clients.
			grace, cancel := context.WithTimeout(context.Background(), cutGrace)
			_ = g.srv.Shutdown(grace)
			cancel()
			_ = g.srv.Close()
			err = serr
		}
	case g.ln != nil:
		_ = g.ln.Close()
	}
	// Shutdown runs its OnShutdown hook in a goroutine of its own and
	// does not wait for it; this waits for it, or does its work.
	enter("sessions")
	g.closeEndpoints()
	if g.endLife != nil {
		g.endLife()
	}
	// The endpoints are closed: no session of this replica is left.
	// No call is left to run on a quota lease: the store gets back what
	// this replica leased and did not use, for the others.
	enter("quota leases")
	g.returnLeases(g.callLimits.Swap(nil))
	enter("shared sessions")
	g.stopSessionShare()
	// Before the importer closes: a replica's refresh may be running.
	enter("replica events")
	g.stopShared()
	enter("upstreams")
	if g.importer != nil {
		if cerr := g.importer.Close(); cerr != nil {
			g.log.Warn("closing upstreams", "err", cerr)
		}
	}
	g.closeOAuth()
	enter("operator log")
	if g.ops != nil {
		g.ops.close() // after the importer: its last events are logged
	}
	enter("metrics")
	g.stopMetrics()
	enter("store")
	if g.ownStore && g.store != nil {
		_ = g.store.Close()
	}
	g.closeAudit() // after the store: its Close commits the last records
	enter("traces")
	g.stopTracing() // last: the audit writes' spans end above
	enter("")
	return err
}

// closeEndpoints ends every endpoint's sessions, once; a second caller
// waits until the first is done.
func (g *Gateway) closeEndpoints() {
	g.endpointsClosed.Do(func() {
		for _, ep := range g.endpoints {
			_ = ep.Close(context.Background())
		}
	})
}

// Handler serves every endpoint, the OAuth metadata, /healthz and /readyz.
func (g *Gateway) Handler() http.Handler { return g.handler }

// Addr is the address the listener is bound to ("" without one).
func (g *Gateway) Addr() string {
	if g.ln == nil {
		return ""
	}
	return g.ln.Addr().String()
}

// Served delivers the HTTP server's error should it stop by itself.
func (g *Gateway) Served() <-chan error { return g.served }

// Ready reports whether the first import finished.
func (g *Gateway) Ready() bool { return g.ready.Load() }

// Registry, Importer, Reviewer, Sessions and Store are the gateway's parts,
// for the command line's reports and for tests.
func (g *Gateway) Registry() *core.Registry          { return g.reg }
func (g *Gateway) Importer() *upstreams.Importer     { return g.importer }
func (g *Gateway) Reviewer() *review.Reviewer        { return g.review }
func (g *Gateway) Sessions() *core.Sessions          { return g.sessions }
func (g *Gateway) Store() core.Store                 { return g.store }
func (g *Gateway) Approvals() *confirm.ApprovalQueue { return g.approvals }

// Console is the operator's view of this gateway (CO-1..9); its actions
// are accounted to Options.Operator (see ConsoleAs).
func (g *Gateway) Console() core.Console {
	return &accountedConsole{g: g, local: g.localConsole(), operator: g.opts.Operator}
}

func (g *Gateway) localConsole() *LocalConsole {
	cfg := g.Config()
	info := core.ConsoleInfo{Demo: g.opts.Demo, Notice: g.opts.Notice, ReviewMode: core.ReviewMode(cfg.Gateway.Review.Mode)}
	for _, u := range cfg.OAuthUpstreams() {
		if info.OAuth == nil {
			info.OAuth = map[string]string{}
		}
		info.OAuth[u.Name] = u.OAuth.Credentials
	}
	if addr := g.Addr(); addr != "" {
		for _, e := range cfg.Endpoints {
			u := "http://" + addr + e.Path
			info.Endpoints = append(info.Endpoints, u)
			if e.Open() {
				info.OpenEndpoints = append(info.OpenEndpoints, u)
			}
		}
	}
	c := &LocalConsole{
		Registry: g.reg, Importer: g.importer, Reviewer: g.review,
		Approvals: g.approvals, Sessions: g.sessions, Details: info,
		Policy: gatewayPolicy{g},
	}
	if g.sessionShare != nil {
		c.EndElsewhere = g.sessionShare.endElsewhere
	}
	c.Shared, _ = g.store.(core.Broadcaster)
	if m := g.UpstreamOAuth(); m != nil {
		c.OAuth = m
	}
	if cs, ok := g.store.(auditchain.Store); ok {
		key := AuditKey(g.cfg) // the key the chain's writer signs with
		c.Audit = func(ctx context.Context, callID string) ([]core.AuditCheck, error) {
			return auditchain.CheckCall(ctx, cs, callID, key)
		}
	}
	return c
}
