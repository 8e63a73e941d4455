package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/idtest"
)

// Operators read plain words: no metric's HELP names a requirement id. The
// descriptions come from every collector on the gateway's registry, so a
// metric without a series yet is read too; the registry's own gathering
// reads the HELP of those that have one. (QB-4)
func TestHelpHasNoRequirementIDs(t *testing.T) {
	m := New(Options{Bus: core.NewRegistry(nil).Bus(), Endpoints: []string{"/mcp"}})
	defer m.Close()

	helps := map[string]string{}
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range m.registered {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		// Desc has no getters: its String form holds the name and help.
		s := d.String()
		helps[s] = s
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		helps[f.GetName()] = f.GetHelp()
	}
	if len(helps) < 30 || !strings.Contains(strings.Join(mapValues(helps), "\n"), "toolgate_policy_refusals_total") {
		t.Fatalf("read %d descriptions: the walk did not see the registry", len(helps))
	}
	for name, help := range helps {
		if ids := idtest.Find(help); len(ids) > 0 {
			t.Errorf("%s: HELP names %s: %q", name, strings.Join(ids, ", "), help)
		}
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
