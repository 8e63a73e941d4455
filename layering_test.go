package toolgate_test

import (
	"bytes"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/toolgate/toolgate"

// A layering rule: no package under from may depend, directly or through
// others, on a package under any of forbidden. Areas are paths in the
// module; "core" covers core and everything under it.
type layerRule struct {
	from      string
	forbidden []string
	why       string
}

// The rules docs/architecture.md states.
var layerRules = []layerRule{
	{"core", []string{"mcp", "auth", "config", "internal", "tui", "cmd"}, "the rules of the product know no wire, file or screen"},
	{"config", []string{"internal", "mcp", "auth", "tui", "cmd"}, "the config describes the file, not the running gateway"},
	{"tui", []string{"mcp", "auth", "config", "internal", "cmd"}, "the console sees the gateway only through core.Console"},
	{"mcp", []string{"auth", "internal", "tui", "cmd"}, "the endpoint reads the actor the auth middleware put in the context"},
	{"auth", []string{"mcp", "config", "internal", "tui", "cmd"}, "authentication knows actors, not MCP"},
	{"telemetry", []string{"core", "mcp", "auth", "config", "internal", "tui", "cmd"}, "tracing is a leaf every layer may open spans with"},
}

// The two MCP sides meet only in mcp/downstream (and the wire format of
// mcp/jsonrpc): the serving package, mcp/serve, and the upstream clients
// import nothing of each other, and the seam imports neither. These rules
// name packages, not areas: mcp/serve/x would not be package mcp/serve.
var packageRules = []layerRule{
	{"mcp/serve", []string{"mcp/upstream"}, "the endpoint reaches upstreams only through core.Upstream"},
	{"mcp/upstream", []string{"mcp/serve"}, "an upstream reaches the calling client only through mcp/downstream"},
	{"mcp/downstream", []string{"mcp/serve", "mcp/upstream"}, "the seam belongs to neither side"},
}

// in reports whether pkg is area or under it.
func in(pkg, area string) bool {
	p := module + "/" + area
	return pkg == p || strings.HasPrefix(pkg, p+"/")
}

// goList returns each package of the module with its dependencies (not
// its tests'), as `go list -deps` computes them.
func goList(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, patterns...)
	cmd := exec.Command(goBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	return deps
}

// The layers hold: each rule of docs/architecture.md (areas, then the
// packages of packageRules), checked on what the packages import (tests
// may reach further: a store's tests start PostgreSQL through
// internal/pgtest).
func TestLayering(t *testing.T) {
	all := goList(t, "./...")
	if len(all) < 30 {
		t.Fatalf("go list found only %d packages", len(all))
	}
	for _, r := range layerRules {
		checked := 0
		for pkg, deps := range all {
			if !in(pkg, r.from) {
				continue
			}
			checked++
			for _, d := range deps {
				for _, f := range r.forbidden {
					if in(d, f) {
						t.Errorf("%s depends on %s: %s must not reach %s (%s)", pkg, d, r.from, f, r.why)
					}
				}
			}
		}
		if checked == 0 {
			t.Errorf("rule for %s matched no package", r.from)
		}
	}
	for _, r := range packageRules {
		deps, ok := all[module+"/"+r.from]
		if !ok {
			t.Errorf("rule for package %s matched no package", r.from)
			continue
		}
		for _, d := range deps {
			for _, f := range r.forbidden {
				if d == module+"/"+f {
					t.Errorf("%s/%s depends on %s (%s)", module, r.from, d, r.why)
				}
			}
		}
	}
}

// productForbidden is every package the binary operators install must not
// link, named one by one as a dependency test should: the test framework,
// the lab (peers, proxies, throwaway clusters) and each test helper of the
// module. A new *test or lab package fails TestForbiddenListComplete until
// it is named here.
var productForbidden = map[string]string{
	"testing":                                 "the test framework",
	"net/http/httptest":                       "test servers",
	module + "/internal/lab/peers":            "real-peer test fixtures",
	module + "/internal/lab/peers/confclient": "the conformance suite's client",
	module + "/internal/lab/rrproxy":          "the round-robin proxy of replica tests",
	module + "/internal/lab/sidebyside":       "runs of other gateways and of replicas side by side",
	module + "/auth/authtest":                 "a test identity provider",
	module + "/core/auditchain/chaintest":     "audit chain test helpers",
	module + "/core/coretest":                 "core test helpers",
	module + "/core/eventbustest":             "event bus test helpers",
	module + "/core/schema/schematest":        "schema test helpers",
	module + "/internal/idtest":               "id test helpers",
	module + "/internal/mcptest":              "a test MCP server",
	module + "/internal/metrics/metricstest":  "metrics test helpers",
	module + "/internal/oidctest":             "a test OpenID provider",
	module + "/internal/otlptest":             "a test trace collector",
	module + "/internal/pgtest":               "throwaway PostgreSQL clusters",
	module + "/internal/store/storetest":      "the suite every store passes",
	module + "/internal/upstreamtest":         "test upstream servers",
	module + "/internal/waittest":             "bounded waits for tests",
}

// The binary operators install links none of productForbidden (QB-5).
func TestInstalledBinaryLinksNoLabOrTestPackage(t *testing.T) {
	deps := goList(t, "./cmd/toolgate")[module+"/cmd/toolgate"]
	if len(deps) < 20 {
		t.Fatalf("cmd/toolgate has only %d dependencies: %q", len(deps), deps)
	}
	for _, d := range deps {
		if why, bad := productForbidden[d]; bad {
			t.Errorf("cmd/toolgate links %s (%s)", d, why)
		}
	}
}

// Every test helper and lab package of the module is in productForbidden:
// the list names them, so it must grow with them (QB-5).
func TestForbiddenListComplete(t *testing.T) {
	all := goList(t, "./...")
	for pkg := range all {
		helper := strings.HasSuffix(path.Base(pkg), "test") || in(pkg, "internal/lab")
		if _, listed := productForbidden[pkg]; helper && !listed {
			t.Errorf("%s is a test or lab package missing from productForbidden", pkg)
		}
	}
	for pkg := range productForbidden {
		if strings.HasPrefix(pkg, module+"/") {
			if _, ok := all[pkg]; !ok {
				t.Errorf("productForbidden names %s, which does not exist", pkg)
			}
		}
	}
}

// in and the rules' areas: a prefix of a name is not its area.
func TestLayerAreas(t *testing.T) {
	for _, tc := range []struct {
		pkg, area string
		want      bool
	}{
		{module + "/core", "core", true},
		{module + "/core/review/scan", "core", true},
		{module + "/coreutil", "core", false},
		{module + "/internal/admin", "internal", true},
		{module + "/config", "internal", false},
		{"github.com/other/core", "core", false},
	} {
		if got := in(tc.pkg, tc.area); got != tc.want {
			t.Errorf("in(%s, %s) = %v", tc.pkg, tc.area, got)
		}
	}
}
