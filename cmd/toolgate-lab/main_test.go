package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/telemetry"
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

// lockedBuffer is an output the command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// OP-9, QB-2: the collector command serves OTLP/HTTP where it is told,
// counts what a real exporter sends it, and says how many spans it got
// when interrupted; a taken address is an error.
func TestCollectorCommandCountsSpans(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	var out, errOut lockedBuffer
	if code := run(t.Context(), []string{"collector", "--listen", addr}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "address already in use") {
		t.Errorf("on a taken address: exit %d, %q", code, errOut.String())
	}
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"collector", "--listen", addr}, &out, &errOut) }()
	for i := 0; !strings.Contains(out.String(), "OTLP/HTTP on"); i++ {
		if i > 1000 {
			cancel()
			t.Fatalf("the collector did not start: %q %q", out.String(), errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	p, err := telemetry.New(t.Context(), telemetry.Settings{Endpoint: "http://" + addr, SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		_, span := p.Tracer().Start(t.Context(), "span")
		span.End()
	}
	if err := p.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if code := <-done; code != 0 || !strings.Contains(out.String(), "7 spans received") {
		t.Errorf("exit %d: %q %q", code, out.String(), errOut.String())
	}
}
