package mcp

import (
	"fmt"
	"testing"
	"time"
)

// UI-2: the URL elicitations waiting for an actor's connection: complete
// tells every one of that actor (its session first, then its call) and no
// one else's; one taken by id is gone; expired ones are dropped as new
// ones come, and an actor's count is bounded.
func TestConnectWaiters(t *testing.T) {
	var cw connectWaiters
	var order []string
	waiter := func(id string, ttl time.Duration) *connectWaiter {
		w := &connectWaiter{id: id, expires: time.Now().Add(ttl), done: make(chan struct{})}
		w.notify = func() {
			select {
			case <-w.done:
				order = append(order, id+": notified after its call went on")
			default:
				order = append(order, id)
			}
		}
		return w
	}
	a1, a2, b1 := waiter("a1", time.Hour), waiter("a2", time.Hour), waiter("b1", time.Hour)
	cw.add("alice", a1)
	cw.add("alice", a2)
	cw.add("bob", b1)
	if got := cw.take("alice", "a2"); len(got) != 1 || got[0] != a2 {
		t.Fatalf("take(a2) = %v", got)
	}
	if got := cw.take("alice", "a2"); len(got) != 0 {
		t.Fatalf("a2 taken twice: %v", got)
	}
	cw.complete("alice")
	if fmt.Sprint(order) != "[a1]" {
		t.Fatalf("complete(alice) told %v, want a1 alone", order)
	}
	select {
	case <-a1.done:
	default:
		t.Fatal("a1's call was not let go")
	}
	select {
	case <-b1.done:
		t.Fatal("bob's waiter was completed by alice's connection")
	default:
	}

	cw.add("carol", waiter("old", -time.Second))
	for i := range maxConnectWaiters + 2 {
		cw.add("carol", waiter(fmt.Sprint("c", i), time.Hour))
	}
	got := cw.take("carol", "")
	if len(got) != maxConnectWaiters || got[0].id != "c2" {
		t.Fatalf("carol keeps %d waiters from %s, want %d from c2 (the expired one and the oldest dropped)", len(got), got[0].id, maxConnectWaiters)
	}
}
