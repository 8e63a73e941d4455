package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
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
	g, err := gateway.New(ctx, cfg, &gateway.Options{Logger: log})
	if err != nil {
		log.Error("start-up failed", "err", err)
		return 1
	}
	if ups := gateway.OperatorUpstreams(cfg); len(ups) > 0 && cfg.Gateway.Admin == nil {
		// Headless without an admin API, nobody can approve: such calls
		// wait and time out.
		log.Warn("approval: operator needs a console; without gateway.admin none can attach, and these confirmations time out", "upstreams", ups)
	}
	if err := g.Start(ctx); err != nil {
		log.Error("start-up failed", "err", err)
		_ = closeGateway(g)
		return 1
	}
	for _, st := range g.Importer().Statuses() {
		if st.State != core.StateConnected {
			log.Warn("upstream unavailable", "upstream", st.Name, "state", st.State, "err", st.LastError)
		}
	}
	log.Info("ready", "tools", len(g.Registry().Names(""))+len(g.Importer().ImportedTools()))

	// SIGHUP (systemctl reload) would end the process by Go's default, and
	// every session with it. Reloading is not built yet: keep serving and
	// say so, rather than drop every client on a reload.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				log.Warn("SIGHUP: config reload is not supported yet; the running config stays, restart toolgate to apply changes")
			case <-ctx.Done():
				return
			}
		}
	}()

	select {
	case <-ctx.Done():
	case err := <-g.Served():
		log.Error("server stopped", "err", err)
		_ = closeGateway(g)
		return 1
	}
	log.Info("shutting down")
	if err := closeGateway(g); err != nil {
		return 1
	}
	log.Info("stopped")
	return 0
}

// closeGateway gives calls in flight shutdownGrace to finish (SV-9).
func closeGateway(g *gateway.Gateway) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	return g.Close(ctx)
}

func hostOf(listen string) string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	return host
}
