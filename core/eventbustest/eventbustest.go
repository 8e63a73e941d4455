// Package eventbustest checks the events a test receives on a core.Bus
// subscription: Expect waits for events in order and skips the others,
// ExpectExactly allows nothing else in between. Both are bounded by Timeout
// and fail the test with the events that did arrive.
//
// An event is described by a function of its payload type:
//
//	eventbustest.Type[core.ToolRegistered]()         // any ToolRegistered
//	func(e core.ToolRegistered) bool { ... }         // one for which it holds
//	func(e core.ConfirmationDecided) { got = e }     // any, captured
//	func(e core.RefreshApplied) error { ... }        // a non-nil error fails the test
//
// The payload type may be an interface (core.EventData matches any event).
package eventbustest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

// Subscription is what the helpers read from: a *core.BusSubscription or a
// console's core.Subscription.
type Subscription interface {
	C() <-chan core.Event
}

// Timeout bounds one Expect or ExpectExactly. It is generous so that a slow,
// loaded machine fails nothing that is merely late; inside a
// testing/synctest bubble it passes at once when nothing else can run.
const Timeout = 15 * time.Second

// Type matches any event whose payload is a T.
func Type[T any]() func(T) { return func(T) {} }

// Expect waits until events matching each of matchers have arrived on sub,
// in that order, skipping events that do not match the one awaited next. It
// returns the matched events and leaves later ones in sub. Call it from the
// test's goroutine.
func Expect(t testing.TB, sub Subscription, matchers ...any) []core.Event {
	t.Helper()
	if len(matchers) == 0 {
		t.Fatal("eventbustest.Expect: no matchers")
	}
	return expect(t, sub, false, matchers)
}

// ExpectExactly waits for the next len(matchers) events of sub and requires
// each to match its matcher, in order, with nothing else in between. With no
// matchers it requires that nothing is queued on sub now; to show that
// nothing will arrive, publish a barrier after the work under test and
// expect exactly the barrier. Call it from the test's goroutine.
func ExpectExactly(t testing.TB, sub Subscription, matchers ...any) []core.Event {
	t.Helper()
	if len(matchers) == 0 {
		select {
		case ev, ok := <-sub.C():
			if ok {
				t.Fatalf("eventbustest.ExpectExactly: want no event, got\n%s", describe([]core.Event{ev}))
			}
		default:
		}
		return nil
	}
	return expect(t, sub, true, matchers)
}

func expect(t testing.TB, sub Subscription, exact bool, raw []any) []core.Event {
	t.Helper()
	ms := make([]matcher, len(raw))
	for i, r := range raw {
		m, err := newMatcher(r)
		if err != nil {
			t.Fatalf("eventbustest: matcher %d: %v", i, err)
		}
		ms[i] = m
	}
	fn := "Expect"
	if exact {
		fn = "ExpectExactly"
	}
	timeout := time.NewTimer(Timeout)
	defer timeout.Stop()
	var seen, got []core.Event
	for len(got) < len(ms) {
		m := ms[len(got)]
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatalf("eventbustest.%s: the subscription closed while waiting for %s (%d of %d); arrived:\n%s",
					fn, m.want, len(got)+1, len(ms), describe(seen))
			}
			seen = append(seen, ev)
			matched, err := m.match(ev.Data)
			switch {
			case err != nil:
				t.Fatalf("eventbustest.%s: %s (%d of %d): %v\narrived:\n%s", fn, m.want, len(got)+1, len(ms), err, describe(seen))
			case matched:
				got = append(got, ev)
			case exact:
				t.Fatalf("eventbustest.%s: want %s (%d of %d), got another event; arrived:\n%s",
					fn, m.want, len(got)+1, len(ms), describe(seen))
			}
		case <-timeout.C:
			t.Fatalf("eventbustest.%s: no %s (%d of %d) within %v; arrived:\n%s",
				fn, m.want, len(got)+1, len(ms), Timeout, describe(seen))
		}
	}
	return got
}

// matcher is one compiled matcher: want names it in messages.
type matcher struct {
	want  string
	match func(core.EventData) (bool, error)
}

var (
	boolType  = reflect.TypeFor[bool]()
	errorType = reflect.TypeFor[error]()
)

// newMatcher accepts func(T), func(T) bool and func(T) error.
func newMatcher(f any) (matcher, error) {
	fv := reflect.ValueOf(f)
	if f == nil || fv.Kind() != reflect.Func || fv.IsNil() || fv.Type().NumIn() != 1 || fv.Type().IsVariadic() {
		return matcher{}, fmt.Errorf("%T is not a func of one event payload", f)
	}
	ft := fv.Type()
	in := ft.In(0)
	var result func([]reflect.Value) (bool, error)
	switch {
	case ft.NumOut() == 0:
		result = func([]reflect.Value) (bool, error) { return true, nil }
	case ft.NumOut() == 1 && ft.Out(0) == boolType:
		result = func(out []reflect.Value) (bool, error) { return out[0].Bool(), nil }
	case ft.NumOut() == 1 && ft.Out(0) == errorType:
		result = func(out []reflect.Value) (bool, error) {
			err, _ := out[0].Interface().(error)
			return err == nil, err
		}
	default:
		return matcher{}, fmt.Errorf("%T returns neither nothing, a bool nor an error", f)
	}
	return matcher{
		want: in.String(),
		match: func(d core.EventData) (bool, error) {
			if d == nil || !reflect.TypeOf(d).AssignableTo(in) {
				return false, nil
			}
			return result(fv.Call([]reflect.Value{reflect.ValueOf(d)}))
		},
	}, nil
}

// describe lists events one a line, each cut short so a big payload (a
// snapshot, a schema) does not drown the message.
func describe(evs []core.Event) string {
	if len(evs) == 0 {
		return "  (nothing)"
	}
	const max = 300
	var b strings.Builder
	for _, ev := range evs {
		s := fmt.Sprintf("%T%+v", ev.Data, ev.Data)
		if len(s) > max {
			s = s[:max] + "…"
		}
		fmt.Fprintf(&b, "  #%d %s %s\n", ev.Seq, eventName(ev.Data), s)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func eventName(d core.EventData) string {
	if d == nil {
		return "(nil)"
	}
	return d.EventName()
}
