// Package pgtest starts throwaway PostgreSQL clusters for tests (OP-5): a
// temp directory, initdb with trust authentication, a free loopback port,
// pg_ctl to start, stop and restart it. Nothing listens beyond 127.0.0.1.
//
// The server binaries refuse to run as root; when the tests do, they are run
// as the postgres system user through runuser, in a directory that user
// owns.
//
// Where the binaries are missing, Start fails the test saying what is
// missing; only TOOLGATE_SKIP_POSTGRES=1, set on purpose, turns that into a
// skip. CI never sets it.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// SkipEnv, set to 1, skips the tests that need PostgreSQL where its binaries
// are missing, instead of failing them.
const SkipEnv = "TOOLGATE_SKIP_POSTGRES"

// binaries every cluster needs.
var binaries = []string{"initdb", "pg_ctl", "postgres"}

// Options adjust a cluster; nil means defaults.
type Options struct {
	// Durable keeps PostgreSQL's default fsync and synchronous_commit, for
	// benchmarks; tests run without them, being throwaway.
	Durable bool
}

// Server is one running cluster. Its methods are safe for concurrent use.
type Server struct {
	bin   string // directory of initdb, pg_ctl, postgres
	dir   string // owned by the server's user: data/, the socket, the log
	runAs string // "postgres" when running as root, else ""
	opts  Options

	mu       sync.Mutex
	port     int
	running  bool
	watchdog *exec.Cmd
}

// Binaries finds the directory holding the PostgreSQL server binaries: on
// PATH, else the newest /usr/lib/postgresql/*/bin. The error names what is
// missing.
func Binaries() (string, error) { return findBinaries("/usr/lib/postgresql/*/bin") }

func findBinaries(glob string) (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		dir := filepath.Dir(p)
		if missing := missingIn(dir); len(missing) == 0 {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(glob)
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if len(missingIn(dir)) == 0 {
			return dir, nil
		}
	}
	return "", fmt.Errorf("PostgreSQL server binaries (%s) not found on PATH nor in %s: install PostgreSQL (apt-get install postgresql), or set %s=1 to skip these tests on purpose",
		strings.Join(binaries, ", "), glob, SkipEnv)
}

func missingIn(dir string) []string {
	var missing []string
	for _, b := range binaries {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			missing = append(missing, b)
		}
	}
	return missing
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// require fails (or, with SkipEnv=1, skips) tb when PostgreSQL cannot be run.
func require(tb testing.TB) string {
	tb.Helper()
	bin, err := Binaries()
	if err == nil && os.Geteuid() == 0 {
		if _, uerr := user.Lookup("postgres"); uerr != nil {
			err = fmt.Errorf("running as root, and there is no postgres system user to run the PostgreSQL server as (it refuses root): %v", uerr)
		} else if _, lerr := exec.LookPath("runuser"); lerr != nil {
			err = fmt.Errorf("running as root, and runuser is missing to run the PostgreSQL server as the postgres user: %v", lerr)
		}
	}
	if err != nil {
		if os.Getenv(SkipEnv) == "1" {
			tb.Skipf("%s=1: %v", SkipEnv, err)
		}
		tb.Fatalf("PostgreSQL is needed by this test: %v", err)
	}
	return bin
}

// Start initialises and starts a cluster of the test's own, stopped and
// removed when the test ends.
func Start(tb testing.TB, opts *Options) *Server {
	tb.Helper()
	s, err := start(require(tb), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return s
}

var shared struct {
	sync.Mutex
	s   *Server
	err error
}

// Shared is one cluster for the whole test binary, started on first use and
// stopped by Main: tests that do not stop or restart the server share it,
// each in a database of its own (NewDatabase).
func Shared(tb testing.TB) *Server {
	tb.Helper()
	bin := require(tb)
	shared.Lock()
	defer shared.Unlock()
	if shared.s == nil && shared.err == nil {
		shared.s, shared.err = start(bin, nil)
	}
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.s
}

// Main runs the tests of a package that uses Shared, then stops the shared
// cluster. Wrap m with it in TestMain: goleak.VerifyTestMain(pgtest.Main(m)),
// or os.Exit(pgtest.Main(m).Run()).
func Main(m interface{ Run() int }) interface{ Run() int } { return mainRunner{m} }

type mainRunner struct{ m interface{ Run() int } }

func (r mainRunner) Run() int {
	code := r.m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.s != nil {
		if err := shared.s.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			if code == 0 {
				code = 1
			}
		}
		shared.s = nil
	}
	return code
}

func start(bin string, opts *Options) (*Server, error) {
	s := &Server{bin: bin}
	if opts != nil {
		s.opts = *opts
	}
	dir, err := os.MkdirTemp("", "toolgate-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s.dir = dir
	if os.Geteuid() == 0 {
		s.runAs = "postgres"
		u, err := user.Lookup(s.runAs)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	// A port found free can be taken before the server binds it: try a few.
	for attempt := 0; ; attempt++ {
		if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.startServer(); err == nil || attempt == 2 {
			break
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.watch()
	return s, nil
}

// watch starts a process that stops the cluster and removes its directory
// should this process die without Close (a panic, a test timeout): a
// postmaster does not notice its parent's death, and nothing else would
// stop it. Close ends the watchdog first.
func (s *Server) watch() {
	pgctl := fmt.Sprintf("%q -D %q -m immediate -w stop", filepath.Join(s.bin, "pg_ctl"), s.data())
	if s.runAs != "" {
		pgctl = "runuser -u " + s.runAs + " -- " + pgctl
	}
	// kill -0 needs no privilege over a process this shell's user owns.
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 1; done; %s >/dev/null 2>&1; rm -rf %q", os.Getpid(), pgctl, s.dir)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // outlives a signal to the test's group
	if err := cmd.Start(); err == nil {
		s.watchdog = cmd
	}
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// run runs one of the server's binaries, as the postgres user when root.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.runAs != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd.CombinedOutput()
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts the cluster on s.port and waits until it accepts
// connections (pg_ctl -w).
func (s *Server) startServer() error {
	o := []string{"-p", strconv.Itoa(s.port), "-k", s.dir, "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200"}
	if !s.opts.Durable {
		o = append(o, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	out, err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "server.log"), "-o", strings.Join(o, " "), "-w", "-t", "60", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("pgtest: pg_ctl start on port %d: %v\n%s\n%s", s.port, err, out, log)
	}
	s.running = true
	return nil
}

func (s *Server) stopServer() error {
	if !s.running {
		return nil
	}
	out, err := s.run("pg_ctl", "-D", s.data(), "-m", "fast", "-w", "-t", "60", "stop")
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %v\n%s", err, out)
	}
	s.running = false
	return nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// DSN is a URL for database db on this server, as the postgres superuser
// (trust authentication: no password).
func (s *Server) DSN(db string) string {
	return "postgres://postgres@" + s.Addr() + "/" + db + "?sslmode=disable"
}

// Stop stops the server; its data stay for Restart.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopServer()
}

// Restart starts a stopped server again, on the same port (stopping it
// first if it runs).
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopServer(); err != nil {
		return err
	}
	return s.startServer()
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchdog != nil {
		_ = s.watchdog.Process.Kill()
		_ = s.watchdog.Wait()
		s.watchdog = nil
	}
	err := s.stopServer()
	if err == nil {
		err = os.RemoveAll(s.dir)
	}
	return err
}

var dbSeq atomic.Int64

// NewDatabase creates an empty database for one test and returns its DSN;
// it is dropped when the test ends (with any connection still open to it).
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("tg_%d_%d", os.Getpid(), dbSeq.Add(1))
	s.Exec(tb, "postgres", "CREATE DATABASE "+name)
	tb.Cleanup(func() {
		s.mu.Lock()
		running := s.running
		s.mu.Unlock()
		if running {
			s.Exec(tb, "postgres", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		}
	})
	return s.DSN(name)
}

// Exec runs sql in database db as the superuser, failing tb on error.
func (s *Server) Exec(tb testing.TB, db, sql string, args ...any) {
	tb.Helper()
	if err := s.exec(db, sql, args...); err != nil {
		tb.Fatalf("pgtest: %s: %v", sql, err)
	}
}

func (s *Server) exec(db, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN(db))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// DatabaseOf is the database name a DSN from NewDatabase or DSN names.
func DatabaseOf(dsn string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", errors.New("pgtest: not a DSN")
	}
	return cfg.Database, nil
}
