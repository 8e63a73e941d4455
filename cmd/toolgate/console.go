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
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/muesli/termenv"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/tui"
)

func runConsole(ctx context.Context, c *cli, args []string) int {
	// A terminal program's SIGHUP says its terminal went away: stop as
	// for SIGTERM, children and all (OP-12).
	c.signals.OnHangup(c.signals.Stop)
	fs := c.commandFlags("console")
	path := fs.String("config", "", "config file (default ./toolgate.yaml, then the user config dir; none starts the demo)")
	attach := fs.String("attach", "", "attach to a running gateway's admin API: http://host:port or unix:/path (default $"+admin.EnvAttach+" when --config is not given)")
	key := fs.String("admin-key", "", "the admin key for --attach (default $"+admin.EnvAdminKey+"; the flag is visible to other users in the process list)")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if *attach != "" && *path != "" {
		fmt.Fprintln(c.stderr, "toolgate console: --attach and --config exclude each other: an attached console runs no gateway of its own")
		return 2
	}
	if *attach == "" && *path == "" {
		*attach = os.Getenv(admin.EnvAttach)
	}
	if *attach != "" {
		return runAttachedConsole(ctx, c, *attach, *key)
	}
	if *key != "" {
		fmt.Fprintln(c.stderr, "toolgate console: --admin-key needs --attach")
		return 2
	}
	demoMode := *path == "" && config.DefaultPath() == ""
	if !isTerminal(os.Stdin) || !isTerminal(c.stdout) {
		if demoMode {
			fmt.Fprintln(c.stdout, "toolgate: no config file, so toolgate starts the built-in demo console — it needs a terminal.")
			fmt.Fprintln(c.stdout, "Run toolgate in a terminal, or try: toolgate check --config testdata/demo.yaml")
			return 0
		}
		cfg, ok := c.loadConfig("console", *path)
		if !ok || !consoleExportOK(c, cfg) {
			return 1
		}
		fmt.Fprintln(c.stderr, "toolgate console: the console needs a terminal; for a headless gateway run toolgate serve")
		return 2
	}

	log, logPath, closeLog := consoleLog()
	defer closeLog()
	c.signals.OnHangup(func() {
		log.Info("terminal hung up; stopping")
		c.signals.Stop()
	})

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
			fmt.Fprintf(c.stderr, "toolgate console: refusing open-mode endpoints %v on the non-loopback address %s: anyone who reaches it acts as their actor without credentials (see docs/security.md#open-mode); use toolgate serve --insecure-open to force\n", open, cfg.Gateway.Listen)
			return 1
		}
		if !consoleExportOK(c, cfg) {
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

	setupColours()
	model := tui.New(tui.Options{Console: g.Console(), Operator: operatorName(), Context: ctx})
	p := tea.NewProgram(model, tea.WithAltScreen(), tea.WithContext(ctx), tea.WithOutput(c.stdout))
	_, runErr := p.Run()
	model.Close()
	cancelImport()
	<-imported
	stopErr := closeGateway(g)
	log.Info("console stopped", "clean", stopErr == nil)
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

// consoleLog opens the console's log file: the console draws on the
// terminal, so logs go to a file, named to the user when the console ends.
func consoleLog() (log *slog.Logger, path string, closeLog func()) {
	path = filepath.Join(os.TempDir(), fmt.Sprintf("toolgate-console-%d.log", os.Getpid()))
	var out io.Writer = io.Discard
	closeLog = func() {}
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		out, closeLog = f, func() { _ = f.Close() }
	} else {
		path = ""
	}
	return slog.New(slog.NewTextHandler(out, nil)), path, closeLog
}

func setupColours() {
	if os.Getenv("NO_COLOR") != "" {
		lipgloss.SetColorProfile(termenv.Ascii)
	}
	// Ask the terminal for its background once, before the program owns
	// the input, so adaptive colours pick the right variant.
	lipgloss.SetHasDarkBackground(lipgloss.HasDarkBackground())
}

// runAttachedConsole is `console --attach URL` (CO-9): the same console
// over a running gateway's admin API, with no gateway of its own. The key,
// the URL and the operator are checked before the screen opens, so a bad
// one is a line on stderr and exit 1, not a broken screen.
func runAttachedConsole(ctx context.Context, c *cli, url, key string) int {
	fail := func(err error) int {
		fmt.Fprintf(c.stderr, "toolgate console: %s\n", adminErrorText(url, err))
		return 1
	}
	if key == "" {
		key = os.Getenv(admin.EnvAdminKey)
	}
	client, err := admin.NewClient(url, key, nil)
	if err != nil {
		return fail(err)
	}
	defer client.Close()
	checkCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	who, err := client.Whoami(checkCtx)
	cancel()
	if err != nil {
		return fail(err)
	}
	if !isTerminal(os.Stdin) || !isTerminal(c.stdout) {
		fmt.Fprintln(c.stderr, "toolgate console: the console needs a terminal; without one use the headless commands (toolgate approvals, approve, refresh …)")
		return 2
	}
	log, logPath, closeLog := consoleLog()
	defer closeLog()
	log.Info("attaching", "url", client.URL(), "operator", who.Operator)
	remote := admin.NewRemoteConsole(client, &admin.RemoteOptions{Logger: log})

	setupColours()
	model := tui.New(tui.Options{Console: remote, Operator: who.Operator, Context: ctx, Attached: client.URL()})
	p := tea.NewProgram(model, tea.WithAltScreen(), tea.WithContext(ctx), tea.WithOutput(c.stdout))
	_, runErr := p.Run()
	model.Close()
	code := 0
	if runErr != nil && !errors.Is(runErr, tea.ErrProgramKilled) && !errors.Is(runErr, context.Canceled) {
		fmt.Fprintf(c.stderr, "toolgate console: %v\n", runErr)
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

// consoleExportOK refuses audit.export to stdout, where its lines would be
// drawn over the console (OP-10).
func consoleExportOK(c *cli, cfg *config.Config) bool {
	if cfg.Audit.Export.Path != "-" {
		return true
	}
	fmt.Fprintln(c.stderr, "toolgate console: audit.export.path: - (stdout) is for toolgate serve; the console draws on the terminal: export to a file")
	return false
}
