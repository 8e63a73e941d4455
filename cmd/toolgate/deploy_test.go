//go:build linux

package main

// Tests of the service recipes in deploy/: the systemd unit and the
// container recipe are read as files, and the command line and environment
// each gives `toolgate serve` are run with the binary built from this tree,
// on 127.0.0.1, probed as a service manager or an orchestrator would. The
// container image itself is not built here: that needs a container runtime.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const deployGatewayKey = "deploy-SECRET-gateway-key-4b8e1d0c7a2f"

// deployConfig is a config as an operator would install it, listening on
// 127.0.0.1:port, with a required stdio upstream so that /readyz has
// something to wait for.
func deployConfig(t *testing.T, port int) string {
	t.Helper()
	return writeServeConfig(t, fmt.Sprintf(`gateway:
  listen: 127.0.0.1:%d
  confirm:
    secret: ${TOOLGATE_GATEWAY_CONFIRM_SECRET}
endpoints:
  - path: /mcp
    auth:
      apiKeys:
        - key: ${GATEWAY_KEY}
          actor: {id: gateway, roles: [MEMBER]}
upstreams:
  - name: notes
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, notes]
    required: true
`, port))
}

// deploySecrets are what EnvironmentFile or `docker run -e` supply.
var deploySecrets = []string{"TOOLGATE_GATEWAY_CONFIRM_SECRET=" + serveConfirmSecret, "GATEWAY_KEY=" + deployGatewayKey}

// unitFile is a parsed systemd unit: section → key → values in order.
type unitFile map[string]map[string][]string

func readUnit(t *testing.T, path string) unitFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: cannot read line %q", path, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// one is the single value of key in section, failing the test otherwise.
func (u unitFile) one(t *testing.T, section, key string) string {
	t.Helper()
	vs := u[section][key]
	if len(vs) != 1 {
		t.Fatalf("[%s] %s: %q, want exactly one value", section, key, vs)
	}
	return vs[0]
}

// runService starts bin with argv[1:] and env in a process group of its
// own, waits (bounded) until /healthz and then /readyz answer 200 on base,
// and returns the process; it is killed at cleanup if still running.
func runService(t *testing.T, argv, env []string, dir, base string) *servedGateway {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g := &servedGateway{cmd: cmd, base: base, stderr: &serveLog{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = g.stderr, g.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(g.exited)
	}()
	pid := cmd.Process.Pid
	g.leader = holdLeader(pid)
	t.Cleanup(func() {
		g.killGroups()
		select {
		case <-g.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("toolgate serve (pid %d) not reaped 10 s after SIGKILL", pid)
		}
		g.leader.release()
	})
	g.waitReady(t)
	return g
}

// probe GETs one of the probe paths and returns status and body.
func probe(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: serveHTTPWait}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// OP-5, SV-9: deploy/toolgate.service runs `toolgate serve` in the
// foreground (Type=simple: no readiness notification is implemented),
// reloads with SIGHUP (OP-8), restarts on failure, is
// hardened, keeps the store in its StateDirectory and waits longer for a
// stop than toolgate's own grace for calls in flight. Its ExecStart and
// Environment, run with this tree's binary and %S in a temporary
// directory, start a gateway that answers both probes, writes its store in
// the state directory and stops cleanly on SIGTERM.
func TestSystemdUnitDeploy(t *testing.T) {
	const path = "../../deploy/toolgate.service"
	u := readUnit(t, path)
	svc := "Service"
	for key, want := range map[string]string{
		"Type": "simple", "Restart": "on-failure", "KillMode": "mixed", "StateDirectory": "toolgate",
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "DynamicUser": "yes", "PrivateTmp": "yes",
	} {
		if got := u.one(t, svc, key); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}
	// OP-8: `systemctl reload` sends SIGHUP, which reloads the config.
	if got := u.one(t, svc, "ExecReload"); got != "/bin/kill -HUP $MAINPID" {
		t.Errorf("ExecReload=%s, want /bin/kill -HUP $MAINPID", got)
	}
	stop, err := time.ParseDuration(u.one(t, svc, "TimeoutStopSec"))
	if err != nil || stop <= shutdownGrace {
		t.Errorf("TimeoutStopSec=%s (%v): must be longer than shutdownGrace (%v)", u.one(t, svc, "TimeoutStopSec"), err, shutdownGrace)
	}
	if got := u.one(t, "Install", "WantedBy"); got != "multi-user.target" {
		t.Errorf("WantedBy=%s", got)
	}

	start := strings.Fields(u.one(t, svc, "ExecStart"))
	if len(start) < 4 || filepath.Base(start[0]) != "toolgate" || start[1] != "serve" || start[2] != "--config" {
		t.Fatalf("ExecStart=%q, want toolgate serve --config FILE", start)
	}
	bin := toolgateBinary(t)
	stateRoot := t.TempDir() // %S
	expand := func(s string) string { return strings.ReplaceAll(s, "%S", stateRoot) }
	// systemd creates the state directory with StateDirectoryMode.
	mode, err := strconv.ParseUint(u.one(t, svc, "StateDirectoryMode"), 8, 32)
	if err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(stateRoot, u.one(t, svc, "StateDirectory"))
	if err := os.Mkdir(stateDir, os.FileMode(mode)); err != nil {
		t.Fatal(err)
	}
	// The service's environment: systemd's own is minimal, then the
	// EnvironmentFile's secrets, then Environment=.
	env := append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, deploySecrets...)
	store := ""
	for _, e := range u[svc]["Environment"] {
		e = expand(e)
		env = append(env, e)
		if v, ok := strings.CutPrefix(e, "TOOLGATE_GATEWAY_STORE="); ok {
			store = v
		}
	}
	if filepath.Dir(store) != stateDir {
		t.Fatalf("TOOLGATE_GATEWAY_STORE=%q is not in the StateDirectory %s", store, stateDir)
	}
	port := serveFreePort(t)
	argv := append([]string{bin}, start[1:]...)
	argv[3] = deployConfig(t, port)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	g := runService(t, argv, env, expand(u.one(t, svc, "WorkingDirectory")), base)

	if code, body := probe(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	code, body := probe(t, base+"/readyz")
	var ready struct {
		Ready bool `json:"ready"`
	}
	if err := json.Unmarshal([]byte(body), &ready); code != http.StatusOK || err != nil || !ready.Ready {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if _, err := os.Stat(store); err != nil {
		t.Errorf("the store is not in the state directory: %v", err)
	}
	if code := g.terminate(t); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0\n%s", code, g.stderr)
	}
	if strings.Contains(g.stderr.String(), deployGatewayKey) || strings.Contains(g.stderr.String(), serveConfirmSecret) {
		t.Errorf("a secret is in the service's log:\n%s", g.stderr)
	}
}

// The unit passes `systemd-analyze verify` without a single complaint
// (verify exits 0 on unknown keys and bad values, so any output fails),
// and its offline security exposure stays low. Skipped where systemd's
// tools are missing.
func TestSystemdUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	text, err := os.ReadFile("../../deploy/toolgate.service")
	if err != nil {
		t.Fatal(err)
	}
	// verify checks that ExecStart's binary exists: point it at this
	// tree's.
	unit := filepath.Join(t.TempDir(), "toolgate.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(text), "/usr/local/bin/toolgate", toolgateBinary(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(sa, "security", "--offline=yes", unit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.5 {
		t.Errorf("exposure level %.1f, want at most 2.5 (systemd's scale: 0 safe … 10 unsafe)\n%s", level, out)
	}
}

// containerStage is the instructions of a Containerfile, per stage.
type containerStage struct {
	from  string
	lines []string // "INSTRUCTION args", continuations joined
}

func readContainerfile(t *testing.T, path string) []containerStage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages []containerStage
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		if strings.HasPrefix(line, "FROM ") {
			stages = append(stages, containerStage{from: strings.TrimPrefix(line, "FROM ")})
			return
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %q before FROM", path, line)
		}
		stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
	}
	for _, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") && cur.Len() == 0 {
			continue
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return stages
}

// args are the arguments of every instruction of kind in s.
func (s containerStage) args(kind string) []string {
	var out []string
	for _, l := range s.lines {
		if rest, ok := strings.CutPrefix(l, kind+" "); ok {
			out = append(out, strings.TrimSpace(rest))
		}
	}
	return out
}

// execForm decodes an exec-form (JSON array) ENTRYPOINT, CMD or VOLUME.
func execForm(t *testing.T, kind, s string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("%s %s is not in exec form: %v", kind, s, err)
	}
	return out
}

// containerEnv parses ENV KEY=VALUE … instructions (values without spaces).
func containerEnv(s containerStage) map[string]string {
	env := map[string]string{}
	for _, a := range s.args("ENV") {
		for _, kv := range strings.Fields(a) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
	}
	return env
}

// OP-5, SV-9: deploy/Containerfile builds with the Go release go.mod asks
// for, statically, into a distroless image that runs as a non-root user,
// keeps the store on a volume, listens beyond the container's loopback on
// the port it exposes and runs `toolgate serve`. Its ENTRYPOINT, CMD and
// ENV, run with this tree's binary (the volume and the config in temporary
// directories, the listen address on 127.0.0.1), start a gateway that
// answers the probes an orchestrator uses and stops cleanly on the
// STOPSIGNAL. The image build itself is not run here.
func TestContainerfileDeploy(t *testing.T) {
	stages := readContainerfile(t, "../../deploy/Containerfile")
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a run stage", len(stages))
	}
	build, run := stages[0], stages[len(stages)-1]

	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if goLine == nil {
		t.Fatal("no go directive in go.mod")
	}
	if want := "golang:" + string(goLine[1]); !strings.Contains(build.from, want) {
		t.Errorf("build stage FROM %s, want %s (go.mod's go %s)", build.from, want, goLine[1])
	}
	if !slices.ContainsFunc(build.args("RUN"), func(r string) bool {
		return strings.Contains(r, "CGO_ENABLED=0") && strings.Contains(r, "go build") && strings.Contains(r, "./cmd/toolgate")
	}) {
		t.Errorf("no static build of ./cmd/toolgate in the build stage: %q", build.args("RUN"))
	}
	if !strings.Contains(run.from, "distroless") {
		t.Errorf("run stage FROM %s, want a distroless base", run.from)
	}
	users := run.args("USER")
	if len(users) != 1 || strings.HasPrefix(users[0], "root") || strings.HasPrefix(users[0], "0") {
		t.Errorf("USER %q, want one non-root user", users)
	}
	if hc := run.args("HEALTHCHECK"); len(hc) > 0 {
		t.Errorf("HEALTHCHECK %q: the image has no shell or curl to run one; orchestrators probe /healthz and /readyz", hc)
	}

	env := containerEnv(run)
	store, listen := env["TOOLGATE_GATEWAY_STORE"], env["TOOLGATE_GATEWAY_LISTEN"]
	volumes := execForm(t, "VOLUME", strings.Join(run.args("VOLUME"), ""))
	if !slices.Contains(volumes, filepath.Dir(store)) {
		t.Errorf("TOOLGATE_GATEWAY_STORE=%s is not on a VOLUME %q", store, volumes)
	}
	host, port, ok := strings.Cut(listen, ":")
	if !ok || host != "0.0.0.0" {
		t.Errorf("TOOLGATE_GATEWAY_LISTEN=%s: inside a container the listen address must not be loopback", listen)
	}
	if exposed := run.args("EXPOSE"); !slices.Contains(exposed, port) {
		t.Errorf("EXPOSE %q does not include the listen port %s", exposed, port)
	}
	if sig := run.args("STOPSIGNAL"); len(sig) != 1 || sig[0] != "SIGTERM" {
		t.Errorf("STOPSIGNAL %q, want SIGTERM (graceful shutdown, SV-9)", sig)
	}
	entry := execForm(t, "ENTRYPOINT", strings.Join(run.args("ENTRYPOINT"), ""))
	cmdArgs := execForm(t, "CMD", strings.Join(run.args("CMD"), ""))
	argv := append(entry, cmdArgs...)
	if len(argv) < 4 || filepath.Base(argv[0]) != "toolgate" || argv[1] != "serve" || argv[2] != "--config" {
		t.Fatalf("ENTRYPOINT + CMD = %q, want toolgate serve --config FILE", argv)
	}

	// The image's command line and environment with this tree's binary:
	// the volume and config in temporary directories, 127.0.0.1 instead of
	// 0.0.0.0.
	volume := t.TempDir()
	hostStore := filepath.Join(volume, filepath.Base(store))
	free := serveFreePort(t)
	runEnv := append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, deploySecrets...)
	for k, v := range env {
		switch k {
		case "TOOLGATE_GATEWAY_STORE":
			v = hostStore
		case "TOOLGATE_GATEWAY_LISTEN":
			v = fmt.Sprintf("127.0.0.1:%d", free)
		case "HOME":
			v = volume
		}
		runEnv = append(runEnv, k+"="+v)
	}
	argv[0] = toolgateBinary(t)
	// The listen address in the file is not the one served: the image's
	// environment override wins.
	argv[3] = deployConfig(t, serveFreePort(t))
	base := fmt.Sprintf("http://127.0.0.1:%d", free)
	g := runService(t, argv, runEnv, volume, base)
	if code, _ := probe(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := probe(t, base+"/readyz"); code != http.StatusOK || !strings.Contains(body, `"ready":true`) {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if _, err := os.Stat(hostStore); err != nil {
		t.Errorf("the store is not on the volume: %v", err)
	}
	if code := g.terminate(t); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0\n%s", code, g.stderr)
	}
}
