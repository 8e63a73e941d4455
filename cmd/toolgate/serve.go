package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp"
)

// shutdownGrace bounds how long in-flight calls may finish after SIGTERM
// (SV-9).
const shutdownGrace = 10 * time.Second

func runServe(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("serve")
	path := fs.String("config", "", "config file (default ./toolgate.yaml, then the user config dir)")
	listen := fs.String("listen", "", "listen address (overrides gateway.listen)")
	insecureOpen := fs.Bool("insecure-open", false, "allow open-mode endpoints on a non-loopback address (AU-7)")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	log := slog.New(slog.NewJSONHandler(c.stderr, nil))
	cfg, ok := c.loadConfig("serve", *path)
	if !ok {
		return 1
	}
	if *listen != "" {
		cfg.Gateway.Listen = *listen
	}
	if open := cfg.OpenEndpoints(); len(open) > 0 && !config.IsLoopbackHost(hostOf(cfg.Gateway.Listen)) && !*insecureOpen {
		log.Error("refusing open-mode endpoints on a non-loopback address; pass --insecure-open to force", "endpoints", open, "listen", cfg.Gateway.Listen)
		return 1
	}
	l, err := startLive(ctx, cfg, log)
	if err != nil {
		log.Error("start-up failed", "err", err)
		return 1
	}
	if ups := operatorUpstreams(cfg); len(ups) > 0 {
		// Headless, nobody can approve: such calls wait and time out.
		log.Warn("approval: operator needs the console; without it these confirmations time out", "upstreams", ups)
	}
	if err := l.importAll(ctx); err != nil {
		log.Error("start-up failed", "err", err)
		_ = l.stop()
		return 1
	}
	for _, st := range l.g.importer.Statuses() {
		if st.State != core.StateConnected {
			log.Warn("upstream unavailable", "upstream", st.Name, "state", st.State, "err", st.LastError)
		}
	}
	log.Info("ready", "tools", len(l.g.reg.Names(""))+countImported(l.g))

	select {
	case <-ctx.Done():
	case err := <-l.served:
		log.Error("server stopped", "err", err)
		_ = l.stop()
		return 1
	}
	log.Info("shutting down")
	if err := l.stop(); err != nil {
		return 1
	}
	log.Info("stopped")
	return 0
}

// live is a running gateway: store, registry, importer, gate and the HTTP
// endpoints listening. serve and the console both run one.
type live struct {
	g      *gateway
	store  core.Store
	srv    *http.Server
	addr   string     // the address actually listened on
	served chan error // Serve's result, should it stop by itself
	log    *slog.Logger
}

// startLive opens the store, builds the gateway and starts serving its
// endpoints. Upstreams are not imported yet: importAll does that, so the
// console can show them connecting.
func startLive(ctx context.Context, cfg *config.Config, log *slog.Logger) (_ *live, err error) {
	store, err := openStore(ctx, cfg.Gateway.Store)
	if err != nil {
		return nil, fmt.Errorf("opening the store: %w", err)
	}
	l := &live{store: store, log: log, served: make(chan error, 1)}
	defer func() {
		if err != nil {
			_ = l.stop()
		}
	}()
	if l.g, err = newGateway(ctx, cfg, store); err != nil {
		return nil, fmt.Errorf("building the gateway: %w", err)
	}
	g := l.g
	g.store = store
	g.sessions = core.NewSessions(g.reg.Bus())
	g.approvals = core.NewApprovalQueue(g.reg.Bus())
	if g.gate, err = newGate(cfg, store, g.approvals); err != nil {
		return nil, fmt.Errorf("confirm gate: %w", err)
	}
	h, closeEndpoints, err := g.handler(ctx, cfg, log)
	if err != nil {
		return nil, fmt.Errorf("building endpoints: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Gateway.Listen)
	if err != nil {
		closeEndpoints()
		return nil, fmt.Errorf("listen: %w", err)
	}
	l.addr = ln.Addr().String()
	l.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	// Ending sessions first lets their event streams close, so Shutdown
	// waits only for calls in flight.
	l.srv.RegisterOnShutdown(closeEndpoints)
	go func() { l.served <- l.srv.Serve(ln) }()
	log.Info("serving", "listen", l.addr, "endpoints", len(cfg.Endpoints))
	return l, nil
}

// importAll imports every upstream (IM-7, IM-8); /readyz turns ready after.
func (l *live) importAll(ctx context.Context) error {
	err := l.g.start(ctx)
	if err == nil {
		l.g.ready.Store(true)
	}
	return err
}

// stop shuts the endpoints down gracefully (SV-9), then the upstreams and
// the store. The error says in-flight calls had to be cut.
func (l *live) stop() error {
	var err error
	if l.srv != nil {
		err = shutdown(l.srv, l.log)
	}
	if l.g != nil {
		if cerr := l.g.close(); cerr != nil {
			l.log.Warn("closing upstreams", "err", cerr)
		}
	}
	if l.store != nil {
		_ = l.store.Close()
	}
	return err
}

// console is the Console of this gateway.
func (l *live) console(info core.ConsoleInfo) core.Console {
	return &core.LocalConsole{
		Registry: l.g.reg, Importer: l.g.importer, Reviewer: l.g.review,
		Approvals: l.g.approvals, Sessions: l.g.sessions, Details: info,
	}
}

func countImported(g *gateway) int { return len(g.importer.ImportedTools()) }

func shutdown(srv *http.Server, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Error("calls still in flight at the deadline were cut", "err", err)
		_ = srv.Close()
		return err
	}
	return nil
}

func hostOf(listen string) string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	return host
}

// handler mounts every endpoint behind its authentication, the RFC 9728
// metadata where OAuth is configured, /healthz and /readyz.
func (g *gateway) handler(ctx context.Context, cfg *config.Config, log *slog.Logger) (http.Handler, func(), error) {
	mux := http.NewServeMux()
	var endpoints []*mcp.Endpoint
	closeAll := func() {
		for _, ep := range endpoints {
			_ = ep.Close(context.Background())
		}
	}
	for i, e := range cfg.Endpoints {
		epAuth, err := endpointAuth(ctx, cfg, e, log)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("endpoints[%d] %s: %w", i, e.Path, err)
		}
		ep, err := mcp.NewEndpoint(mcp.EndpointOptions{
			Path: e.Path, Name: e.Name, Version: e.Version, Instructions: e.Instructions, Tools: e.Tools,
			Stateless: cfg.Gateway.Stateless, MaxRequestBytes: cfg.Gateway.MaxRequestBytes,
			Registry: g.reg, Gate: g.gate, Sessions: g.sessions, Actor: auth.ActorFrom, Logger: log,
			Catalog: g.importer, Audit: g.store, AuditKey: auditKey(cfg), ElicitConfirm: true, Hub: g.hub,
		})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		endpoints = append(endpoints, ep)
		mux.Handle(e.Path, auth.Middleware(epAuth)(ep))
		if mh := auth.MetadataHandler(epAuth); mh != nil {
			mux.Handle(auth.MetadataPath(e.Path), mh)
		}
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		// Ready once the first import finished and every required upstream
		// is connected: before that a listed tool may not be callable yet.
		type upstreamState struct {
			Name  string `json:"name"`
			State string `json:"state"`
		}
		waiting := []upstreamState{}
		for _, st := range g.importer.Statuses() {
			if st.Required && st.State != core.StateConnected {
				waiting = append(waiting, upstreamState{st.Name, string(st.State)})
			}
		}
		imported := g.ready.Load()
		w.Header().Set("Content-Type", "application/json")
		if len(waiting) > 0 || !imported {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ready": imported && len(waiting) == 0, "imported": imported, "waiting": waiting})
	})
	return mux, closeAll, nil
}
