package serve_test

import (
	"context"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/mcp/serve"
)

// staticPeers is a directory the test edits.
type staticPeers struct {
	mu sync.Mutex
	m  map[string]string
}

func (p *staticPeers) Addrs(context.Context) map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.m)
}

func (*staticPeers) SessionReplica(string) (string, bool) { return "", false }

func (p *staticPeers) set(replica, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[replica] = addr
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// replicaOptions makes the options of an endpoint replica of one
// deployment, all sharing the session key, the forwarding key and peers.
func replicaOptions(t *testing.T) (opts func(replica string) serve.EndpointOptions, peers *staticPeers) {
	t.Helper()
	key := []byte("a session key both replicas share")[:32]
	fk, err := serve.ForwardKey(key)
	if err != nil {
		t.Fatal(err)
	}
	peers = &staticPeers{m: map[string]string{}}
	return func(replica string) serve.EndpointOptions {
		return serve.EndpointOptions{SessionKey: key, Replica: replica, Peers: peers, ForwardKey: fk}
	}, peers
}

// OP-11: two replicas that pass requests on. A retry reaching the replica
// its call does not wait in is passed to the one it waits in and answered
// there; a replica listed but unreachable leaves the retry to be served
// where it came, a clear error that spends nothing (the same retry at the right replica still goes
// through); a passed request is never passed again, even when the
// directory points back at the sender.
func TestModernRetryPassedToItsReplicaOP11(t *testing.T) {
	up := startElicitingUpstream(t)
	opts, peers := replicaOptions(t)
	urlA, _ := serveRelayedWith(t, up.url, time.Minute, opts("host-a:1"))
	urlB, _ := serveRelayedWith(t, up.url, time.Minute, opts("host-b:2"))
	peers.set("host-a:1", hostOf(t, urlA))
	peers.set("host-b:2", hostOf(t, urlB))
	good := `{"action":"accept","content":{"colour":"blue"}}`

	input, state := askUser(t, urlA, "the door")
	code, ans := retry(t, urlB, "alice", "the door", input, state, good)
	if code != http.StatusOK || !strings.Contains(string(ans["result"]), "answer accept map[colour:blue]") {
		t.Fatalf("the retry at the other replica: HTTP %d %s", code, mustJSON(ans))
	}
	if got := up.next(t); got.Action != "accept" {
		t.Fatalf("the upstream got %+v", got)
	}

	// Listed, but nothing listens there any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	input, state = askUser(t, urlA, "the gate")
	peers.set("host-a:1", dead)
	code, ans = retry(t, urlB, "alice", "the gate", input, state, good)
	if msg := errorMessage(ans); code != http.StatusBadRequest || !strings.Contains(msg, `"host-a:1"`) || !strings.Contains(msg, "is gone") ||
		!strings.Contains(msg, "nothing was passed on") {
		t.Fatalf("the retry with its replica unreachable: HTTP %d %s", code, mustJSON(ans))
	}
	// The directory points host-a at B itself: B passes the retry to B,
	// which serves it and does not pass it again.
	peers.set("host-a:1", hostOf(t, urlB))
	code, ans = retry(t, urlB, "alice", "the gate", input, state, good)
	if msg := errorMessage(ans); code != http.StatusBadRequest || !strings.Contains(msg, `"host-a:1"`) {
		t.Fatalf("the retry looped back: HTTP %d %s", code, mustJSON(ans))
	}
	select {
	case got := <-up.answers:
		t.Fatalf("the upstream got %+v from a refused retry", got)
	default:
	}
	code, ans = retry(t, urlA, "alice", "the gate", input, state, good)
	if code != http.StatusOK || !strings.Contains(string(ans["result"]), "answer accept map[colour:blue]") {
		t.Fatalf("the same retry at its own replica: HTTP %d %s", code, mustJSON(ans))
	}
}

// SV-2, OP-11: a DELETE of a session another replica holds too ends it
// there and here, and its client is answered 200 whenever the holder's
// notice of its own end reaches this replica. A replica sends that notice
// before it answers a DELETE passed to it, so the notice races the rest of
// this replica's handling of the request; here it lands before the other
// replica answers, or as it answers. Each of 40 DELETEs is passed on and
// answered 200, and each session is refused here after.
func TestDeleteRacingItsEndNoticeSV2(t *testing.T) {
	up := startElicitingUpstream(t)
	opts, peers := replicaOptions(t)
	urlA, epA := serveRelayedWith(t, up.url, time.Minute, opts("host-a:1"))
	var notices sync.WaitGroup
	var mu sync.Mutex
	passedOn := 0
	holder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete || r.Header.Get(serve.HeaderForwarded) == "" {
			http.Error(w, "not a passed-on DELETE", http.StatusBadRequest)
			return
		}
		id := r.Header.Get("Mcp-Session-Id")
		mu.Lock()
		passedOn++
		first := passedOn%2 == 0
		mu.Unlock()
		if first {
			epA.EndedElsewhere(id)
		} else {
			notices.Go(func() { epA.EndedElsewhere(id) })
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer holder.Close()
	defer notices.Wait()
	peers.set("host-b:2", holder.Listener.Addr().String())

	const deletes = 40
	for i := range deletes {
		c := testClient(urlA, "alice", "MEMBER")
		initialize(t, c)
		resp, err := c.Delete(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusOK {
			t.Fatalf("DELETE %d on A: HTTP %d %s", i, resp.Status, resp.Body)
		}
		if resp := post(t, c, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); resp.Status != http.StatusNotFound {
			t.Fatalf("session %d after its DELETE: HTTP %d, want 404", i, resp.Status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if passedOn != deletes {
		t.Fatalf("%d DELETEs passed on to the other holder, want %d", passedOn, deletes)
	}
}
