package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// startupServerEnv, set to an address, makes the test binary a small MCP
// endpoint there that lists its tool only after listDelay, standing in for
// a gateway whose upstreams are still connecting.
const startupServerEnv = "TOOLGATE_LAB_TEST_STARTUP_ADDR"

const listDelay = 300 * time.Millisecond

func TestMain(m *testing.M) {
	if addr := os.Getenv(startupServerEnv); addr != "" {
		serveStartupHelper(addr)
		return
	}
	os.Exit(m.Run())
}

func serveStartupHelper(addr string) {
	began := time.Now()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"h","version":"1"}}}`, m.ID)
		case "tools/list":
			tools := `[]`
			if time.Since(began) >= listDelay && r.Header.Get("Mcp-Session-Id") == "s1" {
				tools = `[{"name":"late_echo","inputSchema":{"type":"object"}}]`
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}`, m.ID, tools)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	_ = http.ListenAndServe(addr, h)
}

// QB-5: startup times a real process from its start to a tools/list that
// names the tool, not to the first answer: the helper lists nothing for its
// first 300 ms, so no run can be shorter. Each run's process is stopped.
func TestStartupWaitsForTheToolQB5(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process groups")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv(startupServerEnv, addr)
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"startup", "--runs", "2", "--json", "--want", "late_echo",
		"--url", "http://" + addr + "/mcp", "--", os.Args[0], "-test.run=^$"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got struct {
		MedianMs float64   `json:"medianMs"`
		RunsMs   []float64 `json:"runsMs"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(got.RunsMs) != 2 {
		t.Fatalf("runs = %v, want 2", got.RunsMs)
	}
	for _, ms := range got.RunsMs {
		if ms < float64(listDelay.Milliseconds()) {
			t.Errorf("a run took %.1f ms, before the tool was listed", ms)
		}
	}
	// The helper of the last run is gone: its port is free again.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("a helper still listens on %s after the run", addr)
	}
}

// Bad command lines are usage errors, naming what is missing.
func TestStartupUsage(t *testing.T) {
	for _, args := range [][]string{
		{"startup"},
		{"startup", "--url", "http://127.0.0.1:1/mcp"},
		{"startup", "--", "true"},
		{"startup", "--runs", "0", "--url", "http://127.0.0.1:1/mcp", "--", "true"},
	} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--url") {
			t.Errorf("%q: exit %d, %q", args, code, errOut.String())
		}
	}
}
