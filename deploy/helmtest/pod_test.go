package helmtest

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/internal/lab/peers"
)

// The pod's contract as local processes: the image's environment
// (deploy/Containerfile's ENV) under the container's, secret references
// resolved from the test Secret, the image's paths mapped into a
// directory of the test, and the pod's address made a loopback port.

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	// Helm logs each template fail() during lint; the tests read the
	// errors themselves.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// toolgateBinary builds cmd/toolgate from the parent module, once.
func toolgateBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "toolgate-helmtest-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "toolgate")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/toolgate")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building toolgate: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// imagePaths are the image's directories a pod uses; each maps to a
// directory of the test.
var imagePaths = []string{"/etc/toolgate", "/var/lib/toolgate", "/tmp"}

// pod is one replica's process as the rendered pod would run it.
type pod struct {
	root       string   // the pod's filesystem
	argv       []string // command and args, the binary and paths mapped
	env        []string
	configPath string
	port       int // the loopback port standing for the pod's address
}

// newPod lays out the pod's files from r and resolves its environment.
// extra adds test Secret entries ("secret/key" → value).
func newPod(t *testing.T, r *rendered, extra map[string]string) *pod {
	t.Helper()
	c := r.container(t)
	img := readContainerfile(t)
	p := &pod{root: t.TempDir(), port: freePort(t)}
	for _, d := range imagePaths {
		if err := os.MkdirAll(p.mapPath(d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The ConfigMap's files, where the config volume is mounted.
	m := mountAt(c, "/etc/toolgate")
	if m == nil || volume(r, m.Name).ConfigMap == nil {
		t.Fatal("no ConfigMap mounted at /etc/toolgate")
	}
	for name, text := range r.configMap.Data {
		if err := os.WriteFile(filepath.Join(p.mapPath(m.MountPath), name), []byte(text), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	bin := toolgateBinary(t)
	if len(c.Command) == 0 || c.Command[0] != img.entrypoint[0] {
		t.Fatalf("the container runs %q, the image's binary is %q", c.Command, img.entrypoint)
	}
	p.argv = append([]string{bin}, c.Command[1:]...)
	for _, a := range c.Args {
		p.argv = append(p.argv, p.mapPath(a))
	}
	for i, a := range p.argv {
		if a == "--config" && i+1 < len(p.argv) {
			p.configPath = p.argv[i+1]
		}
	}
	secrets := map[string]string{}
	for k, v := range testSecrets {
		secrets[k] = v
	}
	for k, v := range extra {
		secrets[k] = v
	}
	// The image's ENV first, then the container's, which wins — as the
	// kubelet merges them.
	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, kv := range img.env {
		set(kv[0], kv[1])
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			set(e.Name, e.Value)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			v, ok := secrets[ref]
			if !ok || v == "" {
				t.Fatalf("env %s: the test Secret has no %s", e.Name, ref)
			}
			set(e.Name, v)
		case e.ValueFrom.ResourceFieldRef != nil:
			rf := e.ValueFrom.ResourceFieldRef
			q, ok := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(rf.Resource, "limits."))]
			if !ok || rf.ContainerName != c.Name {
				t.Fatalf("env %s: resource %+v has no limit", e.Name, rf)
			}
			set(e.Name, strconv.FormatInt(q.Value(), 10))
		default:
			t.Fatalf("env %s: source %+v", e.Name, e.ValueFrom)
		}
	}
	// The pod's own address: one loopback port per replica on this host.
	listen, ok := env["TOOLGATE_GATEWAY_LISTEN"]
	if !ok {
		t.Fatal("no TOOLGATE_GATEWAY_LISTEN in the pod")
	}
	if _, port, err := net.SplitHostPort(listen); err != nil || port != strconv.Itoa(int(c.Ports[0].ContainerPort)) {
		t.Fatalf("the pod listens on %q, its port is %d", listen, c.Ports[0].ContainerPort)
	}
	env["TOOLGATE_GATEWAY_LISTEN"] = fmt.Sprintf("127.0.0.1:%d", p.port)
	env["TMPDIR"] = p.mapPath("/tmp")
	order = append(order, "TMPDIR")
	for _, k := range order {
		p.env = append(p.env, k+"="+p.mapPath(env[k]))
	}
	return p
}

// mapPath moves an image path into the pod's directory; anything else is
// returned as it is.
func (p *pod) mapPath(s string) string {
	for _, d := range imagePaths {
		if s == d || strings.HasPrefix(s, d+"/") {
			return filepath.Join(p.root, s)
		}
	}
	return s
}

// workdir is the image's WORKDIR, mapped.
func (p *pod) workdir(t *testing.T) string { return p.mapPath(readContainerfile(t).workdir) }

// base is the URL of the pod's port.
func (p *pod) base() string { return fmt.Sprintf("http://127.0.0.1:%d", p.port) }

func freePort(t *testing.T) int {
	t.Helper()
	return peers.FreePort(t)
}

// containerfile is what the test reads of deploy/Containerfile's run stage.
type containerfile struct {
	user       string
	workdir    string
	env        [][2]string
	expose     []string
	volumes    []string
	entrypoint []string
	cmd        []string
	stopSignal string
	copyOwners map[string]string // destination → --chown
}

func readContainerfile(t *testing.T) containerfile {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	cont := ""
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cont += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cont+l)
		cont = ""
	}
	cf := containerfile{copyOwners: map[string]string{}}
	stages := 0
	for _, l := range lines {
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			stages++
			cf = containerfile{copyOwners: map[string]string{}} // the last stage is the image
		case "USER":
			cf.user = rest
		case "WORKDIR":
			cf.workdir = rest
		case "ENV":
			for _, kv := range strings.Fields(rest) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					t.Fatalf("Containerfile: ENV %q is not KEY=VALUE", kv)
				}
				cf.env = append(cf.env, [2]string{k, v})
			}
		case "EXPOSE":
			cf.expose = append(cf.expose, strings.Fields(rest)...)
		case "VOLUME":
			cf.volumes = append(cf.volumes, jsonList(t, rest)...)
		case "ENTRYPOINT":
			cf.entrypoint = jsonList(t, rest)
		case "CMD":
			cf.cmd = jsonList(t, rest)
		case "STOPSIGNAL":
			cf.stopSignal = rest
		case "COPY":
			f := strings.Fields(rest)
			owner := ""
			for _, a := range f {
				if o, ok := strings.CutPrefix(a, "--chown="); ok {
					owner = o
				}
			}
			cf.copyOwners[f[len(f)-1]] = owner
		}
	}
	if stages < 2 || len(cf.entrypoint) == 0 {
		t.Fatalf("Containerfile: %d stages, entrypoint %q", stages, cf.entrypoint)
	}
	return cf
}

// jsonList reads an exec-form list such as ["a", "b"].
func jsonList(t *testing.T, s string) []string {
	t.Helper()
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		t.Fatalf("Containerfile: %q is not in exec form", s)
	}
	var out []string
	for _, f := range strings.Split(strings.Trim(s, "[]"), ",") {
		out = append(out, strings.Trim(strings.TrimSpace(f), `"`))
	}
	return out
}
