package serve_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/mcp/serve"
)

var testSessionKey = []byte("0123456789abcdef0123456789abcdef")

// SV-2: with a session key, a gateway restarted (a new endpoint with the
// same key) continues the sessions the old one opened, for their actor
// only; a shutdown ends none for good, while DELETE and idle expiry do, and
// such ids are not continued again. Only a DELETE is reported as ended for
// good: an idle expiry is this endpoint's own clock, and another replica may
// still be serving the session.
func TestSessionsResumeUnderTheSameKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var ended []string
		opts := serve.EndpointOptions{SessionKey: testSessionKey, SessionIdleTimeout: time.Minute,
			SessionTerminated: func(id string) { mu.Lock(); ended = append(ended, id); mu.Unlock() }}
		old, _, oldClient := bubbleEndpoint(t, opts)
		kept, deleted, expired := oldClient("a"), oldClient("a"), oldClient("a")
		initialize(t, kept)
		initialize(t, deleted)
		initialize(t, expired)
		if resp, err := deleted.Delete(t.Context()); err != nil || resp.Status != http.StatusOK {
			t.Fatalf("DELETE: %v %v", resp.Status, err)
		}
		time.Sleep(30 * time.Second)
		if _, rpcErr := rpc(t, kept, "tools/list", nil); rpcErr != nil {
			t.Fatal(rpcErr)
		}
		time.Sleep(45 * time.Second)
		synctest.Wait()
		if resp := post(t, expired, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); resp.Status != http.StatusNotFound {
			t.Fatalf("expired session answered %d, want 404", resp.Status)
		}
		if err := old.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := append([]string(nil), ended...)
		mu.Unlock()
		if len(got) != 1 || got[0] != deleted.Session() {
			t.Errorf("reported as ended for good: %v, want only the deleted one, not the expired one nor the one the shutdown closed", got)
		}

		restarted, sessions, client := bubbleEndpoint(t, opts)
		defer restarted.Close(context.Background())
		again := client("a")
		again.SetSession(kept.Session(), "2025-06-18")
		if _, rpcErr := rpc(t, again, "tools/list", nil); rpcErr != nil {
			t.Fatalf("tools/list on the restarted endpoint: %v", rpcErr)
		}
		if s, ok := sessions.Get(kept.Session()); !ok || s.Actor.ID != "a" || s.ClientName != "raw-test" || s.ClientVersion != "9.9" {
			t.Errorf("restarted endpoint's record: %+v (%v)", s, ok)
		}
		other := client("b")
		fresh := client("a")
		initialize(t, fresh)
		other.SetSession(fresh.Session(), "2025-06-18")
		if resp := post(t, other, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); resp.Status != http.StatusNotFound {
			t.Errorf("another actor on a sealed id answered %d, want 404", resp.Status)
		}
		// An endpoint does not continue a session it ended itself. (What
		// an earlier process ended reaches others only as the replicas'
		// event: the gateway tests.)
		bystander := client("a")
		initialize(t, bystander)
		if resp, err := bystander.Delete(t.Context()); err != nil || resp.Status != http.StatusOK {
			t.Fatalf("DELETE: %v %v", resp.Status, err)
		}
		if resp := post(t, bystander, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); resp.Status != http.StatusNotFound {
			t.Errorf("a deleted session answered %d on the endpoint that deleted it, want 404", resp.Status)
		}
	})
}

// SV-2: an operator's end is final even after its tombstone is forgotten.
// The tombstone outlives the age past which no sealed id is continued by an
// endpoint that does not hold it, so when it goes the id is refused for its
// age. A session that was never ended is still continued late in that
// window (a restart, a replica gone), so the age limit costs normal use
// nothing within it.
func TestEndedSessionStaysEndedAfterItsTombstoneSV2(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := serve.EndpointOptions{SessionKey: testSessionKey, SessionIdleTimeout: time.Minute}
		ep, _, client := bubbleEndpoint(t, opts)
		defer ep.Close(context.Background())
		ended := client("a")
		initialize(t, ended)
		if err := ep.EndSession(ended.Session()); err != nil {
			t.Fatal(err)
		}
		// Past the idle timeout (the tombstones' lifetime before), then
		// past the tombstone's own lifetime.
		for _, wait := range []time.Duration{2 * time.Minute, 24*time.Hour + 6*time.Minute} {
			time.Sleep(wait)
			synctest.Wait()
			if resp := post(t, ended, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); resp.Status != http.StatusNotFound {
				t.Fatalf("%v after an operator ended it, the session answered %d, want 404", wait, resp.Status)
			}
		}

		// A session issued 23 h ago, never ended, continues on an endpoint
		// that never saw it.
		fresh, _, client2 := bubbleEndpoint(t, opts)
		defer fresh.Close(context.Background())
		late := client2("a")
		initialize(t, late)
		id := late.Session()
		if err := fresh.Close(context.Background()); err != nil { // a shutdown ends nothing for good
			t.Fatal(err)
		}
		time.Sleep(23 * time.Hour)
		restarted, sessions, client3 := bubbleEndpoint(t, opts)
		defer restarted.Close(context.Background())
		again := client3("a")
		again.SetSession(id, "2025-06-18")
		if _, rpcErr := rpc(t, again, "tools/list", nil); rpcErr != nil {
			t.Fatalf("a 23 h old session on a restarted endpoint: %v", rpcErr)
		}
		if _, ok := sessions.Get(id); !ok {
			t.Error("the continued session is not listed")
		}
		// Past the window it is not.
		if err := restarted.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Hour)
		last, _, client4 := bubbleEndpoint(t, opts)
		defer last.Close(context.Background())
		old := client4("a")
		old.SetSession(id, "2025-06-18")
		if resp := post(t, old, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); resp.Status != http.StatusNotFound {
			t.Errorf("a 25 h old session was continued by an endpoint that never held it (%d), want 404", resp.Status)
		}
	})
}
