// Package rrproxy is a round-robin reverse proxy in front of several
// toolgate replicas (OP-5, SV-2): each request goes to the next replica, so
// one client's requests spread over all of them, as behind a load balancer
// that does not pin sessions. A replica that refuses the connection is
// skipped for the next one — the request never reached it, so sending it
// elsewhere cannot run anything twice (nginx's proxy_next_upstream error).
// Any other failure is the client's 502.
//
// Backends may join (Add) and leave (Remove) while it serves, as a
// Service's endpoints do while pods roll: a request already sent stays
// where it went, a new one goes only to a backend in the set.
//
// With Options.Record the proxy keeps a log of every request: which
// replica served it, and the JSON-RPC method and tool read from its body.
// `toolgate-lab replicas` runs it without the log; the topology test
// reads the log to know where each request went.
package rrproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// MaxBody is the largest request body the proxy forwards; it holds each
// body to resend it when a replica refuses the connection. Larger is 413,
// as toolgate's own default limit (SV-8).
const MaxBody = 4 << 20

// Options adjust a Proxy; nil means defaults.
type Options struct {
	// Record keeps a log entry per request (Entries, Wait).
	Record bool
	// Transport carries the requests to the replicas; nil is a clone of
	// http.DefaultTransport with 64 idle connections per replica.
	Transport *http.Transport
}

// Entry is one request as the proxy saw it.
type Entry struct {
	Seq    int    `json:"seq"`
	Method string `json:"method"` // HTTP method
	// Session is the request's Mcp-Session-Id; for an initialize, the one
	// the replica answered with.
	Session string `json:"session,omitempty"`
	// RPC is the JSON-RPC method of a POST body, Tool the name of a
	// tools/call, ID its JSON-RPC id (raw).
	RPC  string `json:"rpc,omitempty"`
	Tool string `json:"tool,omitempty"`
	ID   string `json:"id,omitempty"`
	// Backend is the index of the replica the request was sent to last
	// (-1: none yet); Refused lists those that refused it first.
	Backend int   `json:"backend"`
	Refused []int `json:"refused,omitempty"`
	// Status is the replica's answer (0 while waiting, 502 when none took
	// the request); Done is set once the answer's body has been relayed.
	Status int  `json:"status"`
	Done   bool `json:"done"`
}

// Proxy is an http.Handler; safe for concurrent use.
type Proxy struct {
	rp     *httputil.ReverseProxy
	tr     *http.Transport
	record bool
	next   atomic.Uint64

	// pool is read without a lock; poolMu serialises Add and Remove.
	poolMu sync.Mutex
	pool   atomic.Pointer[pool]

	mu      sync.Mutex
	log     []Entry
	changed chan struct{} // closed and replaced on every change to log
}

// pool is the set of backends at one moment; never changed once stored.
type pool struct {
	all  []*url.URL // every backend ever added, by index
	live []int      // indexes of those in the set, in order
}

type ctxKey struct{}

// request is what the proxy's transport needs of one request.
type request struct {
	body  []byte
	live  []int // the backends in the set when the request came
	start int   // position in live of the first one to try
	entry int   // index in log, -1 when not recording
}

// New is a proxy over backends, base URLs such as http://127.0.0.1:7331
// (the request's path and query are kept).
func New(backends []string, opts *Options) (*Proxy, error) {
	if len(backends) == 0 {
		return nil, errors.New("rrproxy: no backends")
	}
	if opts == nil {
		opts = &Options{}
	}
	p := &Proxy{record: opts.Record, changed: make(chan struct{})}
	pl := &pool{}
	for i, b := range backends {
		u, err := parseBackend(b)
		if err != nil {
			return nil, err
		}
		pl.all = append(pl.all, u)
		pl.live = append(pl.live, i)
	}
	p.pool.Store(pl)
	tr := opts.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
	}
	p.tr = tr
	p.rp = &httputil.ReverseProxy{
		// The transport picks the replica; Rewrite only keeps the
		// client's headers as they came (no X-Forwarded-For: a gateway
		// on loopback needs none).
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.Out.Host = "" },
		Transport:     &failover{p: p, base: tr},
		FlushInterval: -1, // SSE: every event at once
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "rrproxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	return p, nil
}

// CloseIdleConnections closes the proxy's idle connections to the
// replicas; call it once the proxy's server has stopped.
func (p *Proxy) CloseIdleConnections() { p.tr.CloseIdleConnections() }

// Backends is the number of replicas ever added, removed ones included.
func (p *Proxy) Backends() int { return len(p.pool.Load().all) }

func parseBackend(b string) (*url.URL, error) {
	u, err := url.Parse(b)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("rrproxy: backend %q is not a base URL", b)
	}
	return u, nil
}

// Add puts a backend in the set and returns its index (Entry.Backend).
func (p *Proxy) Add(base string) (int, error) {
	u, err := parseBackend(base)
	if err != nil {
		return -1, err
	}
	p.poolMu.Lock()
	defer p.poolMu.Unlock()
	old := p.pool.Load()
	next := &pool{all: append(slices.Clip(old.all), u), live: append(slices.Clip(old.live), len(old.all))}
	p.pool.Store(next)
	return len(old.all), nil
}

// Remove takes backend i out of the set: a request that comes after it
// returns is never sent there, not even failing over; requests that came
// before carry on where they are.
func (p *Proxy) Remove(i int) {
	p.poolMu.Lock()
	defer p.poolMu.Unlock()
	old := p.pool.Load()
	next := &pool{all: old.all, live: slices.DeleteFunc(slices.Clone(old.live), func(j int) bool { return j == i })}
	p.pool.Store(next)
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			http.Error(w, "rrproxy: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		body = b
	}
	live := p.pool.Load().live
	if len(live) == 0 {
		http.Error(w, "rrproxy: no backend in the set", http.StatusServiceUnavailable)
		return
	}
	req := &request{body: body, live: live, start: int((p.next.Add(1) - 1) % uint64(len(live))), entry: -1}
	if p.record {
		e := Entry{Method: r.Method, Session: r.Header.Get("Mcp-Session-Id"), Backend: -1}
		if r.Method == http.MethodPost {
			e.RPC, e.Tool, e.ID = parseRPC(body)
		}
		req.entry = p.add(e)
		defer p.update(req.entry, func(e *Entry) {
			if e.Status == 0 {
				e.Status = http.StatusBadGateway
			}
			e.Done = true
		})
	}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, req))
	p.rp.ServeHTTP(w, r)
}

// parseRPC reads a single JSON-RPC message's method, tool name and id; a
// batch or anything else leaves them empty.
func parseRPC(body []byte) (method, tool, id string) {
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil {
		return "", "", ""
	}
	if m.Method == "tools/call" {
		tool = m.Params.Name
	}
	return m.Method, tool, string(m.ID)
}

// failover sends a request to its replica, and to the next ones while they
// refuse the connection.
type failover struct {
	p    *Proxy
	base http.RoundTripper
}

func (f *failover) RoundTrip(out *http.Request) (*http.Response, error) {
	req, _ := out.Context().Value(ctxKey{}).(*request)
	if req == nil {
		return nil, errors.New("rrproxy: request not from ServeHTTP")
	}
	if out.Body != nil {
		_ = out.Body.Close() // the proxy holds the bytes in req.body
	}
	var lastErr error
	all := f.p.pool.Load().all
	for i := range req.live {
		idx := req.live[(req.start+i)%len(req.live)]
		b := all[idx]
		o := out.Clone(out.Context())
		o.URL.Scheme, o.URL.Host = b.Scheme, b.Host
		o.Host = ""
		if req.body != nil {
			o.Body = io.NopCloser(bytes.NewReader(req.body))
			o.ContentLength = int64(len(req.body))
			o.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(req.body)), nil }
		} else {
			o.Body, o.ContentLength = nil, 0
		}
		f.p.update(req.entry, func(e *Entry) { e.Backend = idx })
		resp, err := f.base.RoundTrip(o)
		if err == nil {
			sid := resp.Header.Get("Mcp-Session-Id")
			f.p.update(req.entry, func(e *Entry) {
				e.Status = resp.StatusCode
				if e.Session == "" {
					e.Session = sid
				}
			})
			return resp, nil
		}
		lastErr = err
		if !refused(err) || out.Context().Err() != nil {
			break
		}
		f.p.update(req.entry, func(e *Entry) { e.Refused = append(e.Refused, idx); e.Backend = -1 })
	}
	return nil, lastErr
}

// refused reports whether err is a failure to connect: the replica never
// saw the request.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (p *Proxy) add(e Entry) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.Seq = len(p.log)
	p.log = append(p.log, e)
	p.notifyLocked()
	return e.Seq
}

func (p *Proxy) update(i int, f func(*Entry)) {
	if i < 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.log[i])
	p.notifyLocked()
}

func (p *Proxy) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Entries is a copy of the log.
func (p *Proxy) Entries() []Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return cloneLog(p.log)
}

func cloneLog(log []Entry) []Entry {
	out := slices.Clone(log)
	for i := range out {
		out[i].Refused = slices.Clone(out[i].Refused)
	}
	return out
}

// Wait blocks until ok holds for the log, and returns that log; it gives
// up when ctx ends or after limit, with the log as it stood.
func (p *Proxy) Wait(ctx context.Context, limit time.Duration, ok func([]Entry) bool) ([]Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		p.mu.Lock()
		log, changed := cloneLog(p.log), p.changed
		p.mu.Unlock()
		if ok(log) {
			return log, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return log, fmt.Errorf("rrproxy: the log did not reach the expected state within %v: %w", limit, ctx.Err())
		}
	}
}
