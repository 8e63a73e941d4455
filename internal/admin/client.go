package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/policy"
)

// DefaultTimeout bounds one command of the Client. A refresh plan lists an
// upstream, which may take the upstream's own timeout (IM-6, 30 s by
// default) and a reconnect: the default leaves room for both.
const DefaultTimeout = 90 * time.Second

// ClientOptions configure a Client; nil or zero fields take defaults.
type ClientOptions struct {
	// Timeout bounds each command (not the event stream), unless the
	// caller's context ends sooner. Default DefaultTimeout.
	Timeout time.Duration
	// DialTimeout bounds connecting to the admin listener, so an address
	// that swallows packets fails fast. Default 5 s.
	DialTimeout time.Duration
	// Transport replaces the HTTP transport (tests); nil builds one for the
	// URL's network.
	Transport http.RoundTripper
}

// Client speaks the admin API of one gateway. Its methods are safe for
// concurrent use. The admin key goes in every request's Authorization header
// and nowhere else: no error, log or URL carries it.
type Client struct {
	base    *url.URL // scheme and host; path prefix kept
	display string   // the URL as the operator wrote it, for messages
	key     string
	timeout time.Duration
	hc      *http.Client
	// streams opens event streams, each on a connection of its own: a
	// stream is long and ends with its connection, which is never worth
	// handing to the next request.
	streams *http.Client
}

// NewClient returns a client of the admin API at rawURL: http://host:port,
// https://host:port, host:port, or unix:/path/to/admin.sock.
func NewClient(rawURL, key string, o *ClientOptions) (*Client, error) {
	var opts ClientOptions
	if o != nil {
		opts = *o
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	raw := strings.TrimSpace(rawURL)
	if raw == "" {
		return nil, ErrNoURL
	}
	if key == "" {
		return nil, ErrNoKey
	}
	dialer := &net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}
	var (
		base *url.URL
		dial func(ctx context.Context, network, addr string) (net.Conn, error)
	)
	if path, ok := strings.CutPrefix(raw, config.AdminUnixPrefix); ok {
		if path == "" {
			return nil, fmt.Errorf("admin URL %q: no socket path after %q", raw, config.AdminUnixPrefix)
		}
		// The host is a placeholder: every connection goes to the socket.
		base = &url.URL{Scheme: "http", Host: "toolgate-admin"}
		dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", path)
		}
	} else {
		if !strings.Contains(raw, "://") {
			raw = "http://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("admin URL %q: %v", rawURL, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("admin URL %q: want http://host:port or %s/path", rawURL, config.AdminUnixPrefix)
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("admin URL %q: want http://host:port, without credentials, query or fragment (the key goes in --admin-key)", redactURL(u))
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		base = u
		dial = dialer.DialContext
	}
	rt, streamRT := opts.Transport, opts.Transport
	if rt == nil {
		t := &http.Transport{
			DialContext:         dial,
			TLSHandshakeTimeout: opts.DialTimeout,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   false, // the event stream is one long HTTP/1.1 response
		}
		st := t.Clone()
		st.DisableKeepAlives = true
		rt, streamRT = t, st
	}
	return &Client{
		base:    base,
		display: strings.TrimSpace(rawURL),
		key:     key,
		timeout: opts.Timeout,
		hc:      &http.Client{Transport: rt, CheckRedirect: noRedirects},
		streams: &http.Client{Transport: streamRT, CheckRedirect: noRedirects},
	}, nil
}

// A redirect would carry the key to another place; the admin API never
// redirects.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

var (
	// ErrNoKey: no admin key was given.
	ErrNoKey = fmt.Errorf("no admin key: pass --admin-key or set %s", EnvAdminKey)
	// ErrNoURL: no admin URL was given.
	ErrNoURL = fmt.Errorf("no gateway to attach to: pass --attach URL or set %s", EnvAttach)
)

// URL is the admin URL as given.
func (c *Client) URL() string { return c.display }

// Close releases idle connections.
func (c *Client) Close() {
	c.hc.CloseIdleConnections()
	c.streams.CloseIdleConnections()
}

// UnreachableError says the admin API could not be reached at all: no
// answer, as opposed to an answer that refused.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the admin API at %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// seg escapes one path segment (api.go: names and ids in braces).
func seg(s string) string { return url.PathEscape(s) }

// newRequest builds a request; path holds already-escaped segments.
func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := *c.base
	u.RawQuery = q.Encode()
	// The path's segments are escaped already: set both forms so net/url
	// sends them as they are.
	raw := c.base.EscapedPath() + path
	unescaped, err := url.PathUnescape(raw)
	if err != nil {
		return nil, err
	}
	u.Path, u.RawPath = unescaped, raw
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// call runs r with params in its braces, in order.
func (c *Client) call(ctx context.Context, r Route, q url.Values, body, out any, params ...string) error {
	return c.do(ctx, r.Method(), r.Path(params...), q, body, out)
}

// do runs one command: it bounds it by the client's timeout, decodes an
// error answer into *Error, and the 2xx body into out (nil: discarded).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := c.newRequest(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.errorOf(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("admin API %s %s: bad answer: %w", method, path, c.redactErr(err))
	}
	return nil
}

// transportError names the URL (never the key) and keeps what the error
// is, so errors.Is(err, context.DeadlineExceeded) still works.
func (c *Client) transportError(ctx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text repeats the URL; ours names it once
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("admin API at %s: %w", c.display, ctx.Err())
	}
	return &UnreachableError{URL: c.display, Err: c.redactErr(err)}
}

// errorOf decodes an error answer. An answer that is not an ErrorBody (a
// proxy's page, say) still becomes an *Error with its status.
func (c *Client) errorOf(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes))
	var eb ErrorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil && eb.Error.Message != "" {
		e := *eb.Error
		if e.Status == 0 {
			e.Status = resp.StatusCode
		}
		e.Message = c.redact(e.Message)
		return &e
	}
	e := &Error{Status: resp.StatusCode, Code: codeOfStatus(resp.StatusCode)}
	text := strings.TrimSpace(string(b))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	e.Message = fmt.Sprintf("admin API answered %s", resp.Status)
	if text != "" {
		e.Message += ": " + c.redact(text)
	}
	return e
}

func codeOfStatus(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusServiceUnavailable:
		return CodeShuttingDown
	}
	return CodeInternal
}

// redact removes the key from text that came back from elsewhere: a server
// or a proxy that echoes the request must not put it in front of a user.
func (c *Client) redact(s string) string {
	if c.key == "" {
		return s
	}
	return strings.ReplaceAll(s, c.key, "•••")
}

func (c *Client) redactErr(err error) error {
	if err == nil || !strings.Contains(err.Error(), c.key) {
		return err
	}
	return errors.New(c.redact(err.Error()))
}

func redactURL(u *url.URL) string {
	v := *u
	v.User = nil
	v.RawQuery = ""
	v.Fragment = ""
	return v.String()
}

// Info is GET /v1/info.
func (c *Client) Info(ctx context.Context) (core.ConsoleInfo, error) {
	var v core.ConsoleInfo
	return v, c.call(ctx, RouteInfo, nil, nil, &v)
}

// Whoami is GET /v1/whoami: the operator the key names.
func (c *Client) Whoami(ctx context.Context) (Whoami, error) {
	var v Whoami
	return v, c.call(ctx, RouteWhoami, nil, nil, &v)
}

// Snapshot is GET /v1/snapshot.
func (c *Client) Snapshot(ctx context.Context) (core.Snapshot, error) {
	var v core.Snapshot
	return v, c.call(ctx, RouteSnapshot, nil, nil, &v)
}

// PlanRefresh is POST /v1/refresh/plans.
func (c *Client) PlanRefresh(ctx context.Context, upstream string) (core.RefreshPlan, error) {
	var v core.RefreshPlan
	return v, c.call(ctx, RoutePlanRefresh, nil, PlanRequest{Upstream: upstream}, &v)
}

// ApplyRefresh is POST /v1/refresh/plans/{id}/apply.
func (c *Client) ApplyRefresh(ctx context.Context, planID string) (core.Diff, error) {
	var v core.Diff
	return v, c.call(ctx, RouteApplyRefresh, nil, nil, &v, planID)
}

// CancelRefresh is DELETE /v1/refresh/plans/{id}.
func (c *Client) CancelRefresh(ctx context.Context, planID string) error {
	return c.call(ctx, RouteCancelRefresh, nil, nil, nil, planID)
}

// RefreshAll is POST /v1/refresh/all: every upstream, applied at once.
func (c *Client) RefreshAll(ctx context.Context) ([]core.Diff, error) {
	var v []core.Diff
	return v, c.call(ctx, RouteRefreshAll, nil, nil, &v)
}

// Ping is POST /v1/upstreams/{name}/ping.
func (c *Client) Ping(ctx context.Context, upstream string) (time.Duration, error) {
	var v PingResult
	err := c.call(ctx, RoutePing, nil, nil, &v, upstream)
	return v.Latency, err
}

// Reviews is GET /v1/reviews.
func (c *Client) Reviews(ctx context.Context) (map[string]core.ReviewState, error) {
	var v map[string]core.ReviewState
	return v, c.call(ctx, RouteReviews, nil, nil, &v)
}

// ReviewEntries is GET /v1/review/entries.
func (c *Client) ReviewEntries(ctx context.Context) ([]core.ReviewEntry, error) {
	var v []core.ReviewEntry
	return v, c.call(ctx, RouteReviewEntries, nil, nil, &v)
}

// ToolFlags is GET /v1/tools/{name}/flags.
func (c *Client) ToolFlags(ctx context.Context, name string) ([]core.Flag, error) {
	var v []core.Flag
	return v, c.call(ctx, RouteToolFlags, nil, nil, &v, name)
}

// ApproveTool is POST /v1/tools/{name}/approve.
func (c *Client) ApproveTool(ctx context.Context, name string) error {
	return c.call(ctx, RouteApproveTool, nil, nil, nil, name)
}

// RejectTool is POST /v1/tools/{name}/reject.
func (c *Client) RejectTool(ctx context.Context, name string) error {
	return c.call(ctx, RouteRejectTool, nil, nil, nil, name)
}

// Confirmations is GET /v1/confirmations: the ones waiting for an operator.
func (c *Client) Confirmations(ctx context.Context) ([]core.PendingConfirmation, error) {
	var v []core.PendingConfirmation
	return v, c.call(ctx, RouteConfirmations, nil, nil, &v)
}

// ApproveConfirmation is POST /v1/confirmations/{id}/approve.
func (c *Client) ApproveConfirmation(ctx context.Context, id string) error {
	return c.call(ctx, RouteApproveConfirmation, nil, nil, nil, id)
}

// RejectConfirmation is POST /v1/confirmations/{id}/reject.
func (c *Client) RejectConfirmation(ctx context.Context, id, reason string) error {
	return c.call(ctx, RouteRejectConfirmation, nil, RejectRequest{Reason: reason}, nil, id)
}

// Sessions is GET /v1/sessions.
func (c *Client) Sessions(ctx context.Context) ([]core.Session, error) {
	var v []core.Session
	return v, c.call(ctx, RouteSessions, nil, nil, &v)
}

// EndSession is DELETE /v1/sessions/{id}.
func (c *Client) EndSession(ctx context.Context, id string) error {
	return c.call(ctx, RouteEndSession, nil, nil, nil, id)
}

// TryPolicy is POST /v1/policy/test: which policy rule decides a call,
// without making it (PO-4).
func (c *Client) TryPolicy(ctx context.Context, req PolicyTestRequest) (policy.Trial, error) {
	var out policy.Trial
	err := c.call(ctx, RoutePolicyTest, nil, req, &out)
	return out, err
}

// Policies is GET /v1/policy: the rules and limits in force with their
// hits in the last hour (PO-4).
func (c *Client) Policies(ctx context.Context) (core.PolicyReport, error) {
	var v core.PolicyReport
	return v, c.call(ctx, RoutePolicies, nil, nil, &v)
}

// AuditOf is GET /v1/audit/calls/{id}: one call's audit records with
// their chain checks.
func (c *Client) AuditOf(ctx context.Context, callID string) ([]core.AuditCheck, error) {
	var v []core.AuditCheck
	return v, c.call(ctx, RouteAuditCall, nil, nil, &v, callID)
}

// Audit is GET /v1/audit; a zero since and limit ≤ 0 leave them out.
func (c *Client) Audit(ctx context.Context, since time.Time, limit int) ([]core.AuditRecord, error) {
	q := url.Values{}
	if !since.IsZero() {
		q.Set("since", since.UTC().Format(time.RFC3339Nano))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var v []core.AuditRecord
	return v, c.call(ctx, RouteAudit, q, nil, &v)
}
