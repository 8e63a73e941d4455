package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/upstream/supervisor"
)

// supervisorSupported: Options.Supervisor is used on this platform (Linux:
// elsewhere there is no parent-death signal to wake a supervisor).
const supervisorSupported = supervisor.Supported

// stopGrace is how long a stdio child's process group gets between SIGTERM
// and SIGKILL (IM-10).
const stopGrace = supervisor.StopGrace

// minimalEnv is what a child gets when its upstream sets no env (IM-3): enough
// to find programs and a home, none of the gateway's secrets.
var minimalEnv = []string{"PATH", "HOME", "USER", "LANG", "TMPDIR", "SHELL", "TERM"}

type stdioUpstream struct {
	base
	opts   Options
	stderr *ring
	rd     redactor // env values out of errors and logs (IM-5)
}

var (
	_ core.Upstream             = (*stdioUpstream)(nil)
	_ core.ToolsChangedNotifier = (*stdioUpstream)(nil)
	_ StderrReporter            = (*stdioUpstream)(nil)
)

func newStdioUpstream(opts Options, log *slog.Logger) *stdioUpstream {
	u := &stdioUpstream{opts: opts, stderr: newRing(opts.StderrLimit)}
	var pairs [][2]string
	for _, v := range opts.Env {
		pairs = append(pairs, [2]string{v, "•••"})
	}
	u.rd = newRedactor(pairs...)
	u.base = base{log: log, dial: u.dial, scrub: u.rd.scrub, roots: opts.Roots, hub: opts.Hub}
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

func (u *stdioUpstream) dial(ctx context.Context, onNote func(mcpgo.JSONRPCNotification)) (*session, core.ServerInfo, error) {
	var exited atomic.Bool
	supervised := supervisorSupported && len(u.opts.Supervisor) > 0
	connCtx, cancel := context.WithCancel(connectionContext())
	lost, markLost := context.WithCancel(context.Background())
	var pipe *stdioPipe
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			markLost()
			grace := stopGrace
			if supervised {
				grace = supervisedStopGrace
			}
			pid, closePipe := 0, func() error { return nil }
			if pipe != nil {
				pid, closePipe = pipe.cmd.Process.Pid, pipe.Close
			}
			stopErr = stopChild(pid, grace, closePipe)
			exited.Store(true)
			cancel()
		})
		return stopErr
	}

	// Starting only spawns; an error there means nothing reached the child.
	cmd, err := u.command(supervised)
	if err == nil {
		pipe, err = startStdioPipe(cmd, u.log)
	}
	if err != nil {
		_ = stop()
		return nil, core.ServerInfo{}, fmt.Errorf("start %s: %w: %w", u.opts.Command, core.ErrNotSent, err)
	}
	go watchExit(pipe.cmd.Process.Pid, &exited, lost)

	c := client.NewClient(pipe, client.WithProtocolVersion(ProtocolVersion))
	note, acks := ackWatcher(onNote)
	c.OnNotification(note)
	info, err := handshake(ctx, connCtx, c, pipe, u.handleRequest)
	var era *modernEra
	if err != nil && refusesLegacy(err) && !exited.Load() {
		// A server of the stateless revision only (IM-2).
		m, minfo, merr := discoverModern(ctx, pipe)
		if merr == nil {
			era, info, err = m, minfo, nil
		} else {
			u.log.Debug("server/discover failed too", "err", u.rd.scrub(merr))
		}
	}
	if err != nil {
		// The child's stderr is not quoted here: it may print its
		// environment, and errors reach logs (IM-5). Stderr() has it.
		_ = stop()
		return nil, core.ServerInfo{}, err
	}
	s := &session{
		client: c, tr: pipe, lost: lost, markLost: markLost, stop: stop,
		exited: exited.Load, pipe: pipe, modern: era,
	}
	if era != nil {
		if err := s.listen(ctx, acks, onNote, u.log); err != nil {
			return nil, core.ServerInfo{}, err
		}
	}
	return s, info, nil
}

// command builds the child's exec.Cmd: under the supervisor when there is
// one, in the configured directory and environment, in a process group of
// its own.
func (u *stdioUpstream) command(supervised bool) (*exec.Cmd, error) {
	command, args := u.opts.Command, u.opts.Args
	if supervised {
		path, err := resolveCommand(command, u.opts.Cwd)
		if err != nil {
			return nil, err
		}
		args = append(append(slices.Clone(u.opts.Supervisor[1:]), path), args...)
		command = u.opts.Supervisor[0]
	}
	// Not exec.CommandContext: the child lives until Close, not until
	// the end of Connect's context.
	cmd := exec.Command(command, args...)
	cmd.Dir = u.opts.Cwd
	cmd.Env = childEnv(u.opts.Env)
	cmd.Stderr = u.stderr
	cmd.WaitDelay = time.Second
	setProcessGroup(cmd, supervised)
	return cmd, nil
}

// resolveCommand finds command the way exec.Command would from the gateway,
// so that a missing program fails before anything starts even when a
// supervisor is what actually runs it. A name without a path separator is
// looked up on PATH; a path is checked relative to dir and passed on as
// given, since the supervisor starts in dir.
func resolveCommand(command, dir string) (string, error) {
	if filepath.Base(command) == command {
		return exec.LookPath(command)
	}
	p := command
	if dir != "" && !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if _, err := exec.LookPath(p); err != nil {
		return "", err
	}
	return command, nil
}

// Exit statuses of Supervise besides the command's own.
const (
	// SuperviseUsage: no command was given.
	SuperviseUsage = supervisor.Usage
	// SuperviseCannotStart: the command could not be started (as in a shell).
	SuperviseCannotStart = supervisor.CannotStart
)

// Supervise runs argv as the supervisor named by Options.Supervisor
// and returns the exit status for the supervisor's process: the command's
// own, 128+N when a signal N ended it, SuperviseCannotStart when it could
// not start.
//
// On Linux the command runs in the supervisor's process group, which the
// supervisor leads (it makes itself leader if it is not), with the
// supervisor's stdin, stdout and stderr, environment and working directory
// passed straight through. The supervisor is a child subreaper
// (PR_SET_CHILD_SUBREAPER): a process that left the group (setsid) and lost
// its parent is reparented to it, not to init, and reaped by it. It stops
// every descendant, in the group or not, found by walking /proc — SIGTERM,
// then SIGKILL after a grace of two seconds, in at most ten rounds for
// processes forked meanwhile — when ctx is done, on SIGTERM,
// SIGINT or SIGHUP (the gateway spawns it with SIGTERM as its parent-death
// signal), when its parent changes (polled every 250 ms: the gateway is
// gone, a backstop for a parent-death signal that did not arrive or was
// never set), and when the command exits, so that nothing the command
// started outlives it (IM-10). stderr carries the supervisor's own
// diagnostics only.
//
// Elsewhere there is no supervision: on other Unix systems the process
// becomes the command (exec), on Windows it runs the command and returns
// its exit status.
func Supervise(ctx context.Context, argv []string, stderr io.Writer) int {
	return supervisor.Run(ctx, argv, stderr)
}

// watchExit notes when the child is gone: from a pidfd where there is one,
// else polling, because the transport owns cmd.Wait. It ends when the
// session stops.
func watchExit(pid int, exited *atomic.Bool, stopped context.Context) {
	if pid == 0 {
		return
	}
	if gone, ok := awaitExit(pid, stopped); ok {
		if gone {
			exited.Store(true)
		}
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

// supervisedStopGrace is stopChild's grace for a supervisor: longer than
// stopGrace, so the supervisor's own SIGTERM-then-SIGKILL of the processes
// that left its group ends before the gateway's SIGKILL ends the supervisor.
const supervisedStopGrace = stopGrace + 2*time.Second

// stopChild ends a child and its whole process group (IM-10): closing stdin
// asks it to exit; then SIGTERM to the group, SIGKILL after grace, and the
// child is reaped by the transport's Close.
func stopChild(pid int, grace time.Duration, closeTransport func() error) error {
	done := make(chan error, 1)
	go func() { done <- closeTransport() }()
	if pid == 0 {
		return <-done
	}
	deadline := time.Now().Add(grace)
	var closeErr error
	closed := false
	select {
	case closeErr = <-done:
		closed = true
	case <-time.After(300 * time.Millisecond):
	}
	signalOurGroup(pid, closed, syscall.SIGTERM)
	for time.Now().Before(deadline) && (!closed || ourGroupAlive(pid)) {
		select {
		case closeErr = <-done:
			closed = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	signalOurGroup(pid, closed, syscall.SIGKILL)
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

// signalOurGroup signals the group that the child pid leads. Once the child
// is reaped its number may be given to a new process, which may lead a group
// of its own: a process found with that pid is then not ours and its group
// is left alone. While members of the child's group remain, the number stays
// theirs and cannot be reused.
func signalOurGroup(pid int, reaped bool, sig syscall.Signal) {
	if reaped && pidInUse(pid) {
		return
	}
	signalGroup(pid, sig)
}

// ourGroupAlive is groupAlive for the group of a reaped child pid.
func ourGroupAlive(pid int) bool { return !pidInUse(pid) && groupAlive(pid) }

// pidInUse reports whether a process (a zombie counts) has pid, from /proc;
// where /proc is missing it reports false.
func pidInUse(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// groupMembers lists the live processes of group pgid other than self, from
// /proc (Linux; elsewhere it finds none). Zombies are left out: they have
// already exited.
func groupMembers(pgid, self int) []int {
	var out []int
	for _, pid := range procPIDs() {
		if pid == self {
			continue
		}
		st, ok := procStat(pid)
		if ok && st.pgid == pgid && st.state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// procPIDs lists the processes in /proc (Linux; elsewhere none).
func procPIDs() []int { return supervisor.PIDs() }

type procStatus struct {
	state byte
	ppid  int
	pgid  int
}

// procStat reads a process's state, parent and process group from
// /proc/PID/stat.
func procStat(pid int) (procStatus, bool) {
	st, ok := supervisor.Stat(pid)
	return procStatus{state: st.State, ppid: st.PPID, pgid: st.PGID}, ok
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
