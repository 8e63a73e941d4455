package flows

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/inspect"
)

// IN-3: a sessionless client's labels are forgotten a flow window after
// its last call, a session's only when it ends; a call's gathered labels
// follow what reached the client.
func TestFlowStore(t *testing.T) {
	var s Set
	ctx := context.Background()
	mem := Backing{}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	labels := func(key string, sessioned bool, at time.Time) []string {
		t.Helper()
		got, err := s.Labels(ctx, mem, key, sessioned, time.Hour, at)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	add := func(key string, sessioned bool, at time.Time, ls []string) {
		t.Helper()
		if err := s.Add(ctx, mem, key, sessioned, time.Hour, at, ls); err != nil {
			t.Fatal(err)
		}
	}
	key, sessioned := Key("", core.Actor{ID: "dev"}, "modern-peer")
	add(key, sessioned, t0, []string{"untrusted"})
	add(key, sessioned, t0.Add(50*time.Minute), []string{"private", "untrusted"})
	if got := labels(key, sessioned, t0.Add(100*time.Minute)); !slices.Equal(got, []string{"private", "untrusted"}) {
		t.Errorf("within the window of the last call: %v", got)
	}
	if got := labels(key, sessioned, t0.Add(111*time.Minute)); got != nil {
		t.Errorf("a window after the last call: %v", got)
	}
	sk, sessioned := Key("sess-1", core.Actor{ID: "dev"}, "sdk")
	add(sk, sessioned, t0, []string{"private"})
	if got := labels(sk, sessioned, t0.Add(48*time.Hour)); !slices.Equal(got, []string{"private"}) {
		t.Errorf("a session's labels after a long pause: %v", got)
	}
	s.Forget(sk)
	if got := labels(sk, sessioned, t0); got != nil {
		t.Errorf("an ended session's labels: %v", got)
	}

	found := []inspect.Reported{
		{Type: inspect.Injection, Action: inspect.ActionFlag, In: "result"},
		{Type: inspect.PII, Action: inspect.ActionBlock, In: "result"},       // not read
		{Type: inspect.Secrets, Action: inspect.ActionFlag, In: "arguments"}, // the client's own
	}
	if got := Gathered([]string{"sends-out"}, found); !slices.Equal(got, []string{"sends-out", "untrusted"}) {
		t.Errorf("gathered %v", got)
	}
	if got := Gathered([]string{OpenWorld}, nil); !slices.Equal(got, []string{OpenWorld, Untrusted}) {
		t.Errorf("an open-world tool: %v", got)
	}
	tl := ToolLabels(&Rules{Labels: []string{"crm"}, ByGlob: map[string][]string{"send_*": {"sends-out"}}},
		core.Tool{Name: "crm_send_mail", RemoteName: "send_mail", Annotations: []byte(`{"openWorldHint":true,"readOnlyHint":false}`)})
	if !slices.Equal(tl, []string{"crm", "open-world", "sends-out"}) {
		t.Errorf("tool labels %v", tl)
	}
}
