package serve

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// Any request on any replica (OP-11). Replicas sharing a store advertise
// where the others reach them (core.ReplicaDirectory). A request that
// belongs to a call or session living on another replica is passed to that
// replica over HTTP and its answer copied back on the client's own
// request:
//
//   - a 2026-07-28 retry answering an upstream's request: its sealed
//     requestState names the replica the call is parked in;
//   - a legacy session's request (its answer to a server request, its
//     DELETE, its notifications/cancelled …) when the session is not held
//     here but the shared listing names the replica that holds it;
//   - a 2026-07-28 notifications/cancelled naming no call in flight here:
//     told to every other replica, where the caller's call may run.
//
// The forwarded request keeps the client's own headers, so the replica
// receiving it authenticates the client as it would any request; the
// replicas authenticate each other by an HMAC, under a key they all share,
// over the sender, the time, the method, the path, the session and
// protocol headers and the body. A forwarded request is never forwarded
// again, and a forged or stale one is refused. A replica that is gone
// drops out of the directory with its beat; one listed that cannot be
// reached (crashed, its beat not yet stale) is given up within
// forwardDialWait. Either way the request is served where it came, as
// with no replicas: a legacy session continues there, a retry for a call
// lost with its replica is told so. Never a hang.

// Peers finds the other replicas (OP-11). Safe for concurrent use.
type Peers interface {
	// Addrs maps the replicas alive now to where they are reached,
	// host:port; this one may be among them.
	Addrs(ctx context.Context) map[string]string
	// SessionReplica is the other replica that lists the legacy session
	// of key (core.SessionKey), if one does.
	SessionReplica(key string) (string, bool)
}

// HeaderForwarded carries a forwarded request's sender, time and MAC.
const HeaderForwarded = "Toolgate-Forwarded"

// forwardSkew bounds how old a forwarded request may be, allowing for
// clocks that disagree a little: a captured one cannot be replayed later.
const forwardSkew = 2 * time.Minute

// forwardDialWait bounds reaching a replica: one listed but gone is an
// error within it.
const forwardDialWait = 5 * time.Second

// cancelFanoutWait bounds telling the other replicas of a cancellation.
const cancelFanoutWait = 5 * time.Second

// ForwardKey derives the key replicas sign forwarded requests with from a
// secret they share (the session key, itself from the confirm secret),
// under a label of its own so the two keys never stand in for each other.
func ForwardKey(shared []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, shared, nil, "toolgate replica forwarding v1", 32)
}

// forwarder passes requests to other replicas.
type forwarder struct {
	self  string
	key   []byte
	peers Peers
	hc    *http.Client
	tr    *http.Transport
	now   func() time.Time
}

func newForwarder(self string, key []byte, peers Peers) *forwarder {
	if peers == nil || len(key) == 0 {
		return nil
	}
	// No proxy from the environment: replicas talk to each other directly.
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: forwardDialWait}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     time.Minute,
	}
	return &forwarder{self: self, key: key, peers: peers, tr: tr, hc: &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, now: time.Now}
}

func (f *forwarder) close() {
	if f != nil {
		f.tr.CloseIdleConnections()
	}
}

// mac is the MAC of a forwarded request.
func (f *forwarder) mac(from string, at int64, method, uri, session, protocol string, body []byte) string {
	sum := sha256.Sum256(body)
	m := hmac.New(sha256.New, f.key)
	for _, s := range []string{from, strconv.FormatInt(at, 10), method, uri, session, protocol, hex.EncodeToString(sum[:])} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// errForged: a request claims to come from a replica and does not.
var errForged = errors.New("forwarded request refused: not signed by a replica of this gateway, or too old")

// verify checks r's forwarding header; forwarded is false when it has
// none.
func (f *forwarder) verify(r *http.Request, body []byte) (forwarded bool, err error) {
	h := r.Header.Get(HeaderForwarded)
	if h == "" {
		return false, nil
	}
	if f == nil {
		return true, errForged
	}
	parts := strings.Split(h, ";")
	if len(parts) != 3 {
		return true, errForged
	}
	at, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return true, errForged
	}
	if d := f.now().Sub(time.Unix(at, 0)); d > forwardSkew || d < -forwardSkew {
		return true, errForged
	}
	want := f.mac(parts[0], at, r.Method, r.URL.RequestURI(), r.Header.Get(server.HeaderKeySessionID), r.Header.Get(mcpgo.HeaderProtocolVersion), body)
	if !hmac.Equal([]byte(parts[2]), []byte(want)) {
		return true, errForged
	}
	return true, nil
}

// errPeerUnreachable: the replica holding a call or session did not
// answer.
type errPeerUnreachable struct {
	replica string
	err     error
}

func (e errPeerUnreachable) Error() string {
	return fmt.Sprintf("gateway replica %q, which holds this request's call or session, could not be reached: %v", e.replica, e.err)
}

// forward sends r (body already read) to replica at addr and copies its
// answer to w. An error means nothing was written to w.
func (f *forwarder) forward(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte, replica, addr string) error {
	out, err := http.NewRequestWithContext(ctx, r.Method, "http://"+addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return errPeerUnreachable{replica: replica, err: err}
	}
	for k, v := range r.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Proxy-Connection", HeaderForwarded:
			continue
		}
		out.Header[k] = v
	}
	// The client's Host: what the receiving replica checks it against
	// (DNS rebinding, the public URL) is the client's view.
	out.Host = r.Host
	at := f.now().Unix()
	out.Header.Set(HeaderForwarded, f.self+";"+strconv.FormatInt(at, 10)+";"+
		f.mac(f.self, at, r.Method, r.URL.RequestURI(), r.Header.Get(server.HeaderKeySessionID), r.Header.Get(mcpgo.HeaderProtocolVersion), body))
	res, err := f.hc.Do(out)
	if err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return errPeerUnreachable{replica: replica, err: err}
	}
	defer res.Body.Close()
	for k, v := range res.Header {
		switch k {
		case "Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length":
			continue
		}
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	// Streamed as it comes: the header at once (an event stream may be
	// silent a while), then each event when the replica sends it.
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil
			}
			_ = rc.Flush()
		}
		if err != nil {
			return nil
		}
	}
}

// route passes p to the replica it belongs to, or refuses a forged
// forwarded request; true when the answer is written. A request this
// replica serves gets false, and forwarded set if another replica sent it.
func (e *Endpoint) route(w http.ResponseWriter, r *http.Request, p *post) bool {
	forwarded, err := e.fwd.verify(r, p.body)
	if err != nil {
		e.opts.Logger.Warn("refused a request claiming to come from another replica", "remote", r.RemoteAddr)
		http.Error(w, err.Error(), http.StatusForbidden)
		return true
	}
	p.forwarded = forwarded
	if forwarded && p.legacy && p.id != "" && e.ids.Resumable() && !e.ids.Lookup(p.id).Phase.Serves() &&
		(r.Method == http.MethodDelete || p.env.Kind == jsonrpc.Response || p.env.Method == string(mcpgo.MethodNotificationCancelled)) {
		// Told to every replica, an end, an answer or a cancellation is
		// for the ones holding the session; one that does not takes no
		// copy of it.
		if r.Method == http.MethodDelete || p.env.Kind == jsonrpc.Response {
			http.Error(w, "unknown session", http.StatusNotFound)
		} else {
			w.WriteHeader(http.StatusAccepted)
		}
		return true
	}
	if forwarded || e.fwd == nil {
		// Never forwarded twice: no loops between replicas.
		return false
	}
	if p.legacy && p.id != "" && e.ids.Resumable() && r.Method == http.MethodDelete {
		// A session may be held by more than one replica (adopted where
		// a request came before the store listed its holder): every
		// holder ends its copy before the client is answered, not when
		// the end's notice reaches it.
		ctx, cancel := context.WithTimeout(r.Context(), cancelFanoutWait)
		defer cancel()
		if !e.tellOthers(ctx, r, p, http.StatusOK) {
			return false
		}
		// Ended where it lived, under this request's credentials, and not
		// to be adopted here after. A copy held here ends as the holders'
		// notice of their end would end it: that notice races this
		// request, and had it landed between a look here and the end, the
		// client would have been told 404 for a session it did end.
		e.ids.EndedElsewhere(p.id)
		w.WriteHeader(http.StatusOK)
		return true
	}
	switch {
	case p.modern != nil && p.modern.method == string(mcpgo.MethodToolsCall) && p.modern.callOK && p.modern.call.RequestState != nil:
		// Which replica the relayed call waits in, if the state is the
		// gateway's own; nothing is checked or spent.
		b, err := e.states.unseal(*p.modern.call.RequestState)
		if err != nil || b.Relay == "" || b.Replica == e.opts.Replica || b.Replica == "" {
			return false
		}
		// Within the call's own deadline: its wait for this answer ends
		// when the state expires.
		ctx, cancel := context.WithDeadline(r.Context(), time.Unix(b.Expires, 0))
		defer cancel()
		return e.forwardTo(ctx, w, r, p, b.Replica)
	case p.isModern && p.env.Kind == jsonrpc.Notification && p.env.Method == string(mcpgo.MethodNotificationCancelled):
		e.fanOutCancel(r, p)
		return false
	case p.legacy && p.id != "" && p.env.Kind == jsonrpc.Notification && p.env.Method == string(mcpgo.MethodNotificationCancelled):
		// The session's call may run on any replica that holds the
		// session; one running here is cancelled here.
		var q struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(p.env.ParamsOrEmpty(), &q) == nil && q.RequestID != nil && !e.inflight.Has(p.id+"\x00"+jsonrpc.IDKey(q.RequestID)) {
			ctx, cancel := context.WithTimeout(r.Context(), cancelFanoutWait)
			defer cancel()
			e.tellOthers(ctx, r, p, http.StatusAccepted)
		}
		if !e.ids.Lookup(p.id).Phase.Serves() {
			// Told where the call runs; nothing of this session is here to
			// adopt for a notification.
			w.WriteHeader(http.StatusAccepted)
			return true
		}
		return false
	case p.id != "" && !p.isModern && !e.opts.Stateless && e.ids.Resumable() && !e.ids.Lookup(p.id).Phase.Serves():
		replica, ok := e.opts.Peers.SessionReplica(core.SessionKey(p.id))
		if !ok || replica == e.opts.Replica {
			return false
		}
		return e.forwardTo(r.Context(), w, r, p, replica)
	}
	return false
}

// forwardTo passes p to replica; false, with nothing written, when the
// replica advertises no address or cannot be reached (gone, perhaps
// crashed before its beat went stale): the request is then served here as
// it would be with no replicas, so a legacy session continues here and a
// retry for a call lost with its replica is told so.
func (e *Endpoint) forwardTo(ctx context.Context, w http.ResponseWriter, r *http.Request, p *post, replica string) bool {
	addr, ok := e.opts.Peers.Addrs(ctx)[replica]
	if !ok {
		return false
	}
	if err := e.fwd.forward(ctx, w, r, p.body, replica, addr); err != nil {
		e.opts.Logger.Warn("passing a request to the replica holding its call or session failed; serving it here", "replica", replica, "err", err)
		return false
	}
	return true
}

// fanOutCancel tells the other replicas of a 2026-07-28 client's
// notifications/cancelled that names no call in flight here: the call may
// run on any of them, and each heeds it only for the same caller's call of
// that id (modern_cancel.go).
func (e *Endpoint) fanOutCancel(r *http.Request, p *post) {
	actor, ok := e.opts.Actor(r.Context())
	if !ok {
		return
	}
	var q struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(p.env.ParamsOrEmpty(), &q) != nil || len(q.RequestID) == 0 {
		return
	}
	id, ok := jsonrpc.ReadID(q.RequestID)
	if !ok || e.states.inflight.has(actor, jsonrpc.IDTextOf(id, q.RequestID)) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), cancelFanoutWait)
	defer cancel()
	e.tellOthers(ctx, r, p, http.StatusAccepted)
}

// tellOthers passes p to every other replica at once and reports whether
// one answered with took (202 for an answer or a cancellation, 200 for an
// end): one holding what it names.
func (e *Endpoint) tellOthers(ctx context.Context, r *http.Request, p *post, took int) bool {
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := false
	for replica, addr := range e.opts.Peers.Addrs(ctx) {
		if replica == e.opts.Replica {
			continue
		}
		wg.Go(func() {
			d := &discard{}
			if err := e.fwd.forward(ctx, d, r, p.body, replica, addr); err != nil {
				e.opts.Logger.Warn("passing a request to another replica failed", "replica", replica, "err", err)
				return
			}
			if d.status == took {
				mu.Lock()
				accepted = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return accepted
}

// answerElsewhere passes a legacy session's answer to a request no one
// here waits for to the other replicas: the request may have gone out from
// the one running the call it belongs to (OP-11). true when one took it.
func (e *Endpoint) answerElsewhere(r *http.Request, p *post) bool {
	if e.fwd == nil || p.forwarded {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), cancelFanoutWait)
	defer cancel()
	return e.tellOthers(ctx, r, p, http.StatusAccepted)
}

// discard is a ResponseWriter that keeps only the status.
type discard struct{ status int }

func (*discard) Header() http.Header         { return http.Header{} }
func (*discard) Write(b []byte) (int, error) { return io.Discard.Write(b) }
func (d *discard) WriteHeader(status int)    { d.status = status }

// has reports whether actor has exactly one call of id in flight here,
// the one a cancellation would end.
func (f *modernInflight) has(actor core.Actor, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.m[inflightKey(actor, id)]) == 1
}
