package mcp_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/mcp"
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
		opts := mcp.EndpointOptions{SessionKey: testSessionKey, SessionIdleTimeout: time.Minute,
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
