package eventbustest_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/eventbustest"
)

// recorder stands in for the test so a helper's failure can be observed:
// Fatal records the message and ends the goroutine, as testing.T does.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.fail(fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	r.failed = append(r.failed, msg)
	r.mu.Unlock()
	runtime.Goexit()
}

// run calls f with a recorder on a goroutine of its own (Fatal ends it) and
// returns the failure message, "" if f passed.
func run(t *testing.T, f func(tb testing.TB)) string {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.failed, "\n")
}

func tool(name string) core.ToolInfo { return core.ToolInfo{Name: name} }

// newBus returns a bus and a subscription to it, both closed with the test.
func newBus(t *testing.T) (*core.Bus, *core.BusSubscription) {
	bus := core.NewBus()
	t.Cleanup(bus.Close)
	_, sub := bus.Subscribe(0)
	return bus, sub
}

func publish(bus *core.Bus, ds ...core.EventData) {
	for _, d := range ds {
		bus.Publish(d)
	}
}

func TestExpect(t *testing.T) {
	for _, tc := range []struct {
		name     string
		events   []core.EventData
		matchers func() []any
		want     []string // the names of the matched events
		left     int      // events still queued afterwards
	}{{
		name:   "type",
		events: []core.EventData{core.ToolRegistered{Tool: tool("a")}},
		matchers: func() []any {
			return []any{eventbustest.Type[core.ToolRegistered]()}
		},
		want: []string{"tool.registered"},
	}, {
		name: "skips others, in order, leaves the rest",
		events: []core.EventData{
			core.Warning{Message: "w"}, core.ToolRegistered{Tool: tool("a")}, core.Warning{},
			core.ToolUnregistered{Tool: tool("a")}, core.ToolRegistered{Tool: tool("b")},
		},
		matchers: func() []any {
			return []any{eventbustest.Type[core.ToolRegistered](), eventbustest.Type[core.ToolUnregistered]()}
		},
		want: []string{"tool.registered", "tool.unregistered"},
		left: 1,
	}, {
		name: "predicate",
		events: []core.EventData{
			core.ToolRegistered{Tool: tool("a")}, core.ToolRegistered{Tool: tool("b")},
		},
		matchers: func() []any {
			return []any{func(e core.ToolRegistered) bool { return e.Tool.Name == "b" }}
		},
		want: []string{"tool.registered"},
	}, {
		name:   "error nil matches",
		events: []core.EventData{core.ToolRegistered{Tool: tool("a")}},
		matchers: func() []any {
			return []any{func(core.ToolRegistered) error { return nil }}
		},
		want: []string{"tool.registered"},
	}, {
		name:   "interface",
		events: []core.EventData{core.Warning{}},
		matchers: func() []any {
			return []any{eventbustest.Type[core.EventData]()}
		},
		want: []string{"warning"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			bus, sub := newBus(t)
			publish(bus, tc.events...)
			var got []string
			for _, ev := range eventbustest.Expect(t, sub, tc.matchers()...) {
				got = append(got, ev.Data.EventName())
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("matched %q, want %q", got, tc.want)
			}
			if n := len(sub.C()); n != tc.left {
				t.Errorf("%d events left, want %d", n, tc.left)
			}
		})
	}
}

func TestExpectCaptures(t *testing.T) {
	bus, sub := newBus(t)
	publish(bus, core.Warning{}, core.ToolRegistered{Tool: tool("c")})
	var got core.ToolRegistered
	eventbustest.Expect(t, sub, func(e core.ToolRegistered) { got = e })
	if got.Tool.Name != "c" {
		t.Errorf("captured %+v", got)
	}
}

func TestExpectWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus, sub := newBus(t)
		go func() {
			time.Sleep(time.Second)
			publish(bus, core.Warning{}, core.ToolRegistered{Tool: tool("late")})
		}()
		evs := eventbustest.Expect(t, sub, eventbustest.Type[core.ToolRegistered]())
		if evs[0].Data.(core.ToolRegistered).Tool.Name != "late" {
			t.Errorf("got %+v", evs)
		}
	})
}

func TestExpectExactly(t *testing.T) {
	bus, sub := newBus(t)
	publish(bus, core.ToolRegistered{Tool: tool("a")}, core.ToolUpdated{}, core.Warning{})
	evs := eventbustest.ExpectExactly(t, sub,
		func(e core.ToolRegistered) bool { return e.Tool.Name == "a" },
		eventbustest.Type[core.ToolUpdated]())
	if len(evs) != 2 || len(sub.C()) != 1 {
		t.Errorf("matched %d, left %d; want 2 and 1", len(evs), len(sub.C()))
	}
	eventbustest.ExpectExactly(t, sub, eventbustest.Type[core.Warning]())
	eventbustest.ExpectExactly(t, sub) // nothing queued
}

// The failures name what was awaited and list what arrived.
func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []core.EventData
		close  bool
		check  func(tb testing.TB, sub *core.BusSubscription)
		want   []string // substrings of the failure
	}{{
		name:   "timeout",
		events: []core.EventData{core.Warning{Message: "only this"}},
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.Expect(tb, sub, eventbustest.Type[core.ToolRegistered]())
		},
		want: []string{"Expect: no core.ToolRegistered (1 of 1) within 15s", "#1 warning core.Warning", "only this"},
	}, {
		name:   "timeout nothing arrived",
		events: nil,
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.Expect(tb, sub, eventbustest.Type[core.Warning](), eventbustest.Type[core.ToolRegistered]())
		},
		want: []string{"no core.Warning (1 of 2)", "(nothing)"},
	}, {
		name:   "predicate never holds",
		events: []core.EventData{core.ToolRegistered{Tool: tool("a")}},
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.Expect(tb, sub, func(e core.ToolRegistered) bool { return e.Tool.Name == "b" })
		},
		want: []string{"no core.ToolRegistered", "#1 tool.registered"},
	}, {
		name:   "exactly: another event in between",
		events: []core.EventData{core.ToolRegistered{}, core.Warning{Message: "between"}, core.ToolUnregistered{}},
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.ExpectExactly(tb, sub, eventbustest.Type[core.ToolRegistered](), eventbustest.Type[core.ToolUnregistered]())
		},
		want: []string{"ExpectExactly: want core.ToolUnregistered (2 of 2), got another event", "#2 warning", "between"},
	}, {
		name:   "exactly: predicate false",
		events: []core.EventData{core.ToolRegistered{Tool: tool("a")}},
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.ExpectExactly(tb, sub, func(e core.ToolRegistered) bool { return e.Tool.Name == "b" })
		},
		want: []string{"want core.ToolRegistered (1 of 1)"},
	}, {
		name:   "exactly none: something queued",
		events: []core.EventData{core.Warning{Message: "queued"}},
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.ExpectExactly(tb, sub)
		},
		want: []string{"want no event", "queued"},
	}, {
		name:   "matcher error",
		events: []core.EventData{core.ToolRegistered{Tool: tool("a")}},
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.Expect(tb, sub, func(core.ToolRegistered) error { return errors.New("wrong tool") })
		},
		want: []string{"core.ToolRegistered (1 of 1): wrong tool"},
	}, {
		name:  "closed",
		close: true,
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.Expect(tb, sub, eventbustest.Type[core.Warning]())
		},
		want: []string{"the subscription closed while waiting for core.Warning"},
	}, {
		name: "not a matcher",
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.Expect(tb, sub, func(a, b core.Warning) {})
		},
		want: []string{"matcher 0: func(core.Warning, core.Warning) is not a func of one event payload"},
	}, {
		name: "bad result",
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.Expect(tb, sub, func(core.Warning) int { return 0 })
		},
		want: []string{"returns neither nothing, a bool nor an error"},
	}, {
		name: "no matchers",
		check: func(tb testing.TB, sub *core.BusSubscription) {
			eventbustest.Expect(tb, sub)
		},
		want: []string{"no matchers"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			// A bubble lets the timeout cases pass Timeout at once.
			synctest.Test(t, func(t *testing.T) {
				bus, sub := newBus(t)
				publish(bus, tc.events...)
				if tc.close {
					sub.Close()
				}
				got := run(t, func(tb testing.TB) { tc.check(tb, sub) })
				if got == "" {
					t.Fatal("passed, want a failure")
				}
				for _, w := range tc.want {
					if !strings.Contains(got, w) {
						t.Errorf("failure %q does not contain %q", got, w)
					}
				}
			})
		})
	}
}

// A big payload is cut short in the list of what arrived.
func TestFailureCutsLongEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus, sub := newBus(t)
		publish(bus, core.Warning{Message: strings.Repeat("x", 10_000)})
		got := run(t, func(tb testing.TB) { eventbustest.Expect(tb, sub, eventbustest.Type[core.ToolRegistered]()) })
		if len(got) > 1000 || !strings.Contains(got, "…") {
			t.Errorf("failure of %d bytes: %.200q", len(got), got)
		}
	})
}
