package helmtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart under test, relative to this package.
var chartDir = filepath.Join("..", "helm", "toolgate")

const (
	releaseName = "gw"
	namespace   = "mcp"
	// kubeVersion is the cluster the chart is rendered for: the oldest
	// its kubeVersion constraint admits (preStop sleep needs 1.30).
	kubeVersion = "v1.30.0"
)

// rendered is one render of the chart: every object decoded strictly into
// its API type, the ServiceMonitor as unstructured.
type rendered struct {
	deployment     *appsv1.Deployment
	service        *corev1.Service
	configMap      *corev1.ConfigMap
	serviceAccount *corev1.ServiceAccount
	pdb            *policyv1.PodDisruptionBudget
	hpa            *autoscalingv2.HorizontalPodAutoscaler
	netpol         *networkingv1.NetworkPolicy
	serviceMonitor map[string]any
	kinds          []string // every object's kind, in file order
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return c
}

func capabilities(t *testing.T) *common.Capabilities {
	t.Helper()
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	return caps
}

// renderChart renders the chart as `helm template` would (values merged
// over values.yaml, checked against values.schema.json); the error is the
// chart's refusal, if any.
func renderChart(t *testing.T, vals map[string]any) (map[string]string, error) {
	t.Helper()
	c := loadChart(t)
	top, err := util.ToRenderValuesWithSchemaValidation(c, vals, common.ReleaseOptions{Name: releaseName, Namespace: namespace, IsInstall: true, Revision: 1}, capabilities(t), false)
	if err != nil {
		return nil, err
	}
	return engine.Render(c, top)
}

// mustRender renders vals and decodes every object strictly.
func mustRender(t *testing.T, vals map[string]any) *rendered {
	t.Helper()
	files, err := renderChart(t, vals)
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	r := &rendered{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		rd := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(files[name])))
		for {
			doc, err := rd.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			r.decode(t, name, doc)
		}
	}
	if r.deployment == nil || r.service == nil || r.configMap == nil {
		t.Fatalf("the render lacks a Deployment, Service or ConfigMap: %v", r.kinds)
	}
	return r
}

// decode reads one object into its type, refusing unknown and duplicate
// fields: a misspelt or misplaced key fails here, not in a cluster.
func (r *rendered) decode(t *testing.T, file string, doc []byte) {
	t.Helper()
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		t.Fatalf("%s: %v\n%s", file, err, doc)
	}
	strict := func(into any, apiVersion string) {
		t.Helper()
		if head.APIVersion != apiVersion {
			t.Fatalf("%s: %s is %s, want %s", file, head.Kind, head.APIVersion, apiVersion)
		}
		if err := decodeStrict(doc, into); err != nil {
			t.Fatalf("%s: %s does not decode strictly: %v\n%s", file, head.Kind, err, doc)
		}
	}
	once := func(have bool) {
		t.Helper()
		if have {
			t.Fatalf("%s: a second %s", file, head.Kind)
		}
	}
	r.kinds = append(r.kinds, head.Kind)
	switch head.Kind {
	case "Deployment":
		once(r.deployment != nil)
		r.deployment = &appsv1.Deployment{}
		strict(r.deployment, "apps/v1")
	case "Service":
		once(r.service != nil)
		r.service = &corev1.Service{}
		strict(r.service, "v1")
	case "ConfigMap":
		once(r.configMap != nil)
		r.configMap = &corev1.ConfigMap{}
		strict(r.configMap, "v1")
	case "ServiceAccount":
		once(r.serviceAccount != nil)
		r.serviceAccount = &corev1.ServiceAccount{}
		strict(r.serviceAccount, "v1")
	case "PodDisruptionBudget":
		once(r.pdb != nil)
		r.pdb = &policyv1.PodDisruptionBudget{}
		strict(r.pdb, "policy/v1")
	case "HorizontalPodAutoscaler":
		once(r.hpa != nil)
		r.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
		strict(r.hpa, "autoscaling/v2")
	case "NetworkPolicy":
		once(r.netpol != nil)
		r.netpol = &networkingv1.NetworkPolicy{}
		strict(r.netpol, "networking.k8s.io/v1")
	case "ServiceMonitor":
		once(r.serviceMonitor != nil)
		if head.APIVersion != "monitoring.coreos.com/v1" {
			t.Fatalf("%s: ServiceMonitor is %s", file, head.APIVersion)
		}
		if err := decodeStrict(doc, &r.serviceMonitor); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	default:
		t.Fatalf("%s: an object of kind %q the test does not know: decode it too", file, head.Kind)
	}
}

// container is the Deployment's one container.
func (r *rendered) container(t *testing.T) corev1.Container {
	t.Helper()
	cs := r.deployment.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	return cs[0]
}

// configText is the rendered toolgate.yaml.
func (r *rendered) configText(t *testing.T) string {
	t.Helper()
	s, ok := r.configMap.Data["toolgate.yaml"]
	if !ok {
		t.Fatalf("the ConfigMap has no toolgate.yaml: keys %v", slices.Collect(maps.Keys(r.configMap.Data)))
	}
	return s
}

// secretRefs are the container's environment variables taken from Secrets,
// as "secret/key" by variable.
func (r *rendered) secretRefs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range r.container(t).Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			out[e.Name] = fmt.Sprintf("%s/%s", e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
		}
	}
	return out
}

// decodeStrict decodes a YAML object into its API type as the API server
// does in strict mode: field names match case-sensitively (encoding/json
// alone would take readOnlyRootFileSystem for readOnlyRootFilesystem), and
// unknown fields and keys given twice are refused.
func decodeStrict(doc []byte, into any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, into, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}
