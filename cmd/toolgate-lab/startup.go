package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// startupWait bounds one run: a gateway that lists nothing in it failed.
const startupWait = 30 * time.Second

// runStartup times a gateway from exec to the first tools/list through it
// that names a tool (QB-5): it starts the command after "--", opens a
// session at --url as soon as the port answers, and lists tools until one
// holding --want comes back, then stops the gateway and its process group.
func runStartup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("startup", flag.ContinueOnError)
	url := fs.String("url", "", "the gateway's MCP endpoint")
	want := fs.String("want", "echo", "text the tools/list answer must hold (a tool's name)")
	key := fs.String("key", "", "API key sent as a bearer token")
	runs := fs.Int("runs", 5, "runs, one after another; the median is reported")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the line")
	fs.SetOutput(stderr)
	fs.Usage = func() {} // the help is printed below, on stdout
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, "Usage: toolgate-lab startup --url URL [flags] -- COMMAND ARGS…")
			fs.PrintDefaults()
			return 0
		}
		return 2
	}
	argv := fs.Args()
	if *url == "" || len(argv) == 0 || *runs < 1 {
		fmt.Fprintln(stderr, "toolgate-lab startup: --url, at least one run and a command after -- are needed")
		return 2
	}
	var took []time.Duration
	for range *runs {
		d, err := startOnce(ctx, *url, *want, *key, argv)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate-lab startup: %v\n", err)
			return 1
		}
		took = append(took, d)
	}
	slices.Sort(took)
	median := took[len(took)/2]
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	if *asJSON {
		all := make([]float64, len(took))
		for i, d := range took {
			all[i] = ms(d)
		}
		_ = json.NewEncoder(stdout).Encode(map[string]any{"medianMs": ms(median), "runsMs": all})
		return 0
	}
	parts := make([]string, len(took))
	for i, d := range took {
		parts[i] = fmt.Sprintf("%.1f", ms(d))
	}
	fmt.Fprintf(stdout, "median %.1f ms (runs, sorted: %s)\n", ms(median), strings.Join(parts, " "))
	return 0
}

// startOnce runs argv once and returns the time from its start to a
// tools/list answer holding want.
func startOnce(ctx context.Context, url, want, key string, argv []string) (time.Duration, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	post := func(sid, body string) (*http.Response, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	out := &tail{max: tailBytes}
	cmd.Stdout, cmd.Stderr = io.Discard, out
	setGroup(cmd)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer stopGroup(cmd, exited)
	deadline := start.Add(startupWait)
	for sid := ""; time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		select {
		case <-exited:
			return 0, fmt.Errorf("%s exited before it listed a tool%s", argv[0], out.said())
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
		}
		if sid == "" {
			resp, _, err := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"toolgate-lab","version":"1"}}}`)
			if err != nil || resp.StatusCode != http.StatusOK {
				continue // not listening yet
			}
			if sid = resp.Header.Get("Mcp-Session-Id"); sid == "" {
				sid = "-" // a gateway without sessions
			}
			_, _, _ = post(strings.TrimPrefix(sid, "-"), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		}
		resp, b, err := post(strings.TrimPrefix(sid, "-"), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		switch {
		case err == nil && resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte(want)):
			return time.Since(start), nil
		case err == nil && resp.StatusCode != http.StatusOK:
			// A session the gateway does not know (404) or a refused
			// list: initialize again rather than ask in it until the
			// deadline.
			sid = ""
		}
	}
	return 0, fmt.Errorf("no tools/list holding %q within %s%s", want, startupWait, out.said())
}

// tailBytes bounds what is kept of a gateway's output, for the error of a
// run that failed.
const tailBytes = 2048

// tail keeps the last max bytes written to it; safe for the copying
// goroutine exec starts and a reader at once.
type tail struct {
	max int
	mu  sync.Mutex
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// said is ": its last output: …" with the kept output's last lines, or ""
// when it wrote nothing.
func (t *tail) said() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	return "; its last output:\n" + s
}
