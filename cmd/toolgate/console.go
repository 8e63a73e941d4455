package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"syscall"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/muesli/termenv"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/tui"
)

func runConsole(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("console")
	path := fs.String("config", "", "config file (default ./toolgate.yaml, then the user config dir; none starts the demo)")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	demoMode := *path == "" && config.DefaultPath() == ""
	if !isTerminal(os.Stdin) || !isTerminal(c.stdout) {
		if demoMode {
			fmt.Fprintln(c.stdout, "toolgate: no config file, so toolgate starts the built-in demo console — it needs a terminal.")
			fmt.Fprintln(c.stdout, "Run toolgate in a terminal, or try: toolgate check --config testdata/demo.yaml")
			return 0
		}
		if _, ok := c.loadConfig("console", *path); !ok {
			return 1
		}
		fmt.Fprintln(c.stderr, "toolgate console: the console needs a terminal; for a headless gateway run toolgate serve")
		return 2
	}

	// The console draws on the terminal: logs go to a file.
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("toolgate-console-%d.log", os.Getpid()))
	var logOut io.Writer = io.Discard
	if f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		defer f.Close()
		logOut = f
	} else {
		logPath = ""
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))

	var (
		cfg    *config.Config
		notice string
	)
	if demoMode {
		dir, err := os.MkdirTemp("", "toolgate-demo-")
		if err != nil {
			fmt.Fprintf(c.stderr, "toolgate: %v\n", err)
			return 1
		}
		defer os.RemoveAll(dir)
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(c.stderr, "toolgate: cannot find its own binary for the demo upstreams: %v\n", err)
			return 1
		}
		version, _ := buildVersion()
		if cfg, err = gateway.DemoConfig(exe, dir, version); err != nil {
			fmt.Fprintf(c.stderr, "toolgate: %v\n", err)
			return 1
		}
		notice = gateway.DemoNotice
	} else {
		var ok bool
		if cfg, ok = c.loadConfig("console", *path); !ok {
			return 1
		}
		if open := cfg.OpenEndpoints(); len(open) > 0 && !cfg.ListenIsLoopback() {
			fmt.Fprintf(c.stderr, "toolgate console: refusing open-mode endpoints %v on the non-loopback address %s (AU-7); use toolgate serve --insecure-open to force\n", open, cfg.Gateway.Listen)
			return 1
		}
	}

	opts := &gateway.Options{Logger: log, Demo: demoMode, Notice: notice}
	g, err := gateway.New(ctx, cfg, opts)
	if err != nil && demoMode && errors.Is(err, syscall.EADDRINUSE) {
		// Another toolgate (or anything) has the demo's port: take any.
		cfg.Gateway.Listen = "127.0.0.1:0"
		g, err = gateway.New(ctx, cfg, opts)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate console: %v\n", err)
		return 1
	}

	// Import in the background: the console shows the upstreams connecting.
	importCtx, cancelImport := context.WithCancel(ctx)
	imported := make(chan struct{})
	go func() {
		defer close(imported)
		if err := g.Start(importCtx); err != nil {
			log.Warn("import", "err", err)
		}
	}()

	if os.Getenv("NO_COLOR") != "" {
		lipgloss.SetColorProfile(termenv.Ascii)
	}
	// Ask the terminal for its background once, before the program owns
	// the input, so adaptive colours pick the right variant.
	lipgloss.SetHasDarkBackground(lipgloss.HasDarkBackground())

	model := tui.New(tui.Options{Console: g.Console(), Operator: operatorName(), Context: ctx})
	p := tea.NewProgram(model, tea.WithAltScreen(), tea.WithContext(ctx), tea.WithOutput(c.stdout))
	_, runErr := p.Run()
	model.Close()
	cancelImport()
	<-imported
	stopErr := closeGateway(g)
	code := 0
	if runErr != nil && !errors.Is(runErr, tea.ErrProgramKilled) && !errors.Is(runErr, context.Canceled) {
		fmt.Fprintf(c.stderr, "toolgate console: %v\n", runErr)
		code = 1
	}
	if stopErr != nil {
		code = 1
	}
	if logPath != "" {
		fmt.Fprintf(c.stderr, "toolgate: console closed; its log is %s\n", logPath)
	}
	return code
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// operatorName is who the console records as approving: the OS user.
func operatorName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "console:" + u.Username
	}
	return "console"
}
