package core

import (
	"testing"
)

// CO-5: a session the operator ends is reported as ended by the operator,
// although the transport's own removal, which the ender triggers, runs first.
func TestSessionEndedByOperator(t *testing.T) {
	bus := NewBus()
	defer bus.Close()
	s := NewSessions(bus)
	s.SetEnder("/mcp", func(id string) error {
		s.Remove(id) // what the transport does when it forgets a session
		return nil
	})
	s.Add(Session{ID: "a", Endpoint: "/mcp"})
	s.Add(Session{ID: "b", Endpoint: "/mcp"})
	_, sub := bus.Subscribe(0)
	defer sub.Close()

	if err := s.End("a"); err != nil {
		t.Fatal(err)
	}
	s.Remove("b") // the client's own end
	for _, want := range []struct {
		id         string
		byOperator bool
	}{{"a", true}, {"b", false}} {
		ev := <-sub.C()
		e, ok := ev.Data.(SessionEnded)
		if !ok || e.Session.ID != want.id || e.ByOperator != want.byOperator {
			t.Fatalf("got %#v, want session %s ended with ByOperator=%v", ev.Data, want.id, want.byOperator)
		}
	}
	if err := s.End("a"); err == nil {
		t.Fatal("ending an ended session succeeded")
	}
}
