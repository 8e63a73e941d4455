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
	"sync"
	"testing"
	"time"
)

// startupServerEnv, set to an address, makes the test binary a small MCP
// endpoint there that lists its tool only after listDelay, standing in for
// a gateway whose upstreams are still connecting.
const startupServerEnv = "TOOLGATE_LAB_TEST_STARTUP_ADDR"

const listDelay = 300 * time.Millisecond

// startupFailEnv, set, makes the test binary write its value to stderr and
// exit 1, as a gateway that cannot start does; startupForgetEnv, set, makes
// the endpoint refuse its first session with 404, as one that lost it.
const (
	startupFailEnv   = "TOOLGATE_LAB_TEST_STARTUP_FAIL"
	startupForgetEnv = "TOOLGATE_LAB_TEST_STARTUP_FORGET"
)

func TestMain(m *testing.M) {
	if msg := os.Getenv(startupFailEnv); msg != "" {
		fmt.Fprintln(os.Stderr, "noise before the reason")
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
	if addr := os.Getenv(startupServerEnv); addr != "" {
		serveStartupHelper(addr, os.Getenv(startupForgetEnv) != "")
		return
	}
	os.Exit(m.Run())
}

func serveStartupHelper(addr string, forgetFirst bool) {
	began := time.Now()
	var mu sync.Mutex
	sessions := 0
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
			mu.Lock()
			sessions++
			sid := fmt.Sprint("s", sessions)
			mu.Unlock()
			w.Header().Set("Mcp-Session-Id", sid)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"h","version":"1"}}}`, m.ID)
		case "tools/list":
			sid := r.Header.Get("Mcp-Session-Id")
			if forgetFirst && sid == "s1" {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			tools := `[]`
			if time.Since(began) >= listDelay && strings.HasPrefix(sid, "s") {
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

// QB-5: a run whose gateway exits says so with the end of what it wrote,
// at once rather than at the deadline.
func TestStartupFailureSaysWhy(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process groups")
	}
	t.Setenv(startupFailEnv, "listen: address already in use")
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"startup", "--runs", "1", "--url", "http://127.0.0.1:1/mcp", "--", os.Args[0], "-test.run=^$"}, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut.String())
	}
	for _, want := range []string{"exited before it listed a tool", "listen: address already in use"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr %q does not hold %q", errOut.String(), want)
		}
	}
}

// QB-5: a session the gateway refuses (404) is opened again: the run ends
// when the tool is listed, not at the deadline.
func TestStartupReopensARefusedSession(t *testing.T) {
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
	t.Setenv(startupForgetEnv, "1")
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"startup", "--runs", "1", "--want", "late_echo",
		"--url", "http://" + addr + "/mcp", "--", os.Args[0], "-test.run=^$"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}
