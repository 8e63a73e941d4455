//go:build linux

package helmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/internal/lab/rrproxy"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// Bounds of the waits below; each is a ceiling for a loop that ends on its
// event, never a duration the test expects.
const (
	probeEvery   = 50 * time.Millisecond
	progressWait = 2 * time.Minute
)

// TestPodContractRollingRestartOP11 runs the rendered pod contract: as
// many `toolgate serve` as the chart's replicas, each started with the
// rendered command, args, environment (secrets from the test Secret) and
// config, on one PostgreSQL behind the round-robin proxy, probed on the
// rendered paths. Under a steady load of calls from MCP clients (legacy
// sessions and 2026-07-28 sessionless), every pod is replaced one at a
// time as a Deployment with maxSurge 1 and maxUnavailable 0 does: a new
// pod until ready, the old one out of the Service, its preStop, SIGTERM,
// and its exit within the grace period. No call may fail, and no action
// may run twice. (OP-11)
func TestPodContractRollingRestartOP11(t *testing.T) {
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	up := startLedger(t)

	vals := baseValues()
	cfg := vals["config"].(map[string]any)
	cfg["upstreams"] = []any{map[string]any{
		"name": "ledger", "url": up.url, "transport": "http", "required": true,
		"actions": []any{"record"}, "reads": []any{"echo"},
	}}
	r := mustRender(t, vals)
	secrets := map[string]string{"toolgate-db/dsn": dsn}
	c := r.container(t)
	replicas := int(*r.deployment.Spec.Replicas)
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	grace := time.Duration(*r.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	ru := r.deployment.Spec.Strategy.RollingUpdate
	if ru == nil || ru.MaxSurge.IntValue() != 1 || ru.MaxUnavailable.IntValue() != 0 {
		t.Fatalf("rolling update %+v: this test plays maxSurge 1, maxUnavailable 0", ru)
	}
	t.Logf("%d replicas, preStop %v, grace %v", replicas, preStop, grace)

	// The Deployment's first pods, then the Service in front of them.
	var pods []*runningPod
	for range replicas {
		pods = append(pods, startPod(t, r, secrets))
	}
	var bases []string
	for _, p := range pods {
		p.waitReady(t, r)
		bases = append(bases, p.base())
	}
	proxy, err := rrproxy.New(bases, &rrproxy.Options{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(proxy.CloseIdleConnections)
	t.Cleanup(front.Close)
	for i, p := range pods {
		p.index = i
	}

	// The load: clients of both eras, each making reads and confirmed
	// actions, one after the other, until told to stop.
	key := testSecrets["toolgate-keys/ci"]
	ld := &load{changed: make(chan struct{}), confirmed: map[string]int{}}
	loadCtx, stopLoad := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	eras := []string{mcpgo.ProtocolVersion20250618, mcpgo.ProtocolVersion20260728, mcpgo.ProtocolVersion20250618, mcpgo.ProtocolVersion20260728}
	for w, era := range eras {
		cl := newMCPClient(t, front.URL+"/mcp", key, era)
		workers.Add(1)
		go func() {
			defer workers.Done()
			ld.run(loadCtx, cl, fmt.Sprintf("w%d", w))
		}()
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopLoad()
			workers.Wait()
		}
	}
	t.Cleanup(stop)
	ld.waitFor(t, 4*len(eras), "the load to start")

	// The rolling restart.
	for i := range replicas {
		old := pods[i]
		next := startPod(t, r, secrets)
		next.waitReady(t, r)
		if next.index, err = proxy.Add(next.base()); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, next)
		ld.waitFor(t, ld.done()+2*len(eras), "calls with the new pod in the Service")

		// Termination: out of the Service first, then the preStop sleep
		// the kubelet runs, then SIGTERM and the grace period's rest.
		proxy.Remove(old.index)
		old.preStop(t, preStop)
		old.terminate(t, grace-preStop)
		if code := old.exitCode(); code != 0 {
			t.Errorf("pod %d exited %d after SIGTERM, want a clean stop\n%s", old.index, code, old.log.String())
		}
		ld.waitFor(t, ld.done()+2*len(eras), "calls after the old pod stopped")
		t.Logf("pod %d replaced by pod %d; %d calls so far", old.index, next.index, ld.done())
	}
	entries := proxy.Entries()
	stop()

	// Zero failed calls, zero duplicated actions.
	ld.mu.Lock()
	defer ld.mu.Unlock()
	for _, f := range ld.failures {
		t.Error(f)
	}
	runs := up.runs()
	for id, n := range runs {
		if n != 1 {
			t.Errorf("action %s ran %d times upstream", id, n)
		}
		if ld.confirmed[id] != 1 {
			t.Errorf("action %s ran upstream but its client saw %d confirmations", id, ld.confirmed[id])
		}
	}
	for id := range ld.confirmed {
		if runs[id] != 1 {
			t.Errorf("the client's confirmed action %s ran %d times upstream", id, runs[id])
		}
	}
	t.Logf("%d calls, %d actions confirmed, %d proxied requests", ld.calls, len(ld.confirmed), len(entries))
	served := map[int]int{}
	for _, e := range entries {
		if e.Status >= 400 || e.Status == 0 && e.Done {
			t.Errorf("request %d (%s %s) answered %d on pod %d", e.Seq, e.Method, e.RPC, e.Status, e.Backend)
		}
		if e.RPC == "tools/call" {
			served[e.Backend]++
		}
	}
	for _, p := range pods {
		if served[p.index] == 0 {
			t.Errorf("pod %d served no call: the load did not reach every pod", p.index)
		}
	}
	// The new pods still answer their probes; nothing secret in any log;
	// nothing written outside the pod's writable volumes.
	for _, p := range pods[replicas:] {
		p.probe(t, r, c.LivenessProbe, http.StatusOK)
		p.probe(t, r, c.ReadinessProbe, http.StatusOK)
	}
	for _, p := range pods {
		for ref, v := range testSecrets {
			if v != "" && strings.Contains(p.log.String(), v) {
				t.Errorf("pod %d logged the value of %s", p.index, ref)
			}
		}
		p.checkWrites(t, r)
	}
}

// ledger is an upstream MCP server whose action records each id it runs,
// so a duplicated run shows.
type ledger struct {
	url string
	mu  sync.Mutex
	ran map[string]int
}

func (l *ledger) runs() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.ran))
	for k, v := range l.ran {
		out[k] = v
	}
	return out
}

func startLedger(t *testing.T) *ledger {
	t.Helper()
	l := &ledger{ran: map[string]int{}}
	s := server.NewMCPServer("ledger", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("record", mcpgo.WithDescription("Records an id: one side effect per call."), mcpgo.WithString("id", mcpgo.Required())),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			id := req.GetString("id", "")
			l.mu.Lock()
			l.ran[id]++
			l.mu.Unlock()
			return mcpgo.NewToolResultText("recorded " + id), nil
		})
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithDescription("Answers its text."), mcpgo.WithString("text", mcpgo.Required()), mcpgo.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(req.GetString("text", "")), nil
		})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	l.url = srv.URL + "/mcp"
	return l
}

// load is the clients' record of their calls.
type load struct {
	mu        sync.Mutex
	calls     int
	failures  []string
	confirmed map[string]int // action id → confirmations the client got
	changed   chan struct{}  // closed and replaced on every call's end
}

func (l *load) done() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

func (l *load) end(failure string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if failure != "" {
		l.failures = append(l.failures, failure)
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// waitFor waits until n calls have ended.
func (l *load) waitFor(t *testing.T, n int, what string) {
	t.Helper()
	limit := time.NewTimer(progressWait)
	defer limit.Stop()
	for {
		l.mu.Lock()
		calls, changed, failed := l.calls, l.changed, len(l.failures)
		l.mu.Unlock()
		if calls >= n {
			return
		}
		select {
		case <-changed:
		case <-limit.C:
			t.Fatalf("waiting for %s: %d calls of %d ended within %v (%d failed)", what, calls, n, progressWait, failed)
		}
	}
}

// run calls, until ctx ends: a read, then an action previewed and
// confirmed with its token. Every call must succeed.
func (l *load) run(ctx context.Context, c *client.Client, name string) {
	call := func(tool string, args map[string]any) (*mcpgo.CallToolResult, string) {
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		// A call is never cut by the test: the load stops between calls.
		// The bound only keeps a hung call from hanging the test.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), progressWait)
		defer cancel()
		res, err := c.CallTool(cctx, req)
		switch {
		case err != nil:
			return nil, fmt.Sprintf("%s %s %v: %v", name, tool, args, err)
		case res.IsError:
			return nil, fmt.Sprintf("%s %s %v: isError %+v", name, tool, args, res.Content)
		}
		return res, ""
	}
	for n := 0; ctx.Err() == nil; n++ {
		text := fmt.Sprintf("%s-%d", name, n)
		res, fail := call("ledger_echo", map[string]any{"text": text})
		if fail == "" && textOf(res) != text {
			fail = fmt.Sprintf("%s echo answered %q, want %q", name, textOf(res), text)
		}
		l.end(fail)
		if ctx.Err() != nil {
			return
		}
		res, fail = call("ledger_record", map[string]any{"id": text})
		var preview struct {
			ConfirmToken string `json:"confirmToken"`
		}
		if fail == "" {
			b, _ := json.Marshal(res.StructuredContent)
			if json.Unmarshal(b, &preview) != nil || preview.ConfirmToken == "" {
				fail = fmt.Sprintf("%s record %s: not a preview: %s", name, text, b)
			}
		}
		l.end(fail)
		if fail != "" {
			continue
		}
		res, fail = call("ledger_record", map[string]any{"id": text, "confirm": true, "confirmToken": preview.ConfirmToken})
		if fail == "" && textOf(res) != "recorded "+text {
			fail = fmt.Sprintf("%s confirmed record %s answered %q", name, text, textOf(res))
		}
		if fail == "" {
			l.mu.Lock()
			l.confirmed[text]++
			l.mu.Unlock()
		}
		l.end(fail)
	}
}

func textOf(r *mcpgo.CallToolResult) string {
	if r == nil || len(r.Content) != 1 {
		return ""
	}
	tc, _ := r.Content[0].(mcpgo.TextContent)
	return tc.Text
}

// newMCPClient connects an mcp-go client of protocol era to url.
func newMCPClient(t *testing.T, url, key, era string) *client.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	st, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: tr}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(st, client.WithProtocolVersion(era))
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), progressWait)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = era
	init.Params.ClientInfo = mcpgo.Implementation{Name: "helm-contract", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize (%s): %v", era, err)
	}
	if res.ProtocolVersion != era {
		t.Fatalf("negotiated %s, want %s", res.ProtocolVersion, era)
	}
	return c
}

// runningPod is one pod's process.
type runningPod struct {
	*pod
	index  int // its backend index in the proxy
	cmd    *exec.Cmd
	log    *syncBuffer
	exited chan struct{}
}

// startPod starts the rendered container as a process: the mapped command,
// args and environment, in the image's working directory. It is stopped
// at cleanup if still running, and dies with the test process.
func startPod(t *testing.T, r *rendered, secrets map[string]string) *runningPod {
	t.Helper()
	p := &runningPod{pod: newPod(t, r, secrets), log: &syncBuffer{}, exited: make(chan struct{})}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env, cmd.Dir = p.env, p.workdir(t)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmd = cmd
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	})
	return p
}

// waitReady plays the kubelet's probes: the startup probe until it
// passes, then the readiness probe until it passes; a pod that exits or
// stays unready for as long as the rendered thresholds allow fails.
func (p *runningPod) waitReady(t *testing.T, r *rendered) {
	t.Helper()
	c := r.container(t)
	for _, pr := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe} {
		limit := time.Duration(pr.PeriodSeconds*pr.FailureThreshold) * time.Second
		if pr == c.ReadinessProbe {
			limit = progressWait // readiness has no deadline of its own
		}
		deadline := time.NewTimer(limit)
		tick := time.NewTicker(probeEvery)
		for ok := false; !ok; {
			if code, _ := p.get(t, r, pr); code == http.StatusOK {
				ok = true
				break
			}
			select {
			case <-p.exited:
				t.Fatalf("pod exited before its %s passed:\n%s", pr.HTTPGet.Path, p.log.String())
			case <-deadline.C:
				t.Fatalf("%s did not pass within %v:\n%s", pr.HTTPGet.Path, limit, p.log.String())
			case <-tick.C:
			}
		}
		deadline.Stop()
		tick.Stop()
	}
	p.probe(t, r, c.LivenessProbe, http.StatusOK)
}

// get runs one HTTP probe against the pod: its port resolved by name from
// the container's ports, as the kubelet does.
func (p *runningPod) get(t *testing.T, r *rendered, pr *corev1.Probe) (int, string) {
	t.Helper()
	c := r.container(t)
	if pr == nil || pr.HTTPGet == nil || !probesPort(pr.HTTPGet.Port, c.Ports[0]) {
		t.Fatalf("probe %+v is not an HTTP probe on the container's port", pr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(max(pr.TimeoutSeconds, 1))*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base()+pr.HTTPGet.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (p *runningPod) probe(t *testing.T, r *rendered, pr *corev1.Probe, want int) {
	t.Helper()
	if code, body := p.get(t, r, pr); code != want {
		t.Errorf("pod %d %s: %d %q, want %d", p.index, pr.HTTPGet.Path, code, body, want)
	}
}

// preStop runs the rendered sleep action, as the kubelet does before
// SIGTERM; the pod must keep running through it.
func (p *runningPod) preStop(t *testing.T, d time.Duration) {
	t.Helper()
	sleep := time.NewTimer(d)
	defer sleep.Stop()
	select {
	case <-sleep.C:
	case <-p.exited:
		t.Fatalf("pod %d exited during its preStop:\n%s", p.index, p.log.String())
	}
}

// terminate sends SIGTERM to the container's process and waits for its
// exit; past limit the kubelet would SIGKILL it, and so does the test,
// failing.
func (p *runningPod) terminate(t *testing.T, limit time.Duration) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	kill := time.NewTimer(limit)
	defer kill.Stop()
	select {
	case <-p.exited:
		// A figure for the record, not a bound the test holds it to.
		t.Logf("pod %d stopped %v after SIGTERM (allowed: %v)", p.index, time.Since(start).Round(time.Millisecond), limit)
	case <-kill.C:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		t.Errorf("pod %d still ran %v after SIGTERM: the kubelet would have killed it\n%s", p.index, limit, p.log.String())
	}
}

func (p *runningPod) exitCode() int { return p.cmd.ProcessState.ExitCode() }

// checkWrites: with the root filesystem read-only, the pod may write only
// in its writable volumes; the config it was given stays as it was.
func (p *runningPod) checkWrites(t *testing.T, r *rendered) {
	t.Helper()
	c := r.container(t)
	var writable []string
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			writable = append(writable, p.mapPath(m.MountPath))
		}
	}
	err := filepath.WalkDir(p.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, w := range writable {
			if strings.HasPrefix(path, w+string(filepath.Separator)) {
				return nil
			}
		}
		if path == p.configPath {
			b, err := os.ReadFile(path)
			if err != nil || string(b) != r.configText(t) {
				t.Errorf("pod %d: the mounted config changed", p.index)
			}
			return nil
		}
		t.Errorf("pod %d wrote %s, outside its writable volumes", p.index, strings.TrimPrefix(path, p.root))
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Error(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a process's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
