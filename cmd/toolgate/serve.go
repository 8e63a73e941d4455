package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
)

// shutdownGrace bounds how long in-flight calls may finish after SIGTERM
// (SV-9).
const shutdownGrace = 10 * time.Second

// shutdownDeadline bounds the whole shutdown: after it serve exits (1)
// whatever did not stop, with a log line naming it.
const shutdownDeadline = shutdownGrace + gateway.CloseOverrun

func runServe(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("serve")
	path := fs.String("config", "", "config file (default ./toolgate.yaml, then the user config dir)")
	listen := fs.String("listen", "", "listen address (overrides gateway.listen)")
	insecureOpen := fs.Bool("insecure-open", false, "allow open-mode endpoints (an actor, no auth) on a non-loopback address; see docs/security.md#open-mode")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	log := slog.New(slog.NewJSONHandler(c.stderr, nil))
	file := *path
	if file == "" {
		file = config.DefaultPath()
	}
	cfg, ok := c.loadConfig("serve", file)
	if !ok {
		return 1
	}
	if *listen != "" {
		cfg.Gateway.Listen = *listen
	}
	if err := openModeCheck(cfg, *insecureOpen); err != nil {
		log.Error(err.Error(), "endpoints", cfg.OpenEndpoints(), "listen", cfg.Gateway.Listen)
		return 1
	}
	log.Info("starting", "config", file)
	g, err := gateway.New(ctx, cfg, &gateway.Options{Logger: log})
	if err != nil {
		if ctx.Err() != nil {
			// SIGTERM or SIGINT while building: New released what it had
			// built, so this is a clean stop, not a failed start.
			log.Info("stopped during start-up")
			return 0
		}
		log.Error("start-up failed", "err", err)
		return 1
	}
	if ups := gateway.OperatorUpstreams(cfg); len(ups) > 0 && cfg.Gateway.Admin == nil {
		// Headless without an admin API, nobody can approve: such calls
		// wait and time out.
		log.Warn("approval: operator needs a console; without gateway.admin none can attach, and these confirmations time out", "upstreams", ups)
	}
	if err := g.Start(ctx); err != nil && ctx.Err() == nil {
		log.Error("start-up failed", "err", err)
		_ = closeGateway(g)
		return 1
	}
	if ctx.Err() != nil {
		// Signalled while upstreams were connecting: nothing more starts
		// (no reload loop, no reconnects); straight to shutdown.
		return shutdown(g, log)
	}
	for _, st := range g.Importer().Statuses() {
		if st.State != core.StateConnected {
			log.Warn("upstream unavailable", "upstream", st.Name, "state", st.State, "err", st.LastError)
		}
	}
	log.Info("ready", "tools", len(g.Registry().Names(""))+len(g.Importer().ImportedTools()))

	// SIGHUP (systemctl reload, logrotate's postrotate) reloads the
	// config, as a change of the file does under gateway.watchConfig
	// (OP-8). One that came during start-up was held until now and is
	// applied once, here (OP-12).
	if err := g.StartReloads(gateway.ReloadSource{Path: file, Load: reloadLoader(file, *listen, *insecureOpen, log)}); err != nil {
		log.Error("config reload unavailable", "err", err)
	}
	c.signals.OnHangup(func() {
		g.ReopenAuditExport() // after logrotate moved it (OP-10)
		g.RequestReload("SIGHUP")
	})
	defer c.signals.OnHangup(nil)

	select {
	case <-ctx.Done():
	case err := <-g.Served():
		log.Error("server stopped", "err", err)
		_ = closeGateway(g)
		return 1
	}
	return shutdown(g, log)
}

// shutdown closes g within shutdownDeadline: 0 after a clean shutdown, 1
// when calls had to be cut or a part did not stop in time.
func shutdown(g *gateway.Gateway, log *slog.Logger) int {
	log.Info("shutting down")
	if err := closeGateway(g); err != nil {
		return 1
	}
	log.Info("stopped")
	return 0
}

// errOpenMode refuses open-mode endpoints on a non-loopback address (AU-7).
var errOpenMode = errors.New("refusing open-mode endpoints on a non-loopback address; pass --insecure-open to force")

func openModeCheck(cfg *config.Config, insecureOpen bool) error {
	if open := cfg.OpenEndpoints(); len(open) > 0 && !config.IsLoopbackHost(hostOf(cfg.Gateway.Listen)) && !insecureOpen {
		return errOpenMode
	}
	return nil
}

// reloadLoader reads the config file again for a reload, as serve read it
// at start: the same --listen override, so it is not seen as a change, and
// the same refusal of open mode on a non-loopback address. Its warnings
// are log records.
func reloadLoader(file, listen string, insecureOpen bool, log *slog.Logger) func() (*config.Config, error) {
	return func() (*config.Config, error) {
		v, _ := buildVersion()
		cfg, warnings, err := config.Load(file, config.LoadOptions{Version: v, LookupEnv: gateway.LookupEnv})
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			log.Warn("config warning", "key", w.Path, "detail", w.Message)
		}
		if listen != "" {
			cfg.Gateway.Listen = listen
		}
		if err := openModeCheck(cfg, insecureOpen); err != nil {
			return nil, fmt.Errorf("%w: %s", err, strings.Join(cfg.OpenEndpoints(), ", "))
		}
		return cfg, nil
	}
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
