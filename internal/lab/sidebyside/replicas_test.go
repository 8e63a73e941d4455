package sidebyside

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/lab/rrproxy"
	"github.com/toolgate/toolgate/internal/pgtest"
)

func newRRProxy(backends []string) (ReplicaProxy, error) { return rrproxy.New(backends, nil) }

// OP-5, QB-2: a short --replicas run measures all three paths without a
// failed call (the three replicas serve sessions spread over them by the
// proxy), and leaves no schema behind. No figure is asserted: the machine's
// timings are not the test's.
func TestRunReplicasOP5(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and five gateways")
	}
	srv := pgtest.Start(t, nil)
	dsn := srv.NewDatabase(t)
	res, err := RunReplicas(t.Context(), ReplicasConfig{Postgres: dsn, Replicas: 3, Calls: 30, Sessions: 4, Seconds: 0.6, Rounds: 3, CPUs: 2, NewProxy: newRRProxy})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Paths) != 4 || res.Errors != 0 {
		t.Fatalf("paths %+v, %d errors", res.Paths, res.Errors)
	}
	for _, p := range res.Paths {
		if p.CallsPerSec <= 0 || len(p.Rounds) != 3 || p.SeqP50 <= 0 {
			t.Errorf("%s: %+v", p.Name, p)
		}
	}
	if res.PostgresRatio <= 0 || res.ReplicasRatio <= 0 || res.ReplicasSQLite <= 0 || res.ReplicasProxied <= 0 {
		t.Errorf("ratios %v %v %v", res.PostgresRatio, res.ReplicasRatio, res.ReplicasSQLite)
	}
	var b strings.Builder
	PrintReplicas(&b, res)
	if !strings.Contains(b.String(), "3 replicas, PostgreSQL, proxy") || strings.Contains(b.String(), "postgres://") {
		t.Errorf("table:\n%s", b.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'toolgate_bench_%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d bench schemas left (%v)", n, err)
	}

	if _, err := RunReplicas(t.Context(), ReplicasConfig{Replicas: 3, Calls: 1, Sessions: 1, Seconds: 1, Rounds: 1}); err == nil || !strings.Contains(err.Error(), "--postgres") {
		t.Errorf("without a database: %v", err)
	}
}
