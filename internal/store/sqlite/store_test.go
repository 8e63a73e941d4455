package sqlite

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/store/storetest"
)

func tempPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "toolgate.db")
}

func mustOpen(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// OP-5: the embedded store keeps the contract the in-memory one is tested
// against, on a real file.
func TestConformanceOP5(t *testing.T) {
	storetest.StoreConformance(t, func(t *testing.T) core.Store {
		s, err := Open(context.Background(), tempPath(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// OP-5, CF-3, CF-4: two handles on one file, as two gateway processes
// have, share one ledger, identity, approvals, audit log and secret check.
func TestSharedConformanceOP5(t *testing.T) {
	storetest.SharedConformance(t, func(t *testing.T) (core.Store, core.Store) {
		path := tempPath(t)
		a, err := Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open(context.Background(), path)
		if err != nil {
			_ = a.Close()
			t.Fatal(err)
		}
		return a, b
	})
}

// OP-5, RV-4, CF-4: approvals, spent tokens and the audit log survive a
// restart; ids that expired long ago are forgotten when the store opens.
func TestPersistsAcrossReopenOP5RV4(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	s := mustOpen(t, path)
	now := time.Now()
	appr := core.Approval{Source: "github", RemoteName: "create_issue", Fingerprint: "sha256:ab", Decision: core.DecisionApproved,
		By: "alice", At: now}
	if err := s.PutApproval(ctx, appr); err != nil {
		t.Fatal(err)
	}
	for id, exp := range map[string]time.Time{
		"live": now.Add(time.Hour),
		"old":  now.Add(-core.SpentTokenGrace - time.Hour),
	} {
		if first, err := s.UseToken(ctx, id, exp); err != nil || !first {
			t.Fatalf("UseToken(%s) = %v, %v", id, first, err)
		}
	}
	rec := storetest.FullAuditRecord(now, "call-1")
	if err := s.AppendAudit(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, path)
	got, err := s.Approvals(ctx)
	if err != nil || len(got) != 1 || got[0].Fingerprint != appr.Fingerprint || !got[0].At.Equal(appr.At) || got[0].By != "alice" {
		t.Errorf("approvals after reopen = %+v, %v; want [%+v]", got, err, appr)
	}
	if first, err := s.UseToken(ctx, "live", now.Add(time.Hour)); err != nil || first {
		t.Errorf("a token spent before the restart was accepted again (%v, %v): CF-4 broken across restarts", first, err)
	}
	if first, err := s.UseToken(ctx, "old", now.Add(-core.SpentTokenGrace-time.Hour)); err != nil || !first {
		t.Errorf("an id expired long ago was not pruned at open (first=%v, %v)", first, err)
	}
	recs, err := s.Audit(ctx, core.AuditQuery{})
	if err != nil || len(recs) != 1 || recs[0].CallID != "call-1" || !recs[0].Time.Equal(now) {
		t.Errorf("audit after reopen = %+v, %v", recs, err)
	}
}

// CF-4: two handles on one file (as two gateway processes would have) race
// for the same tokens; each token has exactly one first use.
func TestUseTokenTwoHandlesCF4(t *testing.T) {
	path := tempPath(t)
	a, b := mustOpen(t, path), mustOpen(t, path)
	for round := range 5 {
		id := fmt.Sprintf("tok-%d", round)
		if wins := storetest.RaceUseToken(t, id, 50, a, b); wins != 1 {
			t.Fatalf("round %d: %d first uses across two handles, want exactly 1", round, wins)
		}
	}
}

const helperEnv = "TOOLGATE_SQLITESTORE_HELPER"

// CF-4: separate processes racing on one file. Each helper process spends
// the same ids and prints the ones it won; every id must be won once.
func TestUseTokenTwoProcessesCF4(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := tempPath(t)
	mustOpen(t, path) // create and migrate once, so the helpers only race on tokens
	const procs, ids = 3, 150
	outs := make([]bytes.Buffer, procs)
	var cmds []*exec.Cmd
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), helperEnv+"="+path, helperEnv+"_IDS="+strconv.Itoa(ids))
		cmd.Stdout = &outs[i]
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	wins := map[string]int{}
	for i := range outs {
		for line := range strings.Lines(outs[i].String()) {
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), "WON "); ok {
				wins[id]++
			}
		}
	}
	for i := range ids {
		id := fmt.Sprint("proc-tok-", i)
		if wins[id] != 1 {
			t.Errorf("%s: %d first uses across %d processes, want exactly 1", id, wins[id], procs)
		}
	}
}

// TestHelperProcess is the child of TestUseTokenTwoProcessesCF4.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("only run as a helper process")
	}
	n, _ := strconv.Atoi(os.Getenv(helperEnv + "_IDS"))
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exp := time.Now().Add(time.Hour)
	for i := range n {
		id := fmt.Sprint("proc-tok-", i)
		first, err := s.UseToken(context.Background(), id, exp)
		if err != nil {
			t.Fatal(err)
		}
		if first {
			fmt.Printf("WON %s\n", id)
		}
	}
}

// dirState is every file in a directory with its bytes and mtime, to prove
// a refused store was left alone (no reset, no stray -wal or -journal).
type dirState map[string]string

func snapshotDir(t *testing.T, dir string) dirState {
	t.Helper()
	st := dirState{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		st[e.Name()] = fmt.Sprintf("%x %d %s %v", sum[:8], len(b), fi.ModTime().Format(time.RFC3339Nano), fi.Mode())
	}
	return st
}

func (before dirState) mustEqual(t *testing.T, after dirState) {
	t.Helper()
	var diffs []string
	for name, b := range before {
		if a, ok := after[name]; !ok {
			diffs = append(diffs, name+": removed")
		} else if a != b {
			diffs = append(diffs, fmt.Sprintf("%s: %s → %s", name, b, a))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			diffs = append(diffs, name+": created")
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		t.Errorf("a refused store was modified:\n%s", strings.Join(diffs, "\n"))
	}
}

func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=10000") // wait for a lock, never fail on one
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// waitMtimeTick makes any later write show in the mtime even on file systems
// with coarse timestamps.
func waitMtimeTick() { time.Sleep(20 * time.Millisecond) }

// OP-5: a file from a newer toolgate is refused, by name and version, and
// neither reset nor downgraded.
func TestRefusesNewerSchemaOP5(t *testing.T) {
	path := tempPath(t)
	s := mustOpen(t, path)
	if err := s.PutApproval(context.Background(), core.Approval{Source: "s", RemoteName: "r", Fingerprint: "f", Decision: core.DecisionApproved}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	rawExec(t, path, "PRAGMA user_version = 999")
	waitMtimeTick()
	before := snapshotDir(t, filepath.Dir(path))

	for range 2 { // and again: the first refusal must not have "fixed" anything
		_, err := Open(context.Background(), path)
		if !errors.Is(err, core.ErrStoreTooNew) {
			t.Fatalf("Open = %v, want ErrStoreTooNew", err)
		}
		for _, want := range []string{path, "999", fmt.Sprint("up to ", len(migrations))} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	}
	before.mustEqual(t, snapshotDir(t, filepath.Dir(path)))
}

// OP-5: files that are not a healthy toolgate store fail with
// ErrStoreCorrupt, naming the path, and are left as they were.
func TestRefusesCorruptFilesOP5(t *testing.T) {
	random := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b)
		return b
	}
	realDB := func(t *testing.T) []byte {
		t.Helper()
		path := tempPath(t)
		s := mustOpen(t, path)
		for i := range 400 {
			if err := s.AppendAudit(context.Background(), storetest.FullAuditRecord(time.Now(), fmt.Sprint("call-", i))); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 8*4096 {
			t.Fatalf("fixture db is only %d bytes; too small to truncate meaningfully", len(b))
		}
		return b
	}
	otherApp := func(t *testing.T) []byte {
		t.Helper()
		path := tempPath(t)
		rawExec(t, path, "CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('hello')")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := map[string]func(t *testing.T) []byte{
		"random bytes":               func(*testing.T) []byte { return random(10000) },
		"sqlite magic, then garbage": func(*testing.T) []byte { return append([]byte("SQLite format 3\x00"), random(10000)...) },
		"text file":                  func(*testing.T) []byte { return []byte("upstreams: []\n") },
		"truncated real db":          func(t *testing.T) []byte { b := realDB(t); return b[:len(b)/2] },
		"real db, header only":       func(t *testing.T) []byte { return realDB(t)[:100] },
		"real db, ledger pages overwritten": func(t *testing.T) []byte {
			b := realDB(t)
			copy(b[2*4096:], random(2*4096))
			return b
		},
		// Only an integrity check finds this: opening reads no audit page.
		"real db, audit pages overwritten": func(t *testing.T) []byte {
			b := realDB(t)
			mid := len(b) / 2 / 4096 * 4096
			copy(b[mid:], random(2*4096))
			return b
		},
		"another application's db": otherApp,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := tempPath(t)
			if err := os.WriteFile(path, content(t), 0o600); err != nil {
				t.Fatal(err)
			}
			waitMtimeTick()
			before := snapshotDir(t, filepath.Dir(path))
			s, err := Open(context.Background(), path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded on a file that is not a healthy toolgate store")
			}
			if !errors.Is(err, core.ErrStoreCorrupt) {
				t.Fatalf("Open = %v, want ErrStoreCorrupt", err)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			before.mustEqual(t, snapshotDir(t, filepath.Dir(path)))
		})
	}
}

// OP-5: an existing empty file (touch toolgate.db) is a new store, not a
// corrupt one.
func TestEmptyFileIsNewStore(t *testing.T) {
	path := tempPath(t)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, path)
	if _, err := s.UseToken(context.Background(), "x", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
}

// OP-5: the store runs in WAL mode with the per-connection settings applied.
func TestPragmasOP5(t *testing.T) {
	s := mustOpen(t, tempPath(t))
	for _, c := range []struct {
		db   *sql.DB
		q    string
		want string
	}{
		{s.w, "PRAGMA journal_mode", "wal"},
		{s.r, "PRAGMA journal_mode", "wal"},
		{s.w, "PRAGMA foreign_keys", "1"},
		{s.w, "PRAGMA synchronous", "1"}, // NORMAL
		{s.w, "PRAGMA busy_timeout", fmt.Sprint(busyTimeout.Milliseconds())},
		{s.r, "PRAGMA query_only", "1"},
		{s.w, "PRAGMA user_version", fmt.Sprint(len(migrations))},
		{s.w, "PRAGMA application_id", fmt.Sprint(applicationID)},
	} {
		var got string
		if err := c.db.QueryRow(c.q).Scan(&got); err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		if got != c.want {
			t.Errorf("%s = %s, want %s", c.q, got, c.want)
		}
	}
	if _, err := s.r.Exec("DELETE FROM audit"); err == nil {
		t.Error("the read pool can write")
	}
}

// OP-5: a new store and its directory are private to the user.
func TestCreatesPrivateFilesOP5(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	dir := filepath.Join(t.TempDir(), "nested", "toolgate")
	path := filepath.Join(dir, "toolgate.db")
	mustOpen(t, path)
	for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s mode = %v, want %v", p, fi.Mode(), want)
		}
	}
}

// A path with characters that mean something in a URI still names the file.
func TestOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a b?c#d%20e")
	path := filepath.Join(dir, "store.db")
	s := mustOpen(t, path)
	if err := s.AppendAudit(context.Background(), storetest.FullAuditRecord(time.Now(), "c")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("store not at %q: %v", path, err)
	}
}

// OP-5: gateways started together on a new file migrate it once.
func TestConcurrentOpenOfNewFile(t *testing.T) {
	path := tempPath(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), path)
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	s := mustOpen(t, path)
	var v int
	if err := s.w.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != len(migrations) {
		t.Errorf("user_version = %d, %v; want %d", v, err, len(migrations))
	}
}

// OP-6: argument values never reach the file. The gate stores only the hash
// of the canonical arguments; a marker used only as an argument value must
// not appear in the store's bytes, while the hash and a marker placed in a
// stored field must (which shows the search would find the value if it were
// there).
func TestArgumentValuesNeverStoredOP6(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	s := mustOpen(t, path)
	argMarker := "ARGVALUE-" + rand.Text()
	toolMarker := "TOOLNAME-" + rand.Text()
	args := []byte(`{"password":"` + argMarker + `"}`)
	sum := sha256.Sum256(args)
	hash := "sha256:" + hex.EncodeToString(sum[:])

	rec := storetest.FullAuditRecord(time.Now(), "call-1")
	rec.Tool, rec.ArgsHash = toolMarker, hash
	if err := s.AppendAudit(ctx, rec); err != nil {
		t.Fatal(err)
	}
	files := func() []byte {
		var all []byte
		for _, suffix := range []string{"", "-wal", "-journal"} {
			b, err := os.ReadFile(path + suffix)
			if err == nil {
				all = append(all, b...)
			}
		}
		return all
	}
	// While open (the record may still be in the WAL) and after the
	// checkpoint at close.
	for _, when := range []string{"open", "closed"} {
		b := files()
		if bytes.Contains(b, []byte(argMarker)) {
			t.Errorf("%s: an argument value is stored in clear", when)
		}
		if !bytes.Contains(b, []byte(hash)) || !bytes.Contains(b, []byte(toolMarker)) {
			t.Errorf("%s: the record's own fields are not in the store's bytes: the search is not looking at the store", when)
		}
		s.Close()
	}
}

func TestDefaultPath(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	got, err := DefaultPath()
	if want := filepath.Join(data, "toolgate", "toolgate.db"); err != nil || got != want {
		t.Errorf("with XDG_DATA_HOME: DefaultPath() = %q, %v; want %q", got, err, want)
	}
	if runtime.GOOS != "linux" {
		return
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	want := filepath.Join(home, ".local", "share", "toolgate", "toolgate.db")
	for _, xdg := range []string{"", "relative/dir"} { // relative values are ignored (XDG spec)
		t.Setenv("XDG_DATA_HOME", xdg)
		if got, err := DefaultPath(); err != nil || got != want {
			t.Errorf("XDG_DATA_HOME=%q: DefaultPath() = %q, %v; want %q", xdg, got, err, want)
		}
	}
}

// CF-3: the store's identity lives in the file: every handle on it, now
// or after a restart, reads the same one; another file has another. A file
// of schema version 1, from before identities, gets one when it is opened.
func TestStoreIDInTheFileCF3(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	s := mustOpen(t, path)
	id, err := s.StoreID(ctx)
	if err != nil || len(id) != 32 {
		t.Fatalf("StoreID = %q, %v; want 32 hex digits", id, err)
	}
	second := mustOpen(t, path)
	if got, err := second.StoreID(ctx); err != nil || got != id {
		t.Errorf("a second handle's StoreID = %q, %v; want %q", got, err, id)
	}
	_ = second.Close()
	_ = s.Close()
	if got, err := mustOpen(t, path).StoreID(ctx); err != nil || got != id {
		t.Errorf("StoreID after reopening = %q, %v; want %q", got, err, id)
	}
	if got, err := mustOpen(t, tempPath(t)).StoreID(ctx); err != nil || got == id {
		t.Errorf("another file's StoreID = %q, %v; want one other than %q", got, err, id)
	}

	old := tempPath(t)
	rawExec(t, old, migrations[0], fmt.Sprintf("PRAGMA user_version = 1; PRAGMA application_id = %d", applicationID))
	if got, err := mustOpen(t, old).StoreID(ctx); err != nil || len(got) != 32 || got == id {
		t.Errorf("a version 1 file's StoreID = %q, %v; want a new identity", got, err)
	}
}

// CF-3, CF-4: a store file deleted while a handle is open, or replaced by
// another file: the handle's writes would reach no later process, so the
// ledger records nothing, and StoreID, every write and every read (which
// could reach the other file) fail with core.ErrStoreLost naming the path.
// With the file back at its path the handle works again.
func TestStoreLostCF3(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.db")
	s := mustOpen(t, path)
	appr := core.Approval{Source: "s", RemoteName: "r", Fingerprint: "f", Decision: core.DecisionApproved}
	if err := s.PutApproval(ctx, appr); err != nil {
		t.Fatal(err)
	}
	uses := func() map[string]error {
		errs := map[string]error{}
		_, errs["StoreID"] = s.StoreID(ctx)
		_, errs["UseToken"] = s.UseToken(ctx, "tok", time.Now().Add(time.Minute))
		errs["AppendAudit"] = s.AppendAudit(ctx, storetest.FullAuditRecord(time.Now(), "call"))
		errs["PutApproval"] = s.PutApproval(ctx, appr)
		errs["DeleteApproval"] = s.DeleteApproval(ctx, "s", "r")
		_, errs["Approvals"] = s.Approvals(ctx)
		_, errs["Audit"] = s.Audit(ctx, core.AuditQuery{})
		return errs
	}
	lost := func(how string) {
		t.Helper()
		for op, err := range uses() {
			if !errors.Is(err, core.ErrStoreLost) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s after the file was %s = %v, want core.ErrStoreLost naming the file", op, how, err)
			}
		}
	}

	kept := filepath.Join(dir, "kept.db")
	if err := os.Rename(path, kept); err != nil {
		t.Fatal(err)
	}
	lost("moved away")
	other := filepath.Join(dir, "other.db")
	_ = mustOpen(t, other).Close()
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	lost("replaced")
	if err := os.Rename(kept, path); err != nil {
		t.Fatal(err)
	}
	for op, err := range uses() {
		if err != nil {
			t.Errorf("%s with the file back: %v", op, err)
		}
	}
	if first, err := s.UseToken(ctx, "tok", time.Now().Add(time.Minute)); err != nil || first {
		t.Errorf("tok was spent while the file was away: UseToken = %v, %v", first, err)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	lost("deleted")
}

// TestPageCacheBoundsQB5: every connection, the writer and each reader the
// pool opens, runs with its own page-cache bound, not SQLite's 2,000 KiB.
func TestPageCacheBoundsQB5(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cacheSize := func(db *sql.DB) int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := cacheSize(s.w); got != -writerCacheKiB {
		t.Errorf("writer cache_size = %d, want %d", got, -writerCacheKiB)
	}
	// Hold several readers at once, so the pool opens more than one.
	var conns []*sql.Conn
	for range maxReaders {
		c, err := s.r.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		var n int
		if err := c.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != -readerCacheKiB {
			t.Errorf("reader %d cache_size = %d, want %d", i, n, -readerCacheKiB)
		}
		c.Close()
	}
	// Reading still works through the smaller caches.
	if err := s.AppendAudit(ctx, core.AuditRecord{Tool: "t", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	recs, err := s.Audit(ctx, core.AuditQuery{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("Audit = %d records, %v; want 1", len(recs), err)
	}
}
