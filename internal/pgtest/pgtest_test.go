package pgtest_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/waittest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m).Run()) }

func query(t *testing.T, dsn string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// OP-5: a cluster of the test's own answers on loopback; stopped it refuses
// connections, restarted on the same port it answers again, and a database
// made for a test is reachable through its DSN.
func TestStartStopRestart(t *testing.T) {
	s := pgtest.Start(t, nil)
	if host, _, _ := net.SplitHostPort(s.Addr()); host != "127.0.0.1" {
		t.Fatalf("server on %s, want loopback", s.Addr())
	}
	dsn := s.NewDatabase(t)
	if err := query(t, dsn); err != nil {
		t.Fatalf("new database: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := query(t, dsn); err == nil {
		t.Fatal("a query succeeded with the server stopped")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := query(t, dsn); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

// OP-5: the shared cluster serves a database per test.
func TestShared(t *testing.T) {
	a, b := pgtest.Shared(t).NewDatabase(t), pgtest.Shared(t).NewDatabase(t)
	if a == b {
		t.Fatalf("two tests got one database: %s", a)
	}
	for _, dsn := range []string{a, b} {
		if err := query(t, dsn); err != nil {
			t.Fatal(err)
		}
	}
}

const orphanEnv = "TOOLGATE_PGTEST_ORPHAN"

// OP-5: A test process that dies without stopping its cluster (a panic, a
// timeout) leaves no PostgreSQL running: the watchdog stops it and removes
// its directory.
func TestClusterStoppedWhenProcessDies(t *testing.T) {
	if os.Getenv(orphanEnv) == "1" {
		s := pgtest.Start(t, nil)
		os.Stdout.WriteString(s.DSN("postgres") + "\n")
		os.Exit(0) // no cleanup runs
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterStoppedWhenProcessDies$")
	cmd.Env = append(os.Environ(), orphanEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dsn, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child printed no DSN: %v", err)
	}
	dsn = strings.TrimSpace(dsn)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	waittest.Eventually(t, 30*time.Second, "the cluster at "+dsn+" to stop answering after its process died", func() bool { return query(t, dsn) != nil })
}
