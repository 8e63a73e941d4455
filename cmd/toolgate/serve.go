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
	store, err := openStore(ctx, cfg.Gateway.Store)
	if err != nil {
		log.Error("opening the store", "err", err)
		return 1
	}
	defer store.Close()
	g, err := newGateway(ctx, cfg, store)
	if err != nil {
		log.Error("building gateway", "err", err)
		return 1
	}
	defer g.close()
	g.store = store
	g.sessions = core.NewSessions(g.reg.Bus())
	g.approvals = core.NewApprovalQueue(g.reg.Bus())
	if g.gate, err = newGate(cfg, store, g.approvals); err != nil {
		log.Error("confirm gate", "err", err)
		return 1
	}
	if ups := operatorUpstreams(cfg); len(ups) > 0 {
		// Headless, nobody can approve: such calls wait and time out.
		log.Warn("approval: operator needs the console; without it these confirmations time out", "upstreams", ups)
	}

	h, closeEndpoints, err := g.handler(ctx, cfg, log)
	if err != nil {
		log.Error("building endpoints", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.Gateway.Listen)
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	// Ending sessions first lets their event streams close, so Shutdown
	// waits only for calls in flight.
	srv.RegisterOnShutdown(closeEndpoints)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("serving", "listen", ln.Addr().String(), "endpoints", len(cfg.Endpoints))

	if err := g.start(ctx); err != nil {
		log.Error("start-up failed", "err", err)
		_ = shutdown(srv, log)
		return 1
	}
	g.ready.Store(true)
	for _, st := range g.importer.Statuses() {
		if st.State != core.StateConnected {
			log.Warn("upstream unavailable", "upstream", st.Name, "state", st.State, "err", st.LastError)
		}
	}
	log.Info("ready", "tools", len(g.reg.Names(""))+countImported(g))

	select {
	case <-ctx.Done():
	case err := <-served:
		log.Error("server stopped", "err", err)
		return 1
	}
	log.Info("shutting down")
	if err := shutdown(srv, log); err != nil {
		return 1
	}
	if err := g.close(); err != nil {
		log.Warn("closing upstreams", "err", err)
	}
	log.Info("stopped")
	return 0
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
			Catalog: g.importer, Audit: g.store, AuditKey: auditKey(cfg),
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
