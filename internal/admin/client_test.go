package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
)

// CO-9.
func TestNewClientURLs(t *testing.T) {
	for _, tc := range []struct {
		url, want string // want: an error's text, or "" for none
	}{
		{"http://127.0.0.1:7332", ""},
		{"http://127.0.0.1:7332/", ""},
		{"127.0.0.1:7332", ""},
		{"https://admin.example.com", ""},
		{"unix:/run/toolgate/admin.sock", ""},
		{"unix:", "no socket path"},
		{"", "pass --attach URL or set TOOLGATE_ATTACH"},
		{"ftp://x", "want http://host:port"},
		{"http://alice:" + fakeKey + "@127.0.0.1:7332", "without credentials"},
		{"http://127.0.0.1:7332/?key=1", "without credentials, query"},
	} {
		_, err := NewClient(tc.url, fakeKey, nil)
		if got := errorText(err); tc.want == "" && err != nil || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%q: error %q, want %q", tc.url, got, tc.want)
		}
		if strings.Contains(errorText(err), fakeKey) {
			t.Errorf("%q: the error carries the key: %v", tc.url, err)
		}
	}
	if _, err := NewClient("http://127.0.0.1:7332", "", nil); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), EnvAdminKey) {
		t.Errorf("no key: %v", err)
	}
}

// CO-9: every command sends the key as a bearer, escapes names and ids into one
// path segment, and decodes its answer.
func TestClientCommands(t *testing.T) {
	f := newFakeAdmin(t)
	var gotIDs []string
	f.handle("GET /v1/whoami", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(Whoami{Operator: "alice"})
	})
	f.handle("POST /v1/confirmations/{id}/approve", func(w http.ResponseWriter, r *http.Request) {
		gotIDs = append(gotIDs, r.PathValue("id"))
		w.WriteHeader(http.StatusNoContent)
	})
	f.handle("POST /v1/confirmations/{id}/reject", func(w http.ResponseWriter, r *http.Request) {
		var rr RejectRequest
		if err := json.NewDecoder(r.Body).Decode(&rr); err != nil || rr.Reason != "not today" || r.Header.Get("Content-Type") != "application/json" {
			writeErr(w, &Error{Status: 400, Code: CodeBadRequest, Message: "bad body"})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	f.handle("POST /v1/refresh/plans", func(w http.ResponseWriter, r *http.Request) {
		var pr PlanRequest
		_ = json.NewDecoder(r.Body).Decode(&pr)
		_ = json.NewEncoder(w).Encode(core.RefreshPlan{ID: "p1", Diff: core.Diff{Upstream: pr.Upstream, Removed: []core.ToolInfo{{Name: "gone"}}}})
	})
	f.handle("GET /v1/audit", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("limit") != "5" || r.URL.Query().Get("since") != "2026-12-01T12:00:00Z" {
			writeErr(w, &Error{Status: 400, Code: CodeBadRequest, Message: "query " + r.URL.RawQuery})
			return
		}
		_ = json.NewEncoder(w).Encode([]core.AuditRecord{{Tool: "t", Outcome: "ok"}})
	})
	f.handle("POST /v1/upstreams/{name}/ping", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(PingResult{Latency: 3 * time.Millisecond})
	})
	_, c := startFake(t, f, nil)
	ctx := bg(t)

	who, err := c.Whoami(ctx)
	if err != nil || who.Operator != "alice" {
		t.Fatalf("whoami: %+v %v", who, err)
	}
	for _, id := range []string{"c1", "a/b c?d%e"} {
		if err := c.ApproveConfirmation(ctx, id); err != nil {
			t.Fatalf("approve %q: %v", id, err)
		}
	}
	if len(gotIDs) != 2 || gotIDs[1] != "a/b c?d%e" {
		t.Fatalf("the server got ids %q", gotIDs)
	}
	if err := c.RejectConfirmation(ctx, "c1", "not today"); err != nil {
		t.Fatalf("reject: %v", err)
	}
	plan, err := c.PlanRefresh(ctx, "notes")
	if err != nil || plan.ID != "p1" || plan.Diff.Upstream != "notes" || len(plan.Diff.Removed) != 1 {
		t.Fatalf("plan: %+v %v", plan, err)
	}
	recs, err := c.Audit(ctx, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), 5)
	if err != nil || len(recs) != 1 {
		t.Fatalf("audit: %+v %v", recs, err)
	}
	if d, err := c.Ping(ctx, "notes"); err != nil || d != 3*time.Millisecond {
		t.Fatalf("ping: %v %v", d, err)
	}
}

// CO-9: errors keep their sentinel, their status and who decided; none carries
// the key, even when the server echoes it.
func TestClientErrors(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f := newFakeAdmin(t)
	f.handle("POST /v1/confirmations/{id}/approve", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("id") {
		case "decided":
			writeErr(w, ErrorFor(&confirm.DecidedError{ID: "decided", Decision: core.DecisionApprove, By: "bob", At: at}))
		case "echo":
			writeErr(w, &Error{Status: 500, Code: CodeInternal, Message: "header was " + r.Header.Get("Authorization")})
		case "proxy":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>bad gateway "+r.Header.Get("Authorization")+"</html>")
		case "slow":
			<-r.Context().Done()
		default:
			writeErr(w, ErrorFor(confirm.ErrUnknownConfirmation))
		}
	})
	srv, c := startFake(t, f, &ClientOptions{Timeout: 300 * time.Millisecond})
	ctx := bg(t)

	err := c.ApproveConfirmation(ctx, "decided")
	var de *confirm.DecidedError
	var ae *Error
	if !errors.Is(err, confirm.ErrAlreadyDecided) || !errors.As(err, &de) || de.By != "bob" || !de.At.Equal(at) || !errors.As(err, &ae) || ae.Status != 409 {
		t.Errorf("already decided: %#v", err)
	}
	if err := c.ApproveConfirmation(ctx, "nope"); !errors.Is(err, confirm.ErrUnknownConfirmation) {
		t.Errorf("unknown: %v", err)
	}
	for _, id := range []string{"echo", "proxy"} {
		err := c.ApproveConfirmation(ctx, id)
		if err == nil || strings.Contains(err.Error(), fakeKey) || !strings.Contains(err.Error(), "•••") {
			t.Errorf("%s: %v (want the echoed key redacted)", id, err)
		}
	}
	if err := c.ApproveConfirmation(ctx, "proxy"); !errors.As(err, &ae) || ae.Status != http.StatusBadGateway {
		t.Errorf("proxy: %#v", err)
	}
	start := time.Now()
	if err := c.ApproveConfirmation(ctx, "slow"); err == nil || time.Since(start) > 5*time.Second || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("slow: %v after %v", err, time.Since(start))
	}

	bad, err := NewClient(srv.URL, "wrong-"+fakeKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = bad.Whoami(ctx)
	if !errors.Is(err, ErrUnauthorized) || strings.Contains(err.Error(), fakeKey) {
		t.Errorf("wrong key: %v", err)
	}
	if _, err := bad.Events(ctx, time.Second); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("wrong key, events: %v", err)
	}

	// Nothing listens: an UnreachableError naming the URL, not the key.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	gone, err := NewClient("http://"+addr, fakeKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	_, err = gone.Whoami(ctx)
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), fakeKey) {
		t.Errorf("unreachable: %v", err)
	}
}

// CO-9: A unix socket URL reaches a listener on that socket.
func TestClientUnixSocket(t *testing.T) {
	noLeaks(t)
	sock := filepath.Join(t.TempDir(), "admin.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeAdmin(t)
	f.handle("GET /v1/whoami", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(Whoami{Operator: "carol"})
	})
	srv := httptest.NewUnstartedServer(f)
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	c, err := NewClient(config.AdminUnixPrefix+sock, fakeKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	who, err := c.Whoami(bg(t))
	if err != nil || who.Operator != "carol" {
		t.Fatalf("whoami over %s: %+v %v", sock, who, err)
	}
	_ = os.Remove(sock)
}

// CO-9: the event stream's framing: comments skipped, multi-line data joined,
// CRLF line ends, an unnamed frame and a frame of an unknown name passed on.
func TestEventStreamFraming(t *testing.T) {
	f := newFakeAdmin(t)
	f.handle("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, ": hello\n\nevent: snapshot\r\ndata: {\"seq\":7,\r\ndata: \"tools\":[]}\r\n\r\n: heartbeat\n\n\nevent: resync\n\nevent: future\ndata: x\n\nevent: event\nid: 8\ndata: {\"seq\":8,\"type\":\"warning\",\"data\":{\"message\":\"m\"}}\n\nevent: snapshot\ndata: {\"seq\":")
	})
	_, c := startFake(t, f, nil)
	st, err := c.Events(bg(t), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	want := []Frame{
		{Event: "snapshot", Data: []byte("{\"seq\":7,\n\"tools\":[]}")},
		{Event: "resync", Data: []byte{}},
		{Event: "future", Data: []byte("x")},
		{Event: "event", ID: "8", Data: []byte(`{"seq":8,"type":"warning","data":{"message":"m"}}`)},
	}
	for i, w := range want {
		got, err := st.Next()
		if err != nil || got.Event != w.Event || got.ID != w.ID || string(got.Data) != string(w.Data) {
			t.Fatalf("frame %d: %q %q %q (%v), want %q %q %q", i, got.Event, got.ID, got.Data, err, w.Event, w.ID, w.Data)
		}
	}
	if _, err := st.Next(); !errors.Is(err, ErrStreamEnded) {
		t.Fatalf("a cut frame at the end: %v, want ErrStreamEnded", err)
	}
}
