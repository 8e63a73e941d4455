package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/pgtest"
)

// OP-5, QB-2: replicas through the command, against a throwaway
// PostgreSQL given in the environment: one JSON object with the four paths
// and no failed call; without a database it says what it needs.
func TestBenchReplicasJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	t.Setenv(postgresEnv, "")
	if code := run(t.Context(), []string{"replicas"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--postgres") {
		t.Fatalf("without a database: exit %d, %q", code, errOut.String())
	}
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	t.Setenv(postgresEnv, dsn)
	out.Reset()
	errOut.Reset()
	code := run(t.Context(), []string{"replicas", "--json", "--calls", "12", "--sessions", "2", "--seconds", "0.3", "--rounds", "3"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, errOut.String())
	}
	var res struct {
		Paths []struct {
			Name        string    `json:"name"`
			CallsPerSec float64   `json:"callsPerSec"`
			Rounds      []float64 `json:"roundsCallsPerSec"`
		} `json:"paths"`
		Errors int `json:"errors"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Paths) != 4 || res.Errors != 0 {
		t.Fatalf("%v: %s", err, out.String())
	}
	for _, p := range res.Paths {
		if p.CallsPerSec <= 0 || len(p.Rounds) != 3 {
			t.Errorf("%s: %+v", p.Name, p)
		}
	}
	if strings.Contains(out.String()+errOut.String(), "postgres://") {
		t.Errorf("the database URL was printed:\n%s%s", out.String(), errOut.String())
	}
}

// Bad command lines are usage errors (exit 2) with a message, and reach
// no network: peers without --direct or --peer, malformed peers, negative
// sizes, unknown commands and flags.
func TestLabUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{}, {"sideways"}, {"peers"}, {"peers", "--direct", "http://127.0.0.1:1/mcp"},
		{"peers", "--peer", "noequals"}, {"peers", "--peer", "a=http://127.0.0.1:1/mcp,pid=x"},
		{"peers", "--direct", "http://127.0.0.1:1/mcp", "--peer", "a=http://127.0.0.1:1/mcp", "--calls", "-1"},
		{"replicas", "--rounds", "-2"}, {"replicas", "--bogus"}, {"replicas", "extra"},
	} {
		var out, errOut bytes.Buffer
		t.Setenv(postgresEnv, "")
		if code := run(context.Background(), args, &out, &errOut); code != 2 || out.Len()+errOut.Len() == 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and a message", args, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "replicas") {
		t.Errorf("--help: exit %d, %q", code, out.String())
	}
}
