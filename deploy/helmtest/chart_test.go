package helmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// valueSets are the installs the chart is checked for (OP-11).
func valueSets(t *testing.T) map[string]map[string]any {
	return map[string]map[string]any{
		"operations-doc": docValues(t),
		"defaults":       baseValues(),
		"everything-on":  allOnValues(),
		"sqlite-single":  sqliteValues(),
		"sqlite-no-pvc":  with(sqliteValues(), "store.sqlite.existingClaim", ""),
		"client-ip":      with(baseValues(), "service.sessionAffinity", "ClientIP"),
		"port-8080":      with(baseValues(), "port", 8080),
		"no-pdb":         with(baseValues(), "podDisruptionBudget.enabled", false),
		"no-memory-limt": with(baseValues(), "resources", map[string]any{"requests": map[string]any{"cpu": "50m"}}),
	}
}

// TestChartRendersOP11 renders every value set, decodes each object
// strictly and checks it as a reviewer would. (OP-11)
func TestChartRendersOP11(t *testing.T) {
	bin := toolgateBinary(t)
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			r := mustRender(t, vals)
			merged := mergedValues(t, vals)
			checkWorkload(t, r, merged)
			checkSecurity(t, r)
			checkSecretRefs(t, r, merged)
			checkConfig(t, r, bin)
			checkOptional(t, r, merged)
		})
	}
}

// docValues is the values file docs/operations.md shows, read as the helm
// command reads a values file.
func docValues(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# toolgate-values.yaml\n.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/operations.md shows no toolgate-values.yaml")
	}
	v, err := common.ReadValues(m[1])
	if err != nil {
		t.Fatalf("docs/operations.md's values: %v", err)
	}
	return v
}

// mergedValues is vals over the chart's values.yaml, as the templates see
// them.
func mergedValues(t *testing.T, vals map[string]any) map[string]any {
	t.Helper()
	m, err := util.CoalesceValues(loadChart(t), vals)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// get walks merged values by a dotted path.
func get(v map[string]any, path string) any {
	var cur any = v
	for _, k := range splitPath(path) {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func asInt(t *testing.T, v any) int {
	t.Helper()
	switch x := v.(type) {
	case int:
		return x
	case int64:
		return int(x)
	case float64:
		return int(x)
	}
	t.Fatalf("%v (%T) is not a number", v, v)
	return 0
}

func checkWorkload(t *testing.T, r *rendered, vals map[string]any) {
	t.Helper()
	d := r.deployment
	c := r.container(t)
	port := asInt(t, get(vals, "port"))

	// The container's one named port is the configured one, and the image
	// is told to listen on it.
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || int(c.Ports[0].ContainerPort) != port {
		t.Fatalf("container ports %+v, want one named http on %d", c.Ports, port)
	}
	if got := envValue(c, "TOOLGATE_GATEWAY_LISTEN"); got != fmt.Sprintf("0.0.0.0:%d", port) {
		t.Errorf("TOOLGATE_GATEWAY_LISTEN %q, want 0.0.0.0:%d", got, port)
	}
	// Probes: the real paths, on the container's own port.
	probes := map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe}
	for path, p := range probes {
		if p == nil || p.HTTPGet == nil {
			t.Fatalf("no HTTP probe for %s", path)
		}
		if p.HTTPGet.Path != path || !probesPort(p.HTTPGet.Port, c.Ports[0]) {
			t.Errorf("probe %+v, want %s on the container's port", p.HTTPGet, path)
		}
	}
	if p := c.StartupProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || !probesPort(p.HTTPGet.Port, c.Ports[0]) {
		t.Errorf("startup probe %+v, want /healthz on the container's port", c.StartupProbe)
	}
	// Termination: a preStop sleep (the image has no shell), and a grace
	// period that covers it plus toolgate's shutdown.
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Exec != nil {
		t.Fatalf("preStop %+v, want a sleep action", c.Lifecycle)
	}
	preStop := int(c.Lifecycle.PreStop.Sleep.Seconds)
	grace := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	if grace == nil || int(*grace) < preStop+20 {
		t.Errorf("terminationGracePeriodSeconds %v for a preStop of %d s: below preStop + toolgate's 20 s shutdown", grace, preStop)
	}
	// Replicas: the Deployment's count, or the autoscaler's.
	if hpaOn, _ := get(vals, "autoscaling.enabled").(bool); hpaOn {
		if d.Spec.Replicas != nil {
			t.Errorf("replicas %d set beside an autoscaler", *d.Spec.Replicas)
		}
	} else if d.Spec.Replicas == nil || int(*d.Spec.Replicas) != asInt(t, get(vals, "replicaCount")) {
		t.Errorf("replicas %v, want %v", d.Spec.Replicas, get(vals, "replicaCount"))
	}
	if get(vals, "store.type") == "sqlite" {
		if d.Spec.Strategy.Type != "Recreate" {
			t.Errorf("SQLite with strategy %q: two pods would hold the file during an update", d.Spec.Strategy.Type)
		}
	} else {
		ru := d.Spec.Strategy.RollingUpdate
		if d.Spec.Strategy.Type != "RollingUpdate" || ru == nil || ru.MaxUnavailable.String() != "0" || ru.MaxSurge.String() != "1" {
			t.Errorf("strategy %+v, want a rolling update with maxUnavailable 0, maxSurge 1", d.Spec.Strategy)
		}
	}
	// Selectors: the Service and the budget pick exactly the pods.
	pods := d.Spec.Template.Labels
	for k, v := range d.Spec.Selector.MatchLabels {
		if pods[k] != v {
			t.Errorf("the Deployment's selector %s=%s does not match its pods %v", k, v, pods)
		}
	}
	if !maps.Equal(r.service.Spec.Selector, d.Spec.Selector.MatchLabels) {
		t.Errorf("Service selector %v, Deployment selector %v", r.service.Spec.Selector, d.Spec.Selector.MatchLabels)
	}
	sp := r.service.Spec.Ports
	if len(sp) != 1 || sp[0].TargetPort != intstr.FromString("http") || int(sp[0].Port) != asInt(t, get(vals, "service.port")) {
		t.Errorf("Service ports %+v, want one targeting the container's port http", sp)
	}
	if want := get(vals, "service.sessionAffinity"); string(r.service.Spec.SessionAffinity) != want {
		t.Errorf("sessionAffinity %q, want %v", r.service.Spec.SessionAffinity, want)
	}
	// A changed config rolls the pods: the annotation is the config's hash.
	sum := sha256.Sum256([]byte(strings.TrimSuffix(r.configText(t), "\n")))
	if got := d.Spec.Template.Annotations["checksum/config"]; got != hex.EncodeToString(sum[:]) {
		t.Errorf("checksum/config %q is not the rendered config's SHA-256", got)
	}
	// The config is mounted where the command reads it.
	wantArgs := []string{"--config", "/etc/toolgate/toolgate.yaml"}
	if ins, _ := get(vals, "insecureOpen").(bool); ins {
		wantArgs = append(wantArgs, "--insecure-open")
	}
	if !slices.Equal(c.Command, []string{"/usr/local/bin/toolgate", "serve"}) || !slices.Equal(c.Args, wantArgs) {
		t.Errorf("command %q args %q", c.Command, c.Args)
	}
	if m := mountAt(c, "/etc/toolgate"); m == nil || !m.ReadOnly || volume(r, m.Name).ConfigMap == nil || volume(r, m.Name).ConfigMap.Name != r.configMap.Name {
		t.Errorf("/etc/toolgate is not the ConfigMap, read-only: %+v", m)
	}
	if c.Resources.Requests.Cpu().IsZero() && c.Resources.Requests.Memory().IsZero() {
		t.Error("no resource requests")
	}
	if _, limited := c.Resources.Limits[corev1.ResourceMemory]; limited != (envVar(c, "GOMEMLIMIT") != nil) {
		t.Errorf("memory limit %v but GOMEMLIMIT %+v: they go together", c.Resources.Limits, envVar(c, "GOMEMLIMIT"))
	}
}

// probesPort reports whether a probe's port is the container's port, by
// name or number.
func probesPort(p intstr.IntOrString, cp corev1.ContainerPort) bool {
	return (p.Type == intstr.String && p.StrVal == cp.Name) || (p.Type == intstr.Int && p.IntVal == cp.ContainerPort)
}

func checkSecurity(t *testing.T, r *rendered) {
	t.Helper()
	ps := r.deployment.Spec.Template.Spec
	c := r.container(t)
	sc := c.SecurityContext
	if ps.SecurityContext == nil || sc == nil {
		t.Fatal("no security context")
	}
	isTrue := func(b *bool) bool { return b != nil && *b }
	isFalse := func(b *bool) bool { return b != nil && !*b }
	if !isTrue(sc.RunAsNonRoot) || !isTrue(ps.SecurityContext.RunAsNonRoot) {
		t.Error("not runAsNonRoot")
	}
	if sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Error("runAsUser unset or root")
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		t.Error("root filesystem writable")
	}
	if !isFalse(sc.AllowPrivilegeEscalation) || isTrue(sc.Privileged) {
		t.Error("privilege escalation allowed or privileged")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities %+v, want drop ALL and none added", sc.Capabilities)
	}
	for _, sp := range []*corev1.SeccompProfile{sc.SeccompProfile, ps.SecurityContext.SeccompProfile} {
		if sp == nil || sp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("seccomp %+v, want RuntimeDefault", sp)
		}
	}
	if !isFalse(ps.AutomountServiceAccountToken) {
		t.Error("the service account token is mounted: toolgate never calls the Kubernetes API")
	}
	if !isFalse(ps.EnableServiceLinks) {
		t.Error("service links on: they put TOOLGATE_* variables in the environment")
	}
	// With a read-only root, what toolgate writes must be a volume: the
	// state directory ($HOME, the SQLite store) and the temp directory.
	for _, dir := range []string{"/var/lib/toolgate", "/tmp"} {
		m := mountAt(c, dir)
		if m == nil || m.ReadOnly {
			t.Errorf("%s is not a writable mount", dir)
			continue
		}
		if v := volume(r, m.Name); v.EmptyDir == nil && v.PersistentVolumeClaim == nil {
			t.Errorf("%s is mounted from %+v, want an emptyDir or a claim", dir, v.VolumeSource)
		}
	}
	if envValue(c, "HOME") != "/var/lib/toolgate" {
		t.Errorf("HOME %q is not the writable state directory", envValue(c, "HOME"))
	}
}

// valueRefs are the Secret references the values define, as "secret/key".
func valueRefs(t *testing.T, vals map[string]any) []string {
	t.Helper()
	var refs []string
	add := func(m any, keyField string) {
		mm, _ := m.(map[string]any)
		if s, _ := mm["existingSecret"].(string); s != "" {
			refs = append(refs, s+"/"+fmt.Sprint(mm[keyField]))
		}
	}
	if get(vals, "store.type") == "postgres" {
		add(get(vals, "store.postgres"), "key")
	}
	add(get(vals, "confirmSecret"), "key")
	add(get(vals, "credentialsKey"), "key")
	if on, _ := get(vals, "admin.enabled").(bool); on {
		for _, k := range get(vals, "admin.keys").([]any) {
			add(k, "key")
		}
	}
	for _, e := range get(vals, "secretEnv").([]any) {
		add(e, "key")
	}
	eps, _ := get(vals, "config.endpoints").([]any)
	for _, ep := range eps {
		keys, _ := get(ep.(map[string]any), "auth.apiKeys").([]any)
		for _, k := range keys {
			add(k, "secretKey")
		}
	}
	slices.Sort(refs)
	return refs
}

// checkSecretRefs: every secretKeyRef names a key the values define, each
// reference of the values is used, and the config's ${VAR}s are all in the
// container's environment (else the pod would fail to start).
func checkSecretRefs(t *testing.T, r *rendered, vals map[string]any) {
	t.Helper()
	c := r.container(t)
	got := slices.Sorted(maps.Values(r.secretRefs(t)))
	got = slices.Compact(got)
	want := slices.Compact(valueRefs(t, vals))
	if !slices.Equal(got, want) {
		t.Errorf("secretKeyRefs %q, the values define %q", got, want)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef == nil && e.ValueFrom.ResourceFieldRef == nil {
			t.Errorf("env %s comes from %+v", e.Name, e.ValueFrom)
		}
	}
	cfg := r.configText(t)
	for _, name := range configVars(cfg) {
		if envVar(c, name) == nil {
			t.Errorf("the config uses ${%s}, which the container's environment lacks", name)
		}
	}
	// Nothing secret is written out: no rendered object holds a value of
	// the test Secret, and every key in the config is a ${VAR}.
	all := fmt.Sprint(r.deployment, r.configMap, r.service)
	for ref, v := range testSecrets {
		if v != "" && strings.Contains(all, v) {
			t.Errorf("the value of %s is in a rendered object", ref)
		}
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(cfg), &doc); err != nil {
		t.Fatalf("the rendered config is not YAML: %v\n%s", err, cfg)
	}
	eps, _ := doc["endpoints"].([]any)
	for i, ep := range eps {
		keys, _ := get(ep.(map[string]any), "auth.apiKeys").([]any)
		for j, k := range keys {
			km := k.(map[string]any)
			if key, _ := km["key"].(string); !regexp.MustCompile(`^\$\{[A-Z0-9_]+\}$`).MatchString(key) {
				t.Errorf("endpoints[%d].auth.apiKeys[%d].key is %q, not a ${VAR}", i, j, key)
			}
			if _, ok := km["existingSecret"]; ok {
				t.Errorf("endpoints[%d].auth.apiKeys[%d] keeps the chart's existingSecret", i, j)
			}
		}
	}
}

// configVars are the names of the ${VAR}s of a config ($${ is a literal).
func configVars(cfg string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(\$?)\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`).FindAllStringSubmatch(cfg, -1) {
		if m[1] == "$" || m[3] != "" || m[2] == "TOOLGATE_SELF" {
			continue
		}
		out = append(out, m[2])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkConfig runs `toolgate check --offline` on the rendered config, with
// the environment the pod would have.
func checkConfig(t *testing.T, r *rendered, bin string) {
	t.Helper()
	dsn := "postgres://toolgate@127.0.0.1:1/toolgate" // never connected to
	p := newPod(t, r, map[string]string{"toolgate-db/dsn": dsn, "toolgate/dsn": dsn})
	cmd := exec.Command(bin, "check", "--offline", "--config", p.configPath)
	cmd.Env = p.env
	cmd.Dir = p.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("toolgate check --offline on the rendered config: %v\n%s\nconfig:\n%s", err, out, r.configText(t))
	}
	if !strings.Contains(string(out), "config ok") {
		t.Errorf("toolgate check --offline: %s", out)
	}
	for _, v := range testSecrets {
		if v != "" && strings.Contains(string(out), v) {
			t.Errorf("toolgate check printed a secret:\n%s", out)
		}
	}
}

func checkOptional(t *testing.T, r *rendered, vals map[string]any) {
	t.Helper()
	on := func(path string) bool { b, _ := get(vals, path).(bool); return b }
	sel := r.deployment.Spec.Selector.MatchLabels
	if on("podDisruptionBudget.enabled") != (r.pdb != nil) {
		t.Fatalf("PodDisruptionBudget rendered %v, enabled %v", r.pdb != nil, on("podDisruptionBudget.enabled"))
	}
	if r.pdb != nil {
		if !maps.Equal(r.pdb.Spec.Selector.MatchLabels, sel) || r.pdb.Spec.MaxUnavailable == nil || r.pdb.Spec.MaxUnavailable.String() != "1" {
			t.Errorf("PodDisruptionBudget %+v", r.pdb.Spec)
		}
	}
	if on("autoscaling.enabled") != (r.hpa != nil) {
		t.Fatalf("HorizontalPodAutoscaler rendered %v, enabled %v", r.hpa != nil, on("autoscaling.enabled"))
	}
	if r.hpa != nil {
		ref := r.hpa.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.Name != r.deployment.Name || ref.APIVersion != "apps/v1" {
			t.Errorf("the autoscaler scales %+v, not the Deployment", ref)
		}
		if r.hpa.Spec.MinReplicas == nil || int(*r.hpa.Spec.MinReplicas) != asInt(t, get(vals, "autoscaling.minReplicas")) || int(r.hpa.Spec.MaxReplicas) != asInt(t, get(vals, "autoscaling.maxReplicas")) {
			t.Errorf("autoscaler bounds %v..%d", r.hpa.Spec.MinReplicas, r.hpa.Spec.MaxReplicas)
		}
	}
	if on("networkPolicy.enabled") != (r.netpol != nil) {
		t.Fatalf("NetworkPolicy rendered %v, enabled %v", r.netpol != nil, on("networkPolicy.enabled"))
	}
	if r.netpol != nil {
		np := r.netpol.Spec
		if !maps.Equal(np.PodSelector.MatchLabels, sel) || len(np.Ingress) != 1 || len(np.Ingress[0].Ports) != 1 || *np.Ingress[0].Ports[0].Port != intstr.FromString("http") {
			t.Errorf("NetworkPolicy %+v: want the pods, ingress on the container's port only", np)
		}
		egress := get(vals, "networkPolicy.egress").([]any)
		if hasEgress := slices.Contains(np.PolicyTypes, "Egress"); hasEgress != (len(egress) > 0) || len(np.Egress) != len(egress) {
			t.Errorf("NetworkPolicy egress %+v for %d rules", np.PolicyTypes, len(egress))
		}
	}
	if on("serviceMonitor.enabled") != (r.serviceMonitor != nil) {
		t.Fatalf("ServiceMonitor rendered %v, enabled %v", r.serviceMonitor != nil, on("serviceMonitor.enabled"))
	}
	if sm := r.serviceMonitor; sm != nil {
		checkServiceMonitor(t, sm, r, vals)
	}
	if r.serviceAccount != nil && r.serviceAccount.Name != r.deployment.Spec.Template.Spec.ServiceAccountName {
		t.Errorf("ServiceAccount %s, pods run as %s", r.serviceAccount.Name, r.deployment.Spec.Template.Spec.ServiceAccountName)
	}
}

// checkServiceMonitor checks the Prometheus operator object field by
// field: only fields of monitoring.coreos.com/v1 ServiceMonitor, selecting
// the Service, scraping /metrics on its named port.
func checkServiceMonitor(t *testing.T, sm map[string]any, r *rendered, vals map[string]any) {
	t.Helper()
	onlyKeys := func(where string, m any, allowed ...string) map[string]any {
		t.Helper()
		mm, ok := m.(map[string]any)
		if !ok {
			t.Fatalf("ServiceMonitor %s is %T", where, m)
		}
		for k := range mm {
			if !slices.Contains(allowed, k) {
				t.Errorf("ServiceMonitor %s has field %q, not one of %v", where, k, allowed)
			}
		}
		return mm
	}
	onlyKeys("", sm, "apiVersion", "kind", "metadata", "spec")
	meta := onlyKeys("metadata", sm["metadata"], "name", "labels", "namespace", "annotations")
	if meta["name"] != r.deployment.Name {
		t.Errorf("ServiceMonitor name %v", meta["name"])
	}
	labels, _ := meta["labels"].(map[string]any)
	for k, v := range get(vals, "serviceMonitor.labels").(map[string]any) {
		if labels[k] != v {
			t.Errorf("ServiceMonitor lacks label %s=%v", k, v)
		}
	}
	spec := onlyKeys("spec", sm["spec"], "selector", "namespaceSelector", "endpoints", "jobLabel")
	selector := onlyKeys("spec.selector", spec["selector"], "matchLabels")
	ml := map[string]string{}
	for k, v := range selector["matchLabels"].(map[string]any) {
		ml[k] = fmt.Sprint(v)
	}
	for k, v := range ml {
		if r.service.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, which the Service's labels %v lack", k, v, r.service.Labels)
		}
	}
	ns := onlyKeys("spec.namespaceSelector", spec["namespaceSelector"], "matchNames", "any")
	if names, _ := ns["matchNames"].([]any); len(names) != 1 || names[0] != namespace {
		t.Errorf("ServiceMonitor namespaces %v, want [%s]", ns["matchNames"], namespace)
	}
	eps, _ := spec["endpoints"].([]any)
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v", spec["endpoints"])
	}
	ep := onlyKeys("spec.endpoints[0]", eps[0], "port", "path", "interval", "scrapeTimeout", "scheme")
	if ep["port"] != r.service.Spec.Ports[0].Name || ep["path"] != "/metrics" {
		t.Errorf("ServiceMonitor scrapes port %v path %v, want %s /metrics", ep["port"], ep["path"], r.service.Spec.Ports[0].Name)
	}
	dur := regexp.MustCompile(`^[0-9]+(ms|s|m|h)$`)
	for _, k := range []string{"interval", "scrapeTimeout"} {
		if s, _ := ep[k].(string); !dur.MatchString(s) {
			t.Errorf("ServiceMonitor %s %v is not a Prometheus duration", k, ep[k])
		}
	}
}

// TestChartRefusesOP11: values that cannot make a working deployment fail
// the render with a message naming what to change. (OP-11)
func TestChartRefusesOP11(t *testing.T) {
	cases := map[string]struct {
		vals map[string]any
		want string
	}{
		"sqlite-replicas":    {with(sqliteValues(), "replicaCount", 2), "store.type sqlite serves one pod only"},
		"sqlite-autoscaling": {with(sqliteValues(), "autoscaling", map[string]any{"enabled": true}), "autoscaling.enabled needs store.type postgres"},
		"no-dsn":             {with(baseValues(), "store.postgres.existingSecret", ""), "store.postgres.existingSecret is required"},
		"no-confirm-secret":  {with(baseValues(), "confirmSecret.existingSecret", ""), "confirmSecret.existingSecret is required"},
		"chart-defaults":     {map[string]any{}, "is required"},
		"store-in-config":    {with(baseValues(), "config.gateway", map[string]any{"store": "postgres://x"}), "config.gateway.store is set by the chart"},
		"listen-in-config":   {with(baseValues(), "config.gateway", map[string]any{"listen": "0.0.0.0:1"}), "config.gateway.listen is set by the chart"},
		"confirm-in-config":  {with(baseValues(), "config.gateway", map[string]any{"confirm": map[string]any{"secret": "x"}}), "config.gateway.confirm.secret is set by the chart"},
		"inline-api-key": {with(baseValues(), "config.endpoints", []any{map[string]any{"path": "/mcp", "auth": map[string]any{"apiKeys": []any{
			map[string]any{"key": "an-inline-key-0123456789", "actor": map[string]any{"id": "x"}},
		}}}}), "keep API keys in a Secret"},
		"short-grace":     {with(baseValues(), "terminationGracePeriodSeconds", 20), "calls in flight would be killed"},
		"admin-no-keys":   {with(baseValues(), "admin", map[string]any{"enabled": true}), "admin.enabled needs at least one entry"},
		"unknown-value":   {with(baseValues(), "replicas", 3), "replicas"},
		"unknown-store":   {with(baseValues(), "store.type", "mysql"), "store"},
		"hpa-min-max":     {with(baseValues(), "autoscaling", map[string]any{"enabled": true, "minReplicas": 4, "maxReplicas": 2}), "minReplicas is larger"},
		"bad-affinity":    {with(baseValues(), "service.sessionAffinity", "Cookie"), "sessionAffinity"},
		"secret-env-name": {with(baseValues(), "secretEnv", []any{map[string]any{"name": "A B", "existingSecret": "s", "key": "k"}}), "secretEnv"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := renderChart(t, tc.vals)
			if err == nil {
				t.Fatalf("rendered; want refused with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("refused with %q; want it to say %q", err, tc.want)
			}
		})
	}
}

// TestChartLintOP11: the SDK's lint (what `helm lint` runs) finds nothing
// above INFO for each value set. (OP-11)
func TestChartLintOP11(t *testing.T) {
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			res := lint.RunAll(chartDir, vals, namespace, lint.WithKubeVersion(kv))
			for _, m := range res.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("lint: %s", m)
				} else {
					t.Logf("lint: %s", m)
				}
			}
		})
	}
	// The same lint does flag bad values (it only logs a template's fail,
	// which TestChartRefusesOP11 covers): values the schema refuses.
	res := lint.RunAll(chartDir, with(baseValues(), "store.type", "mysql"), namespace, lint.WithKubeVersion(kv))
	if res.HighestSeverity < support.ErrorSev {
		t.Errorf("lint passed values its schema refuses: %v", res.Messages)
	}
}

// TestValuesDocumentedOP11: every value in values.yaml has a comment above
// it (toolgate's own keys under config are documented in
// docs/configuration.md), and every key has a schema entry with a
// description. (OP-11)
func TestValuesDocumentedOP11(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	keyLine := regexp.MustCompile(`^(\s*)([A-Za-z][A-Za-z0-9]*):(.*)$`)
	inConfig := false
	for i, l := range lines {
		m := keyLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if m[1] == "" {
			inConfig = m[2] == "config"
		} else if inConfig && len(m[1]) > 2 {
			continue // toolgate's own keys, in the example config
		}
		if i == 0 || !strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#") {
			t.Errorf("values.yaml line %d: %q has no comment above it", i+1, strings.TrimSpace(l))
		}
	}
	var schema map[string]any
	sb, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(sb, &schema); err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(b, &vals); err != nil {
		t.Fatal(err)
	}
	var walk func(prefix string, v map[string]any, s map[string]any)
	walk = func(prefix string, v map[string]any, s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		for k, val := range v {
			ps, ok := props[k].(map[string]any)
			if !ok {
				t.Errorf("values.schema.json lacks %s%s", prefix, k)
				continue
			}
			if _, ok := ps["description"]; !ok {
				t.Errorf("values.schema.json: %s%s has no description", prefix, k)
			}
			if _, free := ps["properties"]; !free {
				continue // a Kubernetes type, or toolgate's config
			}
			if sub, ok := val.(map[string]any); ok && prefix+k != "config" {
				walk(prefix+k+".", sub, ps)
			}
		}
	}
	walk("", vals, schema)
}

func envVar(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func envValue(c corev1.Container, name string) string {
	if e := envVar(c, name); e != nil {
		return e.Value
	}
	return ""
}

func mountAt(c corev1.Container, path string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func volume(r *rendered, name string) corev1.Volume {
	for _, v := range r.deployment.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	return corev1.Volume{}
}

// TestStrictDecodeRefusesOP11: the decoding the render checks rely on does
// refuse a misspelt field, a misplaced one and a duplicate key, which a
// lenient decoder would drop silently. (OP-11)
func TestStrictDecodeRefusesOP11(t *testing.T) {
	base := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers:\n        - name: c\n          image: i\n"
	var d appsv1.Deployment
	if err := decodeStrict([]byte(base), &d); err != nil {
		t.Fatalf("a valid Deployment: %v", err)
	}
	for name, doc := range map[string]string{
		"misspelt":  base + "          securityContext: {readOnlyRootFileSystem: true}\n",
		"misplaced": base + "          terminationGracePeriodSeconds: 30\n",
		"duplicate": base + "          image: j\n",
	} {
		if err := decodeStrict([]byte(doc), &appsv1.Deployment{}); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
