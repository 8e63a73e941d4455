package upstream

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/telemetry"
)

type httpUpstream struct {
	base
	opts   Options
	libLog *slog.Logger
	// origin is scheme://host of the URL: credentials go nowhere else.
	origin string
	// endpointWait bounds how long auto's SSE fallback waits for the
	// server's endpoint event.
	endpointWait time.Duration
	// resolved is the transport of the last successful dial.
	resolved atomic.Pointer[string]
}

// autoEndpointWait is how long auto's SSE fallback waits for the endpoint
// event, which an SSE server sends first, at once.
const autoEndpointWait = 5 * time.Second

var (
	_ core.Upstream             = (*httpUpstream)(nil)
	_ core.ToolsChangedNotifier = (*httpUpstream)(nil)
	_ core.TransportReporter    = (*httpUpstream)(nil)
)

// Transport names the transport the last connection used: under auto, the
// one that answered.
func (u *httpUpstream) Transport() string {
	if t := u.resolved.Load(); t != nil {
		return *t
	}
	return ""
}

func newHTTPUpstream(opts Options, log *slog.Logger) *httpUpstream {
	u := &httpUpstream{opts: opts, endpointWait: autoEndpointWait}
	pu, _ := url.Parse(opts.URL) // validated
	u.origin = pu.Scheme + "://" + pu.Host
	safe := *pu
	safe.User, safe.RawQuery, safe.Fragment = nil, "", ""
	pairs := [][2]string{{pu.String(), safe.String()}}
	for _, v := range opts.Headers {
		pairs = append(pairs, [2]string{v, "•••"})
	}
	if opts.Authorization != "" {
		pairs = append(pairs, [2]string{opts.Authorization, "•••"})
	}
	if opts.Signing != nil {
		pairs = append(pairs, [2]string{string(opts.Signing.Secret), "•••"})
	}
	rd := newRedactor(pairs...)
	u.base = base{log: log, dial: u.dial, scrub: rd.scrub, roots: opts.Roots, hub: opts.Hub}
	u.libLog = libLogger(log, rd)
	return u
}

func (u *httpUpstream) dial(ctx context.Context, onNote func(mcpgo.JSONRPCNotification)) (*session, core.ServerInfo, error) {
	s, info, sse, err := u.dialAny(ctx, onNote)
	if err == nil {
		name := "http"
		if sse {
			name = "sse"
		}
		u.resolved.Store(&name)
	}
	return s, info, err
}

// dialAny connects over the configured transport, or under auto over the
// first that answers; sse says which one it was.
func (u *httpUpstream) dialAny(ctx context.Context, onNote func(mcpgo.JSONRPCNotification)) (s *session, info core.ServerInfo, sse bool, err error) {
	switch u.opts.Transport {
	case "http":
		s, info, err = u.dialWith(ctx, onNote, false, 0)
		return s, info, false, err
	case "sse":
		s, info, err = u.dialWith(ctx, onNote, true, 0)
		return s, info, true, err
	}
	// auto (IM-2): Streamable HTTP, then SSE; if both fail, the HTTP error.
	if s, info, err = u.dialWith(ctx, onNote, false, 0); err == nil {
		return s, info, false, nil
	}
	u.log.Debug("streamable HTTP failed, trying SSE", "err", u.scrub(err))
	// A Streamable HTTP server answers the SSE GET with its notification
	// stream, which never carries an endpoint: without a bound, auto would
	// wait out the whole connect timeout before reporting the HTTP error.
	s, info, sseErr := u.dialWith(ctx, onNote, true, u.endpointWait)
	if sseErr == nil {
		return s, info, true, nil
	}
	u.log.Debug("SSE failed too", "err", u.scrub(sseErr))
	return nil, core.ServerInfo{}, false, err
}

// dialWith connects over Streamable HTTP, or SSE when sse is set, waiting
// at most endpointWait (0: as long as ctx allows) for SSE's endpoint event.
func (u *httpUpstream) dialWith(ctx context.Context, onNote func(mcpgo.JSONRPCNotification), sse bool, endpointWait time.Duration) (*session, core.ServerInfo, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	// Every call of every session goes to this one host: the default of two
	// idle connections would make concurrent calls open a new connection
	// (and TLS handshake) for about every other call.
	base.MaxIdleConnsPerHost = 64
	hc := &http.Client{
		Transport: &authTransport{
			base:    base,
			headers: u.opts.Headers,
			bearer:  u.opts.Authorization,
			signing: u.opts.Signing,
			token:   u.opts.Token,
		},
		// Credentials ride on every hop, so no hop may leave the origin.
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if req.URL.Scheme+"://"+req.URL.Host != u.origin {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}

	var tr transport.Interface
	if sse {
		if endpointWait <= 0 {
			// Connect's context bounds the wait instead.
			endpointWait = 24 * time.Hour
		}
		t, err := transport.NewSSE(u.opts.URL,
			transport.WithHTTPClient(hc),
			transport.WithSSELogger(u.libLog),
			transport.WithEndpointTimeout(endpointWait),
			// Each call's context bounds its wait instead.
			transport.WithResponseTimeout(24*time.Hour))
		if err != nil {
			return nil, core.ServerInfo{}, err
		}
		tr = t
	} else {
		t, err := transport.NewStreamableHTTP(u.opts.URL,
			transport.WithHTTPBasicClient(hc),
			transport.WithHTTPLogger(u.libLog),
			// The standing GET stream carries list_changed (IM-25).
			transport.WithContinuousListening())
		if err != nil {
			return nil, core.ServerInfo{}, err
		}
		tr = t
	}

	connCtx, cancel := context.WithCancel(connectionContext())
	lost, markLost := context.WithCancel(context.Background())
	c := client.NewClient(tr, client.WithProtocolVersion(ProtocolVersion))
	note, acks := ackWatcher(onNote)
	c.OnNotification(note)
	c.OnConnectionLost(func(error) { markLost() })

	// Calls over plain HTTP without a proxy keep connections of their own.
	pool := newConnPool(u.opts.URL)
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			markLost()
			stopErr = tr.Close()
			cancel()
			base.CloseIdleConnections()
			if pool != nil {
				pool.close()
			}
		})
		return stopErr
	}
	info, err := handshake(ctx, connCtx, c, tr, u.handleRequest)
	var era *modernEra
	if err != nil && !sse && refusesLegacy(err) {
		// A server of the stateless revision only (IM-2): the same URL and
		// client, a transport without the legacy GET stream.
		_ = tr.Close()
		mhc := *hc
		mhc.Transport = keepErrorBody{hc.Transport}
		mt, merr := transport.NewStreamableHTTP(u.opts.URL,
			transport.WithHTTPBasicClient(&mhc),
			transport.WithHTTPLogger(u.libLog))
		if merr == nil {
			tr = mt
			merr = startModern(ctx, connCtx, tr, note, u.handleRequest)
		}
		var minfo core.ServerInfo
		if merr == nil {
			era, minfo, merr = discoverModern(ctx, tr)
		}
		if merr == nil {
			info, err = minfo, nil
		} else {
			u.log.Debug("server/discover failed too", "err", u.scrub(merr))
		}
	}
	if err != nil {
		_ = stop()
		name := "streamable HTTP"
		if sse {
			name = "SSE"
		}
		return nil, core.ServerInfo{}, fmt.Errorf("%s: %w", name, err)
	}
	s := &session{client: c, tr: tr, lost: lost, markLost: markLost, stop: stop, modern: era}
	if st, ok := tr.(*transport.StreamableHTTP); ok && era == nil {
		s.reply = u.replier(hc, st, info.Protocol)
		s.post = newPoster(hc, u.opts.URL, st, info.Protocol, onNote, u.handleRequest, s.reply)
		if s.post != nil && pool != nil {
			s.post.pool, s.post.auth = pool, hc.Transport.(*authTransport)
		}
	}
	if era != nil {
		if err := s.listen(ctx, acks, onNote, u.log); err != nil {
			return nil, core.ServerInfo{}, fmt.Errorf("streamable HTTP: %w", err)
		}
	}
	return s, info, nil
}

// authTransport puts the upstream's credentials on every request mcp-go
// makes, including the ones it sends without its configured headers (the
// DELETE ending a session) and the event streams (IM-4).
type authTransport struct {
	base    http.RoundTripper
	headers map[string]string
	bearer  string
	signing *HMACSigning
	token   func(ctx context.Context) (string, error)
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r, err := t.prepare(req)
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.StatusCode >= 400 {
		if rec, ok := req.Context().Value(statusKey{}).(*statusRecorder); ok {
			rec.code.Store(int32(resp.StatusCode))
		}
	}
	return resp, err
}

// prepare returns req with the upstream's credentials and signature on it:
// req itself when there is nothing to add, else a copy, as a RoundTripper
// must not change the request it was given.
func (t *authTransport) prepare(req *http.Request) (*http.Request, error) {
	// The call's trace goes on to the upstream (OP-9).
	var traceparent, tracestate string
	if _, set := req.Header["Traceparent"]; !set {
		traceparent, tracestate = telemetry.Context(req.Context())
	}
	if len(t.headers) == 0 && t.bearer == "" && t.signing == nil && t.token == nil && traceparent == "" {
		return req, nil
	}
	r := req.Clone(req.Context())
	telemetry.SetHeaders(r.Header, traceparent, tracestate)
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	if t.bearer != "" {
		r.Header.Set("Authorization", "Bearer "+t.bearer)
	}
	if t.token != nil {
		tok, err := t.token(req.Context())
		if err != nil {
			return nil, fmt.Errorf("%w: %w", core.ErrNotSent, err)
		}
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	if t.signing != nil {
		var body []byte
		if req.Body != nil && req.Body != http.NoBody {
			b, err := io.ReadAll(req.Body)
			_ = req.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("%w: reading request body to sign: %w", core.ErrNotSent, err)
			}
			body = b
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			r.ContentLength = int64(len(body))
		}
		// Set last: the signer's header wins over static headers.
		r.Header.Set(t.signing.Header, Sign(t.signing.Secret, time.Now(), r.Method, r.URL.String(), body))
	}
	return r, nil
}

// Sign is the value of the signing header (IM-4): "t=" the Unix time in
// seconds, ",v1=" and hex(HMAC-SHA256(secret, t "\n" METHOD "\n" URL "\n"
// body)). The time is inside the MAC, so a captured request can be
// replayed only while the receiver still accepts its time (VerifySignature:
// a few minutes), as with Stripe's and SigV4's signed timestamps.
func Sign(secret []byte, at time.Time, method, url string, body []byte) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	return "t=" + ts + ",v1=" + signature(secret, ts, method, url, body)
}

func signature(secret []byte, ts, method, url string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "\n" + method + "\n" + url + "\n"))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of VerifySignature.
var (
	ErrSignatureMalformed = errors.New("signature header is malformed")
	ErrSignatureStale     = errors.New("signature is outside the accepted time window")
	ErrSignatureMismatch  = errors.New("signature does not match the request")
)

// VerifySignature is what a receiving server checks of Sign's header:
// the MAC over the request, and a time no further than tolerance from now
// either way. It is the reference for upstreams written in Go; a receiver
// that must refuse every replay also remembers the signatures it accepted
// within the window.
func VerifySignature(secret []byte, header, method, url string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, mac string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			mac = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || mac == "" {
		return ErrSignatureMalformed
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrSignatureStale
	}
	if !hmac.Equal([]byte(mac), []byte(signature(secret, ts, method, url, body))) {
		return ErrSignatureMismatch
	}
	return nil
}

// statusRecorder catches the HTTP status of a failed request on its way
// through authTransport: mcp-go only reports it inside an error string.
type statusRecorder struct{ code atomic.Int32 }

type statusKey struct{}

// notSent reports failures that provably happened before a request left
// (IM-29): no connection was made, so nothing was written.
func notSent(err error) bool {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &dnsErr), errors.As(err, &certErr), errors.As(err, &recErr),
		errors.As(err, &alert), errors.As(err, &unknownCA), errors.As(err, &hostErr),
		errors.As(err, &invalid):
		return true
	case errors.As(err, &opErr):
		return opErr.Op == "dial" || opErr.Op == "proxyconnect"
	}
	// The TLS handshake's own failures are mostly plain errors.
	return strings.Contains(err.Error(), "tls: handshake") ||
		strings.Contains(err.Error(), "TLS handshake")
}

// replier POSTs the gateway's answer to a request the server made, as
// mcp-go's transport would but without its 30-second bound on the answer:
// that bound is on the context the answer is sent with, and a person
// answering an elicitation may take longer.
func (u *httpUpstream) replier(hc *http.Client, st *transport.StreamableHTTP, protocol string) func(context.Context, *transport.JSONRPCResponse) error {
	return func(ctx context.Context, resp *transport.JSONRPCResponse) error {
		body, err := json.Marshal(resp)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.opts.URL, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if id := st.GetSessionId(); id != "" {
			req.Header.Set(server.HeaderKeySessionID, id)
		}
		if protocol != "" {
			req.Header.Set(mcpgo.HeaderProtocolVersion, protocol)
		}
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted {
			return &core.StatusError{Code: res.StatusCode}
		}
		return nil
	}
}
