package serve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

type noPeers struct{}

func (noPeers) Addrs(context.Context) map[string]string { return nil }
func (noPeers) SessionReplica(string) (string, bool)    { return "", false }

// OP-11: a replica accepts a forwarded request only when another replica
// under the shared key signed exactly that request, lately; anything else
// claiming to be forwarded is refused, and a request without the header is
// an ordinary one.
func TestForwardedRequestSignatureOP11(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	a := newForwarder("a", key, noPeers{})
	a.now = func() time.Time { return now }
	b := newForwarder("b", key, noPeers{})
	b.now = a.now
	other := newForwarder("c", []byte("another key, another deployment.."), noPeers{})
	other.now = a.now

	body := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	signed := func(f *forwarder, at time.Time, mutate func(*http.Request, *[]byte)) (*http.Request, []byte) {
		req := httptest.NewRequest(http.MethodPost, "/mcp?x=1", strings.NewReader(string(body)))
		req.Header.Set("Mcp-Session-Id", "s1")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		f.now = func() time.Time { return at }
		h := f.self + ";" + itoa(at.Unix()) + ";" + f.mac(f.self, at.Unix(), req.Method, req.URL.RequestURI(), "s1", "2025-06-18", body)
		req.Header.Set(HeaderForwarded, h)
		f.now = func() time.Time { return now }
		b := append([]byte(nil), body...)
		if mutate != nil {
			mutate(req, &b)
		}
		return req, b
	}
	for _, tc := range []struct {
		name      string
		req       func() (*http.Request, []byte)
		forwarded bool
		refused   bool
	}{
		{"no header: an ordinary request", func() (*http.Request, []byte) {
			return httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(string(body))), body
		}, false, false},
		{"signed by a replica", func() (*http.Request, []byte) { return signed(a, now, nil) }, true, false},
		{"signed a minute ago", func() (*http.Request, []byte) { return signed(a, now.Add(-time.Minute), nil) }, true, false},
		{"signed too long ago", func() (*http.Request, []byte) { return signed(a, now.Add(-forwardSkew-time.Second), nil) }, true, true},
		{"signed under another key", func() (*http.Request, []byte) { return signed(other, now, nil) }, true, true},
		{"body changed", func() (*http.Request, []byte) {
			return signed(a, now, func(_ *http.Request, b *[]byte) { *b = []byte(strings.Replace(string(*b), "1", "2", 1)) })
		}, true, true},
		{"session changed", func() (*http.Request, []byte) {
			return signed(a, now, func(r *http.Request, _ *[]byte) { r.Header.Set("Mcp-Session-Id", "s2") })
		}, true, true},
		{"path changed", func() (*http.Request, []byte) {
			return signed(a, now, func(r *http.Request, _ *[]byte) { r.URL.RawQuery = "x=2" })
		}, true, true},
		{"method changed", func() (*http.Request, []byte) {
			return signed(a, now, func(r *http.Request, _ *[]byte) { r.Method = http.MethodDelete })
		}, true, true},
		{"sender renamed", func() (*http.Request, []byte) {
			return signed(a, now, func(r *http.Request, _ *[]byte) {
				r.Header.Set(HeaderForwarded, "b"+strings.TrimPrefix(r.Header.Get(HeaderForwarded), "a"))
			})
		}, true, true},
		{"malformed", func() (*http.Request, []byte) {
			return signed(a, now, func(r *http.Request, _ *[]byte) { r.Header.Set(HeaderForwarded, "a;x") })
		}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, b2 := tc.req()
			forwarded, err := b.verify(req, b2)
			if forwarded != tc.forwarded || (err != nil) != tc.refused {
				t.Fatalf("verify: forwarded %v, err %v; want forwarded %v, refused %v", forwarded, err, tc.forwarded, tc.refused)
			}
			if err != nil && !errors.Is(err, errForged) {
				t.Fatalf("err %v, want errForged", err)
			}
		})
	}
	// A replica with no forwarding (no shared key) refuses any request
	// claiming to be forwarded.
	req, b2 := signed(a, now, nil)
	var none *forwarder
	if forwarded, err := none.verify(req, b2); !forwarded || err == nil {
		t.Fatalf("no forwarder: forwarded %v, err %v; want refused", forwarded, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// BenchmarkForwardHop measures what passing a request to another replica
// adds (OP-11): signing, one loopback HTTP round trip and the receiver's
// check, against the same request posted directly. go test -run '^$'
// -bench ForwardHop ./mcp/serve/
func BenchmarkForwardHop(b *testing.B) {
	key := []byte("0123456789abcdef0123456789abcdef")
	recv := newForwarder("b", key, noPeers{})
	body := []byte(`{"jsonrpc":"2.0","id":"upstream-1","result":{"action":"accept","content":{"colour":"teal"}}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		if _, err := recv.verify(r, got); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	b.Run("direct", func(b *testing.B) {
		hc := &http.Client{Transport: &http.Transport{}}
		defer hc.CloseIdleConnections()
		for b.Loop() {
			res, err := hc.Post(srv.URL+"/mcp", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	})
	b.Run("forwarded", func(b *testing.B) {
		send := newForwarder("a", key, noPeers{})
		defer send.close()
		in := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		for b.Loop() {
			d := &discard{}
			if err := send.forward(b.Context(), d, in, body, "b", addr); err != nil || d.status != http.StatusAccepted {
				b.Fatalf("forward: %v, status %d", err, d.status)
			}
		}
	})
}
