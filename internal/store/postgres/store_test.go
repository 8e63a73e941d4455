package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/store/storetest"
	"github.com/toolgate/toolgate/internal/waittest"
)

func mustOpen(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// OP-5: the PostgreSQL store keeps the contract every store is tested
// against, on a real server, a database per store.
func TestConformanceOP5(t *testing.T) {
	srv := pgtest.Shared(t)
	storetest.StoreConformance(t, func(t *testing.T) core.Store {
		s, err := Open(context.Background(), srv.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// OP-5, CF-3, CF-4: two handles on one database, as two replicas have,
// share one ledger (of two concurrent spends exactly one wins), identity,
// approvals, audit log and secret check.
func TestSharedConformanceOP5(t *testing.T) {
	srv := pgtest.Shared(t)
	storetest.SharedConformance(t, func(t *testing.T) (core.Store, core.Store) {
		dsn := srv.NewDatabase(t)
		a, err := Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open(context.Background(), dsn)
		if err != nil {
			_ = a.Close()
			t.Fatal(err)
		}
		return a, b
	})
}

// OP-5: replicas starting at the same moment on a new database migrate it
// once: every Open succeeds, and all see one identity and the latest
// schema version.
func TestConcurrentOpenMigratesOnceOP5(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := srv.NewDatabase(t)
	const n = 6
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(context.Background(), dsn)
		})
	}
	close(start)
	wg.Wait()
	ids := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open #%d: %v", i, errs[i])
			continue
		}
		defer stores[i].Close()
		ids[stores[i].id] = true
	}
	if len(ids) != 1 {
		t.Errorf("%d identities after concurrent opens, want 1: %v", len(ids), ids)
	}
	var version, rows int
	s := stores[0]
	if s == nil {
		t.Fatal("no store opened")
	}
	if err := s.pool.QueryRow(context.Background(), `SELECT (SELECT version FROM toolgate.schema_version), (SELECT count(*) FROM toolgate.store_identity)`).Scan(&version, &rows); err != nil {
		t.Fatal(err)
	}
	if version != len(migrations) || rows != 1 {
		t.Errorf("schema version %d with %d identity rows, want %d and 1", version, rows, len(migrations))
	}
}

// OP-5: reopening keeps everything: approvals, spent tokens, the audit log
// and the identity.
func TestPersistsAcrossReopenOP5(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).NewDatabase(t)
	s := mustOpen(t, dsn)
	now := time.Now()
	if err := s.PutApproval(ctx, core.Approval{Source: "gh", RemoteName: "x", Fingerprint: "f", Decision: core.DecisionApproved, By: "a", At: now}); err != nil {
		t.Fatal(err)
	}
	if first, err := s.UseToken(ctx, "tok", now.Add(time.Hour)); err != nil || !first {
		t.Fatal(first, err)
	}
	if err := s.QueueAudit(ctx, storetest.FullAuditRecord(now, "queued")); err != nil {
		t.Fatal(err)
	}
	id := s.id
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dsn)
	if s.id != id {
		t.Errorf("identity %s after reopen, was %s", s.id, id)
	}
	if first, err := s.UseToken(ctx, "tok", now.Add(time.Hour)); err != nil || first {
		t.Errorf("a token spent before the reopen: first=%v, %v (CF-4)", first, err)
	}
	if a, err := s.Approvals(ctx); err != nil || len(a) != 1 {
		t.Errorf("approvals after reopen: %v, %v", a, err)
	}
	if recs, err := s.Audit(ctx, core.AuditQuery{}); err != nil || len(recs) != 1 || recs[0].CallID != "queued" {
		t.Errorf("audit after reopen: a record queued before Close is missing: %v, %v", recs, err)
	}
}

// OP-5: a schema migrated by a newer toolgate is refused, and left alone.
func TestTooNewOP5(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := srv.NewDatabase(t)
	mustOpen(t, dsn).Close()
	db, _ := pgtest.DatabaseOf(dsn)
	srv.Exec(t, db, "UPDATE toolgate.schema_version SET version = 999")
	_, err := Open(context.Background(), dsn)
	if !errors.Is(err, core.ErrStoreTooNew) {
		t.Fatalf("Open of a version-999 schema = %v, want core.ErrStoreTooNew", err)
	}
	for _, want := range []string{"999", fmt.Sprint("up to ", len(migrations)), srv.Addr()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// OP-5: a schema that holds another application's tables is refused, not
// migrated; ?schema= puts toolgate beside it in the same database.
func TestForeignSchemaAndSchemaParamOP5(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := srv.NewDatabase(t)
	db, _ := pgtest.DatabaseOf(dsn)
	srv.Exec(t, db, "CREATE SCHEMA toolgate; CREATE TABLE toolgate.orders (id int)")
	if _, err := Open(context.Background(), dsn); !errors.Is(err, core.ErrStoreCorrupt) {
		t.Fatalf("Open over another application's schema = %v, want core.ErrStoreCorrupt", err)
	}
	s := mustOpen(t, dsn+"&schema=tg_replicas")
	if _, err := s.UseToken(context.Background(), "t", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var n int
	s.pool.QueryRow(context.Background(), "SELECT count(*) FROM tg_replicas.spent_tokens").Scan(&n)
	if n != 1 {
		t.Errorf("%d rows in tg_replicas.spent_tokens, want 1", n)
	}
	if _, err := Open(context.Background(), dsn+"&schema=Bad-Name"); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("a bad schema name: %v, want an error naming the schema", err)
	}
}

// CF-3: the database is emptied or replaced under a running store: the
// ledger refuses to record spends (core.ErrStoreLost), StoreID fails the
// same way, and once the store is back both work again.
func TestStoreLostCF3(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Shared(t)
	dsn := srv.NewDatabase(t)
	db, _ := pgtest.DatabaseOf(dsn)
	s := mustOpen(t, dsn)
	exp := time.Now().Add(time.Hour)

	srv.Exec(t, db, "UPDATE toolgate.store_identity SET id = 'someoneelse'")
	if _, err := s.UseToken(ctx, "a", exp); !errors.Is(err, core.ErrStoreLost) {
		t.Fatalf("UseToken with another identity in the database = %v, want core.ErrStoreLost", err)
	}
	if _, err := s.StoreID(ctx); !errors.Is(err, core.ErrStoreLost) {
		t.Errorf("StoreID after the ledger found another store = %v, want core.ErrStoreLost", err)
	}
	var n int
	s.pool.QueryRow(ctx, "SELECT count(*) FROM toolgate.spent_tokens").Scan(&n)
	if n != 0 {
		t.Errorf("a spend was recorded in the other store (%d rows)", n)
	}
	srv.Exec(t, db, "UPDATE toolgate.store_identity SET id = $1", s.id)
	if first, err := s.UseToken(ctx, "a", exp); err != nil || !first {
		t.Fatalf("UseToken with the store back = %v, %v", first, err)
	}
	if id, err := s.StoreID(ctx); err != nil || id != s.id {
		t.Errorf("StoreID with the store back = %q, %v", id, err)
	}

	srv.Exec(t, db, "DROP SCHEMA toolgate CASCADE")
	if _, err := s.UseToken(ctx, "b", exp); !errors.Is(err, core.ErrStoreLost) {
		t.Fatalf("UseToken with the schema dropped = %v, want core.ErrStoreLost", err)
	}
}

// OP-5: the DSN's password reaches no error: not a parse error, not a connection
// error, not a server's refusal.
func TestPasswordNeverInErrors(t *testing.T) {
	const pw = "s3cr3t-Passw0rd-xyz"
	closed := closedAddr(t)
	srv := pgtest.Shared(t)
	dsn := srv.NewDatabase(t)
	u, _ := url.Parse(dsn)
	u.User = url.UserPassword("nobody", pw)
	wrongUser := u.String()
	for name, spec := range map[string]string{
		"refused":        "postgres://tg:" + pw + "@" + closed + "/toolgate?sslmode=disable",
		"query password": "postgresql://tg@" + closed + "/toolgate?sslmode=disable&password=" + pw,
		"unknown role":   wrongUser,
		"bad option":     "postgres://tg:" + pw + "@" + closed + "/toolgate?sslmode=bogus",
		"bad url":        "postgres://tg:" + pw + "@[::1/toolgate",
		"bad port":       "postgres://tg:" + pw + "@localhost:99999999/toolgate",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Open(context.Background(), spec)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			if strings.Contains(err.Error(), pw) || strings.Contains(fmt.Sprintf("%+v", err), pw) {
				t.Errorf("the password is in the error: %v", err)
			}
		})
	}
}

// closedAddr is a loopback host:port nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// OP-5: a server that is down at start fails Open at once, with an error
// that wraps core.ErrStoreUnavailable and names host and port.
func TestDownAtStartOP5(t *testing.T) {
	addr := closedAddr(t)
	start := time.Now()
	_, err := Open(context.Background(), "postgres://tg:pw-123456@"+addr+"/toolgate?sslmode=disable")
	if !errors.Is(err, core.ErrStoreUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Open with the server down = %v, want core.ErrStoreUnavailable naming %s", err, addr)
	}
	if d := time.Since(start); d > connectTimeout+2*time.Second {
		t.Errorf("Open took %v to fail", d)
	}
}

// CF-3, CF-4, OP-5: the server goes away while the store is open: spends
// fail within seconds with core.ErrStoreUnavailable and record nothing;
// reads of the identity keep answering; once the server is back the pool
// reconnects by itself and the next spend works, the earlier ones still
// spent.
func TestServerRestartOP5(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t, nil)
	// Trust authentication ignores the password; it is here to be kept
	// out of the errors.
	const pw = "restart-Passw0rd-xyz"
	u, _ := url.Parse(srv.NewDatabase(t))
	u.User = url.UserPassword("postgres", pw)
	s := mustOpen(t, u.String())
	exp := time.Now().Add(time.Hour)
	if first, err := s.UseToken(ctx, "before", exp); err != nil || !first {
		t.Fatal(first, err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.UseToken(ctx, "while-down", exp); !errors.Is(err, core.ErrStoreUnavailable) {
		t.Fatalf("UseToken with the server down = %v, want core.ErrStoreUnavailable", err)
	} else if strings.Contains(err.Error(), "sslmode") || strings.Contains(err.Error(), pw) {
		t.Errorf("error shows the DSN or its password: %v", err)
	}
	if d := time.Since(start); d > 2*connectTimeout {
		t.Errorf("a spend with the server down took %v to fail", d)
	}
	if _, err := s.StoreID(ctx); err != nil {
		t.Errorf("StoreID with the server down: %v (it must not make a replica look lost)", err)
	}
	if err := s.AppendAudit(ctx, storetest.FullAuditRecord(time.Now(), "down")); !errors.Is(err, core.ErrStoreUnavailable) || strings.Contains(err.Error(), pw) {
		t.Errorf("AppendAudit with the server down = %v, want core.ErrStoreUnavailable without the password", err)
	}
	if _, err := s.Approvals(ctx); !errors.Is(err, core.ErrStoreUnavailable) || strings.Contains(err.Error(), pw) {
		t.Errorf("Approvals with the server down = %v, want core.ErrStoreUnavailable without the password", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if first, err := s.UseToken(ctx, "after", exp); err != nil || !first {
		t.Fatalf("first spend after the restart = %v, %v; want the pool to have reconnected", first, err)
	}
	for _, id := range []string{"before", "after"} {
		if first, err := s.UseToken(ctx, id, exp); err != nil || first {
			t.Errorf("%s spent again after the restart: first=%v, %v", id, first, err)
		}
	}
	if first, err := s.UseToken(ctx, "while-down", exp); err != nil || !first {
		t.Errorf("the spend that failed while down was recorded after all: first=%v, %v", first, err)
	}
}

// OP-5: A restart with connections idle for less than the pool's ping interval:
// the dead connection fails, the store retries once on a new one.
func TestRestartRetriesOnFreshConnectionOP5(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t, nil)
	s := mustOpen(t, srv.NewDatabase(t))
	if err := s.PutApproval(ctx, core.Approval{Source: "s", RemoteName: "r", Fingerprint: "f", Decision: core.DecisionApproved}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Approvals(ctx); err != nil || len(a) != 1 {
		t.Fatalf("Approvals right after a restart = %v, %v", a, err)
	}
	if first, err := s.UseToken(ctx, "x", time.Now().Add(time.Hour)); err != nil || !first {
		t.Fatalf("UseToken right after a restart = %v, %v", first, err)
	}
}

// OP-5, CF-3: a server that takes connections and never answers (a hung
// host, a black-holed route) fails Open, and a spend, within the connect
// timeout, not at some TCP timeout minutes later.
func TestHungServerBoundedOP5(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	start := time.Now()
	_, err = Open(context.Background(), "postgres://tg@"+ln.Addr().String()+"/toolgate?sslmode=disable")
	if !errors.Is(err, core.ErrStoreUnavailable) {
		t.Fatalf("Open against a server that never answers = %v, want core.ErrStoreUnavailable", err)
	}
	if d := time.Since(start); d > connectTimeout+3*time.Second {
		t.Errorf("Open took %v to give up, want about the connect timeout (%v)", d, connectTimeout)
	}
}

// OP-6: AppendAudit returns once its record is committed, so another
// replica's handle sees it at once; a queued record reaches the database
// moments later without anybody asking, and the queueing handle sees its
// own queued records at once.
func TestQueuedAuditReachesOtherHandleOP6(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).NewDatabase(t)
	a, b := mustOpen(t, dsn), mustOpen(t, dsn)
	ids := func(s *Store) map[string]bool {
		t.Helper()
		recs, err := s.Audit(ctx, core.AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, r := range recs {
			out[r.CallID] = true
		}
		return out
	}
	if err := a.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), "queued")); err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, 5*time.Second, "the queued record to reach the database", func() bool { return ids(b)["queued"] })
	for i := range 20 {
		if err := a.QueueAudit(ctx, storetest.FullAuditRecord(time.Now(), fmt.Sprint("q", i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ids(a)); n != 21 {
		t.Errorf("Audit on the queueing handle sees %d records, want 21", n)
	}
}

// OP-5: A DSN naming a database that does not exist is a plain error at Open,
// naming it; not a store lost.
func TestMissingDatabaseOP5(t *testing.T) {
	srv := pgtest.Shared(t)
	_, err := Open(context.Background(), srv.DSN("no_such_db"))
	if err == nil || errors.Is(err, core.ErrStoreLost) || !strings.Contains(err.Error(), "no_such_db") {
		t.Errorf("Open of a missing database = %v; want an error naming it, not ErrStoreLost", err)
	}
}
