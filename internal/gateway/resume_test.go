package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/store/postgres"
)

const otherActorKey = "gateway-test-other-key-7c4e2a9b"

// rawClient speaks Streamable HTTP by hand, so a test chooses which
// replica each request goes to and which session id it carries.
type rawClient struct {
	t   *testing.T
	ctx context.Context
}

type rawReply struct {
	status int
	header http.Header
	msg    struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	body string
}

// post sends one JSON-RPC message to base's /mcp.
func (c rawClient) post(base, key, sid, body string) rawReply {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, "http://"+base+"/mcp", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	return c.do(req, key, sid)
}

func (c rawClient) do(req *http.Request, key, sid string) rawReply {
	c.t.Helper()
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := rawReply{status: resp.StatusCode, header: resp.Header, body: string(raw)}
	payload := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The answer is the event carrying a result or an error.
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && (strings.Contains(d, `"result"`) || strings.Contains(d, `"error"`)) {
				payload = []byte(d)
			}
		}
	}
	if r.status == http.StatusOK {
		_ = json.Unmarshal(payload, &r.msg)
	}
	return r
}

func (c rawClient) initialize(base, key string) string {
	c.t.Helper()
	r := c.post(base, key, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"resume-test","version":"4.2"}}}`)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" {
		c.t.Fatalf("initialize on %s: HTTP %d, session %q: %s", base, r.status, sid, r.body)
	}
	return sid
}

// list answers tools/list on base, failing the test unless it lists
// notes_search.
func (c rawClient) list(base, key, sid string) {
	c.t.Helper()
	r := c.post(base, key, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.msg.Result), `"notes_search"`) {
		c.t.Fatalf("tools/list on %s: HTTP %d: %s", base, r.status, r.body)
	}
}

// search calls notes_search on base, failing the test unless it answers
// the note.
func (c rawClient) search(base, key, sid string) {
	c.t.Helper()
	r := c.post(base, key, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"notes_search","arguments":{"query":"toolgate"}}}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.msg.Result), "Welcome to toolgate") || strings.Contains(string(r.msg.Result), `"isError":true`) {
		c.t.Fatalf("notes_search on %s: HTTP %d: %s", base, r.status, r.body)
	}
}

// status is the HTTP status of a ping on base with sid.
func (c rawClient) status(base, key, sid string) int {
	c.t.Helper()
	return c.post(base, key, sid, `{"jsonrpc":"2.0","id":4,"method":"ping"}`).status
}

func (c rawClient) delete(base, key, sid string) int {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.ctx, http.MethodDelete, "http://"+base+"/mcp", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.do(req, key, sid).status
}

// tamper changes one character in the middle of id.
func tamper(id string) string {
	b := []byte(id)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// SV-2, OP-5: a session opened on replica A continues on replica B, which
// never saw its initialize: tools/list and tools/call succeed there, and B
// lists it with the client's info and itself as the replica. A tampered id
// and another actor's key on a sealed id are 404. A session DELETEd on A
// is ended on B and not continued there again. When A dies, its sessions
// carry on at B, including one B had never served.
func TestSessionContinuesOnAnotherReplicaSV2(t *testing.T) {
	ctx := testCtx(t)
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	yaml := strings.Replace(gatewayYAML(dsn, upstreamYAML("notes", serveDemo(t, "notes"), true)),
		"          actor: {id: alice, roles: [MEMBER]}\n",
		"          actor: {id: alice, roles: [MEMBER]}\n        - key: "+otherActorKey+"\n          actor: {id: bob, roles: [MEMBER]}\n", 1)
	rs := startReplicas(t, ctx, yaml, 2, notesTools)
	a, b := rs[0].g.Addr(), rs[1].g.Addr()
	c := rawClient{t, ctx}

	sid := c.initialize(a, testKey)
	c.list(a, testKey, sid)
	c.list(b, testKey, sid)
	c.search(b, testKey, sid)
	c.search(a, testKey, sid)
	sess, ok := rs[1].g.Sessions().Get(sid)
	switch onA, okA := rs[0].g.Sessions().Get(sid); {
	case !ok:
		// B passed the requests to A, which the store already listed as
		// the session's holder (OP-11): then A alone holds it.
		if !okA || onA.Actor.ID != "alice" || onA.Replica == "" {
			t.Errorf("B neither continued the session nor passed it on to A: A's record %+v (found %v)", onA, okA)
		}
	case sess.Actor.ID != "alice" || sess.ClientName != "resume-test" || sess.ClientVersion != "4.2" || sess.Protocol != "2025-06-18" || sess.Replica == "":
		t.Errorf("B's record of the session: %+v; want alice's, resume-test 4.2 on 2025-06-18, with a replica", sess)
	case onA.Replica == "" || onA.Replica == sess.Replica:
		// In one test process the replicas are host:pid and host:pid/N.
		t.Errorf("A's record names replica %q, B's %q; want two names", onA.Replica, sess.Replica)
	}

	t.Run("tampered id", func(t *testing.T) {
		c := rawClient{t, ctx}
		for _, base := range []string{a, b} {
			if st := c.status(base, testKey, tamper(sid)); st != http.StatusNotFound {
				t.Errorf("tampered id on %s: HTTP %d, want 404", base, st)
			}
		}
		if st := c.status(b, testKey, "not-a-sealed-id"); st != http.StatusNotFound {
			t.Errorf("unknown id on B: HTTP %d, want 404", st)
		}
	})

	t.Run("another actor's key", func(t *testing.T) {
		c := rawClient{t, ctx}
		fresh := c.initialize(a, testKey)
		if st := c.status(b, otherActorKey, fresh); st != http.StatusNotFound {
			t.Errorf("bob's key on alice's sealed id on B: HTTP %d, want 404", st)
		}
		if st := c.status(b, otherActorKey, sid); st != http.StatusNotFound {
			t.Errorf("bob's key on alice's session B serves: HTTP %d, want 404", st)
		}
		if _, ok := rs[1].g.Sessions().Get(fresh); ok {
			t.Error("B adopted alice's session for bob")
		}
		c.list(b, testKey, fresh) // still alice's to continue
	})

	t.Run("deleted on A", func(t *testing.T) {
		c := rawClient{t, ctx}
		_, busB := rs[1].g.Registry().Bus().Subscribe(0)
		defer busB.Close()
		gone := c.initialize(a, testKey)
		c.list(b, testKey, gone)
		// B either continued the session or passed the request on to A,
		// its holder in the store (OP-11); only a B that held it has an
		// end of its own to publish.
		_, heldByB := rs[1].g.Sessions().Get(gone)
		if st := c.delete(a, testKey, gone); st != http.StatusOK {
			t.Fatalf("DELETE on A: HTTP %d", st)
		}
		if heldByB {
			within(t, ctx, "the end reaching B", func(ctx context.Context) {
				waitBusEvent(t, ctx, busB, "B ending the session", func(d core.EventData) bool {
					e, ok := d.(core.SessionEnded)
					return ok && e.Session.ID == gone
				})
			})
		}
		for _, base := range []string{b, a} {
			if st := c.status(base, testKey, gone); st != http.StatusNotFound {
				t.Errorf("the deleted session on %s: HTTP %d, want 404", base, st)
			}
		}
		// Deleted on B too, without ever having served there.
		never := c.initialize(a, testKey)
		if st := c.delete(b, testKey, never); st != http.StatusOK {
			t.Fatalf("DELETE on B: HTTP %d", st)
		}
		if st := c.status(b, testKey, never); st != http.StatusNotFound {
			t.Errorf("the session deleted on B, on B: HTTP %d, want 404", st)
		}
	})

	onlyA := c.initialize(a, testKey)
	c.search(a, testKey, onlyA)
	mark := c.initialize(a, testKey)
	c.list(b, testKey, mark)
	_, markOnB := rs[1].g.Sessions().Get(mark)
	_, busB := rs[1].g.Registry().Bus().Subscribe(0)
	defer busB.Close()
	closeGateway(t, rs[0].g)
	// A's shutdown ends no session for good. Had it said otherwise, B
	// would have heard it before this marker, sent after A was gone.
	late, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if err := late.Broadcast(ctx, core.SharedEvent{Kind: core.SharedSessionEnded, ID: mark}); err != nil {
		t.Fatal(err)
	}
	if markOnB {
		waitBusEvent(t, ctx, busB, "the marker ending a session on B", func(d core.EventData) bool {
			e, ok := d.(core.SessionEnded)
			return ok && e.Session.ID == mark
		})
	}
	c.search(b, testKey, sid)
	c.search(b, testKey, onlyA)
	c.list(b, testKey, onlyA)
}

// SV-2, IM-25, OP-5: a client that opened its session on replica A and
// opens its GET stream on replica B is sent notifications/tools/list_changed
// there.
func TestListChangedOnAnotherReplicasStreamSV2(t *testing.T) {
	ctx := testCtx(t)
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	rs := startReplicas(t, ctx, gatewayYAML(dsn, upstreamYAML("notes", serveDemo(t, "notes"), true)), 2, notesTools)
	a, b := rs[0].g.Addr(), rs[1].g.Addr()
	c := rawClient{t, ctx}
	sid := c.initialize(a, testKey)

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, "http://"+b+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET stream on B: HTTP %d: %s", resp.StatusCode, body)
	}
	heard := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "notifications/tools/list_changed") {
				close(heard)
				return
			}
		}
	}()
	if err := rs[1].g.ConsoleAs("ops").ApproveTool(ctx, "notes_search", "ops"); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "list_changed on B's stream", func(ctx context.Context) {
		select {
		case <-heard:
		case <-ctx.Done():
			t.Fatal("no notifications/tools/list_changed on the GET stream at B")
		}
	})
}
