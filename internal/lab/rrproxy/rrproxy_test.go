package rrproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend answers with its name and the body it got.
func backend(t *testing.T, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Mcp-Session-Id", "sid-"+name)
		_, _ = io.WriteString(w, name+":"+string(b))
	}))
	t.Cleanup(s.Close)
	return s
}

// closedURL is a loopback URL where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// OP-5: requests go to the backends in turn, bodies intact; a backend that
// refuses the connection is skipped for the next, and the log says where
// each request went and which backends refused it.
func TestRoundRobinAndFailoverOP5(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	p, err := New([]string{a.URL, closedURL(t), b.URL}, &Options{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	defer http.DefaultClient.CloseIdleConnections()

	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`
	var got []string
	for range 3 {
		code, out := post(t, front.URL+"/mcp", body)
		if code != http.StatusOK || !strings.HasSuffix(out, ":"+body) {
			t.Fatalf("POST: %d %q", code, out)
		}
		got = append(got, out[:1])
	}
	// a, then the dead one skipped for b, then b.
	if strings.Join(got, "") != "abb" {
		t.Errorf("served by %q, want abb", got)
	}
	log, err := p.Wait(t.Context(), time.Second, func(l []Entry) bool { return len(l) == 3 && l[2].Done })
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		backend int
		refused int
	}{{0, 0}, {2, 1}, {2, 0}} {
		e := log[i]
		if e.Backend != want.backend || len(e.Refused) != want.refused || e.RPC != "tools/call" || e.Tool != "echo" || e.ID != "7" || e.Status != 200 || !e.Done {
			t.Errorf("entry %d: %+v, want backend %d with %d refusals", i, e, want.backend, want.refused)
		}
	}
	if log[0].Session != "sid-a" {
		t.Errorf("the answer's session id is not logged: %+v", log[0])
	}
}

// OP-5: with no backend taking the request, the client gets a 502.
func TestAllRefused502(t *testing.T) {
	p, err := New([]string{closedURL(t), closedURL(t)}, &Options{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	defer http.DefaultClient.CloseIdleConnections()
	if code, _ := post(t, front.URL, `{}`); code != http.StatusBadGateway {
		t.Errorf("status %d, want 502", code)
	}
	if l := p.Entries(); len(l) != 1 || l[0].Status != http.StatusBadGateway || len(l[0].Refused) != 2 || l[0].Backend != -1 {
		t.Errorf("log %+v", l)
	}
	if _, err := New(nil, nil); err == nil {
		t.Error("New without backends")
	}
	if _, err := New([]string{"127.0.0.1:1"}, nil); err == nil {
		t.Error("New with a backend that is no URL")
	}
}

// OP-11: backends join and leave the set as a Service's endpoints do in a
// rolling update; a removed one gets no new request, not even as a
// failover target, and an empty set answers 503.
func TestAddRemoveOP11(t *testing.T) {
	a, b, c := backend(t, "a"), backend(t, "b"), backend(t, "c")
	p, err := New([]string{a.URL, b.URL}, &Options{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	defer http.DefaultClient.CloseIdleConnections()
	served := func(n int) string {
		var got []string
		for range n {
			code, out := post(t, front.URL, `{}`)
			if code != http.StatusOK {
				t.Fatalf("POST: %d %q", code, out)
			}
			got = append(got, out[:1])
		}
		slices.Sort(got)
		return strings.Join(slices.Compact(got), "")
	}
	if got := served(4); got != "ab" {
		t.Fatalf("served by %q, want a and b", got)
	}
	ic, err := p.Add(c.URL)
	if err != nil || ic != 2 {
		t.Fatalf("Add: %d, %v", ic, err)
	}
	if got := served(6); got != "abc" {
		t.Fatalf("after Add, served by %q, want a, b and c", got)
	}
	p.Remove(0)
	if got := served(6); got != "bc" {
		t.Fatalf("after Remove(0), served by %q, want b and c only", got)
	}
	// A removed backend is no failover target either: with c stopped, b
	// takes everything.
	p.Remove(2)
	c.Close()
	if got := served(3); got != "b" {
		t.Fatalf("served by %q, want b alone", got)
	}
	p.Remove(1)
	if code, _ := post(t, front.URL, `{}`); code != http.StatusServiceUnavailable {
		t.Errorf("an empty set answered %d, want 503", code)
	}
	if p.Backends() != 3 {
		t.Errorf("Backends %d, want the 3 ever added", p.Backends())
	}
	if _, err := p.Add("not a url"); err == nil {
		t.Error("Add took a backend that is no URL")
	}
}
