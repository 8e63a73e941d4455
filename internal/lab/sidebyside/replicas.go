package sidebyside

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/bench"
	"github.com/toolgate/toolgate/internal/gateway"
)

// ReplicasConfig is `toolgate-lab replicas` (OP-5): calls per second of
// one gateway on SQLite, one on PostgreSQL (directly and behind the proxy),
// and three on one PostgreSQL schema behind a round-robin proxy, in
// interleaved rounds.
type ReplicasConfig struct {
	// Postgres is a postgres:// URL of a database the bench may create and
	// drop schemas in (toolgate_bench_*); never printed.
	Postgres string  `json:"-"`
	Replicas int     `json:"replicas"`
	Calls    int     `json:"calls"`    // sequential calls per path, over all rounds
	Sessions int     `json:"sessions"` // concurrent sessions per path
	Seconds  float64 `json:"seconds"`  // concurrent phase per path, over all rounds
	Rounds   int     `json:"rounds"`
	CPUs     int     `json:"cpus"`
	// Progress, if not nil, gets a line per phase.
	Progress io.Writer `json:"-"`
	// NewProxy makes the round-robin proxy the replicas are measured
	// behind (toolgate-lab passes internal/lab/rrproxy's).
	NewProxy func(backends []string) (ReplicaProxy, error) `json:"-"`
}

// ReplicaProxy sends each request to the next of its backends.
type ReplicaProxy interface {
	http.Handler
	CloseIdleConnections()
}

// ReplicaPath is what was measured on one path.
type ReplicaPath struct {
	Name     string `json:"name"`
	Store    string `json:"store"`
	Replicas int    `json:"replicas"`
	// Proxied: behind the round-robin proxy (rrproxy).
	Proxied bool    `json:"proxied"`
	SeqP50  float64 `json:"seqP50Us"`
	SeqP99  float64 `json:"seqP99Us"`
	// CallsPerSec is the median over rounds of the concurrent phase's rate;
	// Rounds holds each round's.
	CallsPerSec float64   `json:"callsPerSec"`
	ConcP50     float64   `json:"concP50Us"`
	ConcP99     float64   `json:"concP99Us"`
	Rounds      []float64 `json:"roundsCallsPerSec"`
	Errors      int       `json:"errors"`
	LastError   string    `json:"lastError,omitempty"`
}

// ReplicasResult is a replicas run. Ratios are of calls/s, per round,
// median over rounds.
type ReplicasResult struct {
	Config ReplicasConfig `json:"config"`
	// Paths: SQLite, PostgreSQL, PostgreSQL behind a one-backend proxy,
	// the replicas behind the proxy.
	Paths         []ReplicaPath `json:"paths"`
	PostgresRatio float64       `json:"postgresOverSqlite"`
	ReplicasRatio float64       `json:"replicasOverPostgres"`
	// ReplicasProxied is the replicas over one gateway behind the same
	// proxy: what the replicas change, the hop aside.
	ReplicasProxied float64 `json:"replicasOverProxiedPostgres"`
	ReplicasSQLite  float64 `json:"replicasOverSqlite"`
	Errors          int     `json:"errors"`
	ElapsedSeconds  float64 `json:"elapsedSeconds"`
	Method          string  `json:"method"`
	Note            string  `json:"note"`
}

const replicasMethod = "Every path in every round: sequential calls, then the sessions concurrently; paths interleaved. " +
	"Gateways are assembled as toolgate serve does (API key, role policy, validation, review pin, audit into their store), " +
	"in this process with the client, the HTTP echo upstream and the proxy. The replicas share one PostgreSQL schema; " +
	"the proxy (rrproxy) sends each request to the next replica, so a session's requests spread over all of them; " +
	"one PostgreSQL gateway is also measured behind a proxy of its own, to tell the hop from the replicas. " +
	"Ratios are of calls/s per round, median over rounds."

// DefaultReplicasConfig follows DefaultConfig's sizes, with concurrent
// phases twice as long: a store's commits make short phases noisy.
func DefaultReplicasConfig(quick bool) ReplicasConfig {
	c := bench.DefaultConfig(quick)
	return ReplicasConfig{Replicas: 3, Calls: c.Calls, Sessions: c.Sessions, Seconds: 2 * c.Seconds, Rounds: max(3, c.Rounds), CPUs: c.CPUs}
}

// RunReplicas sets up the three paths, measures them and tears them down,
// dropping the schemas it made.
func RunReplicas(ctx context.Context, cfg ReplicasConfig) (*ReplicasResult, error) {
	if cfg.Postgres == "" {
		return nil, errors.New("replicas needs a PostgreSQL database: --postgres postgres://…")
	}
	if cfg.NewProxy == nil {
		return nil, errors.New("replicas needs a round-robin proxy (ReplicasConfig.NewProxy)")
	}
	if cfg.Replicas < 1 || cfg.Rounds < 1 || cfg.Sessions < 1 || cfg.Calls < 1 || cfg.Seconds <= 0 {
		return nil, errors.New("replicas, rounds, sessions, calls and seconds must be positive")
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	started := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	tmp, err := os.MkdirTemp("", "toolgate-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	hc := bench.HTTPClient(cfg.Sessions)
	defer hc.CloseIdleConnections()

	var servers sync.WaitGroup
	defer servers.Wait() // after cancel: the servers stop
	defer cancel()
	echoURL, err := bench.ServeEcho(ctx, &servers)
	if err != nil {
		return nil, err
	}
	ups := []config.Upstream{bench.EchoUpstream(echoURL)}

	suffix := bench.RandomHex(6)
	one, many := "toolgate_bench_"+suffix+"_1", "toolgate_bench_"+suffix+"_n"
	oneDSN, err := withSchema(cfg.Postgres, one)
	if err != nil {
		return nil, err
	}
	manyDSN, _ := withSchema(cfg.Postgres, many)
	defer dropSchemas(cfg.Postgres, one, many)

	key := bench.RandomHex(24)
	secret := config.Secret(bench.RandomHex(32)) // replicas on one store share it (CF-3)
	start := func(store string) (*gateway.Gateway, error) {
		gcfg, err := bench.GatewayConfig(key, store, ups)
		if err != nil {
			return nil, err
		}
		gcfg.Gateway.Confirm.Secret = secret
		gw, err := gateway.New(ctx, gcfg, nil)
		if err != nil {
			return nil, err
		}
		if err := gw.Start(ctx); err != nil {
			gw.Close(context.Background())
			return nil, fmt.Errorf("gateway start-up: %w", err)
		}
		url := "http://" + gw.Addr() + "/mcp"
		if err := bench.WaitForTools(ctx, hc, url, key, 1, 10*time.Second); err != nil {
			gw.Close(context.Background())
			return nil, err
		}
		return gw, nil
	}
	var gws []*gateway.Gateway
	defer func() {
		for _, g := range gws {
			g.Close(context.Background())
		}
	}()
	fmt.Fprintf(progress, "toolgate bench: starting a gateway on SQLite, one on PostgreSQL and %d replicas…\n", cfg.Replicas)
	var bases []string
	for i, store := range append([]string{filepath.Join(tmp, "toolgate.db"), oneDSN}, slices.Repeat([]string{manyDSN}, cfg.Replicas)...) {
		g, err := start(store)
		if err != nil {
			return nil, err
		}
		gws = append(gws, g)
		if i >= 2 {
			bases = append(bases, "http://"+g.Addr())
		}
	}
	// The replicas behind the proxy, and the one PostgreSQL gateway behind
	// a proxy of its own: the hop's cost, apart from the replicas'.
	serveProxy := func(bases []string) (string, error) {
		proxy, err := cfg.NewProxy(bases)
		if err != nil {
			return "", err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
		servers.Go(func() { _ = srv.Serve(ln) })
		context.AfterFunc(ctx, func() { _ = srv.Close(); proxy.CloseIdleConnections() })
		return "http://" + ln.Addr().String() + "/mcp", nil
	}
	replicasURL, err := serveProxy(bases)
	if err != nil {
		return nil, err
	}
	proxiedURL, err := serveProxy([]string{"http://" + gws[1].Addr()})
	if err != nil {
		return nil, err
	}

	res := &ReplicasResult{Config: cfg, Method: replicasMethod,
		Note: fmt.Sprintf("all gateways share this process's %d CPUs with the client and the upstream: replicas here add no CPU", cfg.CPUs)}
	paths := []struct {
		out ReplicaPath
		url string
		run *bench.Path
	}{
		{out: ReplicaPath{Name: "1 gateway, SQLite", Store: "sqlite", Replicas: 1}, url: "http://" + gws[0].Addr() + "/mcp"},
		{out: ReplicaPath{Name: "1 gateway, PostgreSQL", Store: "postgres", Replicas: 1}, url: "http://" + gws[1].Addr() + "/mcp"},
		{out: ReplicaPath{Name: "1 gateway, PostgreSQL, proxy", Store: "postgres", Replicas: 1, Proxied: true}, url: proxiedURL},
		{out: ReplicaPath{Name: fmt.Sprintf("%d replicas, PostgreSQL, proxy", cfg.Replicas), Store: "postgres", Replicas: cfg.Replicas, Proxied: true}, url: replicasURL},
	}
	warm := min(50, cfg.Calls/10+5)
	for i := range paths {
		p := &paths[i]
		fmt.Fprintf(progress, "toolgate bench: opening %d sessions on %s…\n", cfg.Sessions+1, p.out.Name)
		r, err := bench.NewPath(ctx, p.out.Name, func() (bench.Caller, error) { return bench.SessionCaller(ctx, hc, p.url, key, "http_echo") }, cfg.Sessions, warm)
		if err != nil {
			return nil, err
		}
		p.run = r
	}
	perRound := max(1, cfg.Calls/cfg.Rounds)
	phase := time.Duration(cfg.Seconds / float64(cfg.Rounds) * float64(time.Second))
	var pgOverSQLite, manyOverOne, manyOverProxied, manyOverSQLite []float64
	for round := range cfg.Rounds {
		fmt.Fprintf(progress, "toolgate bench: round %d of %d…\n", round+1, cfg.Rounds)
		for i := range paths {
			paths[i].run.RunSeq(ctx, perRound)
		}
		rates := make([]float64, len(paths))
		for i := range paths {
			rates[i] = paths[i].run.RunConc(ctx, phase)
			paths[i].out.Rounds = append(paths[i].out.Rounds, bench.Round1(rates[i]))
		}
		pgOverSQLite = append(pgOverSQLite, bench.Ratio(rates[1], rates[0]))
		manyOverOne = append(manyOverOne, bench.Ratio(rates[3], rates[1]))
		manyOverProxied = append(manyOverProxied, bench.Ratio(rates[3], rates[2]))
		manyOverSQLite = append(manyOverSQLite, bench.Ratio(rates[3], rates[0]))
	}
	for i := range paths {
		paths[i].run.EndSessions(ctx)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i := range paths {
		p := &paths[i]
		r := p.run.Result(p.out.Name)
		p.out.SeqP50, p.out.SeqP99 = r.Seq.P50, r.Seq.P99
		p.out.ConcP50, p.out.ConcP99 = r.Conc.P50, r.Conc.P99
		p.out.CallsPerSec = bench.Round1(bench.Median(p.out.Rounds))
		var lastErr error
		if p.out.Errors, lastErr = p.run.Failures(); lastErr != nil {
			p.out.LastError = lastErr.Error()
		}
		res.Errors += p.out.Errors
		res.Paths = append(res.Paths, p.out)
	}
	res.PostgresRatio, res.ReplicasRatio, res.ReplicasSQLite = bench.Median(pgOverSQLite), bench.Median(manyOverOne), bench.Median(manyOverSQLite)
	res.ReplicasProxied = bench.Median(manyOverProxied)
	res.ElapsedSeconds = bench.Round3(time.Since(started).Seconds())
	return res, nil
}

// withSchema is dsn with toolgate's ?schema= set to schema.
func withSchema(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// url's errors quote the URL, password included.
		return "", errors.New("--postgres: not a postgres:// URL")
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// dropSchemas removes what the bench made; bounded, best effort.
func dropSchemas(dsn string, schemas ...string) {
	u, err := url.Parse(dsn)
	if err != nil {
		return
	}
	q := u.Query()
	q.Del("schema")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		return
	}
	defer pool.Close()
	for _, s := range schemas {
		_, _ = pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+s+" CASCADE")
	}
}

// PrintReplicas writes res as a table.
func PrintReplicas(w io.Writer, res *ReplicasResult) {
	c := res.Config
	fmt.Fprintf(w, "toolgate-lab replicas — calls/s by store and replicas, %d rounds, %d sessions, %d CPUs\n\n", c.Rounds, c.Sessions, c.CPUs)
	fmt.Fprintf(w, "%-30s %10s %10s %12s %10s %10s  %-24s %s\n", "path", "seq p50", "seq p99", "conc call/s", "conc p50", "conc p99", "rounds (call/s)", "errors")
	for _, p := range res.Paths {
		fmt.Fprintf(w, "%-30s %10s %10s %12.0f %10s %10s  %-24s %d\n", p.Name, bench.FmtUs(p.SeqP50), bench.FmtUs(p.SeqP99), p.CallsPerSec,
			bench.FmtUs(p.ConcP50), bench.FmtUs(p.ConcP99), fmt.Sprint(p.Rounds), p.Errors)
	}
	fmt.Fprintf(w, "\ncalls/s ratios (per round, median): PostgreSQL ÷ SQLite %.2f; %d replicas ÷ 1 on PostgreSQL %.2f (÷ 1 behind the same proxy %.2f); %d replicas ÷ SQLite %.2f\n",
		res.PostgresRatio, c.Replicas, res.ReplicasRatio, res.ReplicasProxied, c.Replicas, res.ReplicasSQLite)
	fmt.Fprintf(w, "note: %s\n", res.Note)
	for _, p := range res.Paths {
		if p.LastError != "" {
			fmt.Fprintf(w, "%s: last error: %s\n", p.Name, p.LastError)
		}
	}
	fmt.Fprintf(w, "elapsed %.1fs\n", res.ElapsedSeconds)
}
