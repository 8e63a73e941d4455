package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
)

// stopGrace is how long a stdio child's process group gets between SIGTERM
// and SIGKILL (IM-10).
const stopGrace = 2 * time.Second

// minimalEnv is what a child gets when its upstream sets no env (IM-3): enough
// to find programs and a home, none of the gateway's secrets.
var minimalEnv = []string{"PATH", "HOME", "USER", "LANG", "TMPDIR", "SHELL", "TERM"}

type stdioUpstream struct {
	base
	opts   UpstreamOptions
	stderr *ring
}

var (
	_ core.Upstream             = (*stdioUpstream)(nil)
	_ core.ToolsChangedNotifier = (*stdioUpstream)(nil)
	_ StderrReporter            = (*stdioUpstream)(nil)
)

func newStdioUpstream(opts UpstreamOptions, log *slog.Logger) *stdioUpstream {
	u := &stdioUpstream{opts: opts, stderr: newRing(opts.StderrLimit)}
	u.base = base{log: log, dial: u.dial, scrub: scrubber("", "")}
	return u
}

// Stderr returns the kept tail of the child's stderr (of every child this
// upstream started, newest last).
func (u *stdioUpstream) Stderr() string { return u.stderr.String() }

// childEnv builds the child's environment (IM-3).
func childEnv(env map[string]string) []string {
	if env == nil {
		var out []string
		for _, k := range minimalEnv {
			if v, ok := os.LookupEnv(k); ok {
				out = append(out, k+"="+v)
			}
		}
		return out
	}
	out := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		_, over := env[k]
		return over
	})
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// child is one started process, in a process group of its own.
type child struct {
	mu  sync.Mutex
	cmd *exec.Cmd
}

func (c *child) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

func (u *stdioUpstream) dial(ctx context.Context, onNote func(mcpgo.JSONRPCNotification)) (*session, core.ServerInfo, error) {
	ch := &child{}
	var exited atomic.Bool
	mkCmd := func(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
		// Not exec.CommandContext: the child lives until Close, not until
		// the end of Connect's context.
		cmd := exec.Command(command, args...)
		cmd.Dir = u.opts.Cwd
		cmd.Env = childEnv(u.opts.Env)
		cmd.Stderr = u.stderr
		cmd.WaitDelay = time.Second
		setProcessGroup(cmd)
		ch.mu.Lock()
		ch.cmd = cmd
		ch.mu.Unlock()
		return cmd, nil
	}
	tr := transport.NewStdioWithOptions(u.opts.Command, nil, u.opts.Args,
		transport.WithCommandFunc(mkCmd), transport.WithCommandLogger(libLogger(u.log, "", "")))

	connCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	lost, markLost := context.WithCancel(context.Background())
	c := client.NewClient(tr, client.WithProtocolVersion(ProtocolVersion))
	c.OnNotification(onNote)

	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			markLost()
			stopErr = stopChild(ch.pid(), tr.Close)
			exited.Store(true)
			cancel()
		})
		return stopErr
	}

	// Start only spawns; an error there means nothing reached the child.
	if err := tr.Start(connCtx); err != nil {
		_ = stop()
		return nil, core.ServerInfo{}, fmt.Errorf("start %s: %w: %w", u.opts.Command, core.ErrNotSent, err)
	}
	go watchExit(ch.pid(), &exited, lost)

	info, err := handshake(ctx, connCtx, c)
	if err != nil {
		// The child's stderr is not quoted here: it may print its
		// environment, and errors reach logs (IM-5). Stderr() has it.
		_ = stop()
		return nil, core.ServerInfo{}, err
	}
	s := &session{
		client: c, tr: tr, lost: lost, markLost: markLost, stop: stop,
		exited: exited.Load,
	}
	return s, info, nil
}

// watchExit notes when the child is gone, polling because the transport owns
// cmd.Wait. It ends when the session stops.
func watchExit(pid int, exited *atomic.Bool, stopped context.Context) {
	if pid == 0 {
		return
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stopped.Done():
			return
		case <-t.C:
			if !processAlive(pid) {
				exited.Store(true)
				return
			}
		}
	}
}

// stopChild ends a child and its whole process group (IM-10): closing stdin
// asks it to exit; then SIGTERM to the group, SIGKILL after stopGrace, and
// the child is reaped by the transport's Close.
func stopChild(pid int, closeTransport func() error) error {
	done := make(chan error, 1)
	go func() { done <- closeTransport() }()
	if pid == 0 {
		return <-done
	}
	deadline := time.Now().Add(stopGrace)
	var closeErr error
	closed := false
	select {
	case closeErr = <-done:
		closed = true
	case <-time.After(300 * time.Millisecond):
	}
	signalGroup(pid, syscall.SIGTERM)
	for time.Now().Before(deadline) && (!closed || groupAlive(pid)) {
		select {
		case closeErr = <-done:
			closed = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	signalGroup(pid, syscall.SIGKILL)
	if !closed {
		select {
		case closeErr = <-done:
		case <-time.After(5 * time.Second):
			return errors.New("stdio child was not reaped")
		}
	}
	// Exit statuses after our own signals are the expected outcome of Close.
	var ee *exec.ExitError
	if errors.As(closeErr, &ee) {
		closeErr = nil
	}
	return closeErr
}

// ring keeps the last n bytes written to it.
type ring struct {
	n int

	mu  sync.Mutex
	buf []byte
}

func newRing(n int) *ring { return &ring{n: n} }

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	if over := len(r.buf) - r.n; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
	return len(p), nil
}

func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf)
}
