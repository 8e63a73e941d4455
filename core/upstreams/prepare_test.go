package upstreams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
)

// preparingUpstream is a core.CallPreparer: each PrepareCall is recorded
// with whether its context had a deadline, and answers refuse when set.
type preparingUpstream struct {
	*coretest.FakeUpstream
	mu       sync.Mutex
	prepared int
	deadline bool
	refuse   *core.Result
}

func (p *preparingUpstream) PrepareCall(ctx context.Context, _ string) (core.Result, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prepared++
	_, p.deadline = ctx.Deadline()
	if p.refuse != nil {
		return *p.refuse, false
	}
	return core.Result{}, true
}

// UI-2, IM-28, IM-29: an upstream that prepares a call (a perActor OAuth
// upstream asking its actor to connect) does so once per call, before and
// outside the per-attempt timeout, whatever the attempts then do: a read
// retried in place is prepared once, an action whose reply was lost is
// still never re-issued, and a call the preparation ends reaches nothing.
func TestPrepareCallOnceOutsideTheAttempt(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := &preparingUpstream{FakeUpstream: coretest.NewFakeUpstream("n",
		core.RemoteTool{Name: "get", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}, core.RemoteTool{Name: "send"})}
	s := spec("n", up)
	s.Timeout = time.Minute
	im := newImporter(t, reg, s)
	coretest.Must(t, im.Start(context.Background()))
	actor := core.Actor{ID: "x"}

	up.FailCall(fmt.Errorf("read: %w", syscall.ECONNRESET))
	if _, err := reg.Invoke(context.Background(), actor, "n_get", nil); err != nil {
		t.Fatal(err)
	}
	if up.Calls("get") != 2 || up.prepared != 1 || up.deadline {
		t.Fatalf("a retried read: %d calls, prepared %d times (deadline %v), want 2 calls prepared once without the attempt's deadline",
			up.Calls("get"), up.prepared, up.deadline)
	}

	up.FailCall(fmt.Errorf("read: %w", syscall.ECONNRESET))
	if _, err := reg.Invoke(context.Background(), actor, "n_send", nil); !errors.Is(err, core.ErrOutcomeUnknown) || up.Calls("send") != 1 || up.prepared != 2 {
		t.Fatalf("an action whose reply was lost: %v, %d calls, prepared %d times; want outcome unknown, 1 call, prepared once more", err, up.Calls("send"), up.prepared)
	}

	refused := core.ErrorResult("Not connected: open http://127.0.0.1/connect")
	up.mu.Lock()
	up.refuse = &refused
	up.mu.Unlock()
	res, err := reg.Invoke(context.Background(), actor, "n_send", nil)
	if err != nil || !res.IsError || string(res.JSON) != string(refused.JSON) || up.Calls("send") != 1 {
		t.Fatalf("a call its preparation ends: %+v %v, %d calls; want the preparation's answer and no call", res, err, up.Calls("send"))
	}
}
