package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/policy"
)

// Backend is what the server needs of a gateway. Its methods are called
// from request goroutines at once, so they must be safe for concurrent use.
type Backend interface {
	// ConsoleAs is the gateway's console acting for operator: every action
	// taken through it is recorded as that operator's, whatever `by` its
	// caller passes.
	ConsoleAs(operator string) core.Console
	// Snapshot is the gateway's state now.
	Snapshot() core.Snapshot
	// Confirmations are the confirmations waiting for an operator, oldest
	// first.
	Confirmations() []core.PendingConfirmation
	// Sessions are the live client sessions.
	Sessions() []core.Session
	// Audit queries the audit log (OP-6).
	Audit(ctx context.Context, q core.AuditQuery) ([]core.AuditRecord, error)
}

// PolicyTester is a Backend that can say which policy rule decides a call
// without making it (PO-4); found by type assertion.
type PolicyTester interface {
	TryPolicy(ctx context.Context, req PolicyTestRequest) (policy.Trial, error)
}

// Key is one accepted admin key and the operator it names.
type Key struct {
	Key      string
	Operator string
}

// Defaults of Options.
const (
	DefaultWriteTimeout = 10 * time.Second
	DefaultMaxStreams   = 64
	// readTimeout bounds reading one request's body, so a client that
	// sends a body slowly cannot hold a handler.
	readTimeout = 30 * time.Second
)

// Options configure NewServer. Backend and Keys are required.
type Options struct {
	Backend Backend
	Keys    []Key
	// Logger receives one line per refused or failed request; nil discards.
	// No line ever carries a key.
	Logger *slog.Logger
	// HeartbeatInterval is the event stream's comment interval; 0 means
	// HeartbeatInterval.
	HeartbeatInterval time.Duration
	// WriteTimeout bounds each write of a response, each frame of an event
	// stream included: a stream whose client stops reading ends after it.
	// 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxStreams caps concurrent event streams; 0 means DefaultMaxStreams.
	MaxStreams int
	// Now is the clock for ?since=DURATION; nil means time.Now.
	Now func() time.Time
}

// Server is the admin API's http.Handler. Close ends its event streams.
type Server struct {
	backend   Backend
	keys      []keyDigest
	log       *slog.Logger
	heartbeat time.Duration
	writeTO   time.Duration
	now       func() time.Time
	mux       *http.ServeMux
	// streams holds one token per open event stream.
	streams chan struct{}
	done    chan struct{}
	close   sync.Once
}

type keyDigest struct {
	sum      [sha256.Size]byte
	operator string
}

var errNoBackend = errors.New("admin: Options.Backend is required")

// NewServer returns the admin API over opts.Backend.
func NewServer(opts Options) (*Server, error) {
	if opts.Backend == nil {
		return nil, errNoBackend
	}
	if len(opts.Keys) == 0 {
		return nil, errors.New("admin: at least one key is required")
	}
	s := &Server{
		backend:   opts.Backend,
		log:       opts.Logger,
		heartbeat: opts.HeartbeatInterval,
		writeTO:   opts.WriteTimeout,
		now:       opts.Now,
		done:      make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.heartbeat <= 0 {
		s.heartbeat = HeartbeatInterval
	}
	if s.writeTO <= 0 {
		s.writeTO = DefaultWriteTimeout
	}
	if s.now == nil {
		s.now = time.Now
	}
	n := opts.MaxStreams
	if n <= 0 {
		n = DefaultMaxStreams
	}
	s.streams = make(chan struct{}, n)
	for i, k := range opts.Keys {
		if k.Key == "" || k.Operator == "" {
			return nil, fmt.Errorf("admin: key %d: a key and its operator are required", i)
		}
		s.keys = append(s.keys, keyDigest{sum: sha256.Sum256([]byte(k.Key)), operator: k.Operator})
	}
	s.routes()
	return s, nil
}

// Close ends every event stream and answers later requests with
// CodeShuttingDown, so an http.Server's Shutdown does not wait on streams.
func (s *Server) Close() { s.close.Do(func() { close(s.done) }) }

func (s *Server) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// handler is a route's handler, given the request's operator.
type handler func(w http.ResponseWriter, r *http.Request, op string)

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	handle := func(r Route, h handler) {
		s.mux.Handle(r.Pattern, opHandler{s: s, h: h})
	}
	handle(RouteInfo, s.info)
	handle(RouteWhoami, func(w http.ResponseWriter, _ *http.Request, op string) {
		s.reply(w, http.StatusOK, Whoami{Operator: op})
	})
	handle(RouteSnapshot, func(w http.ResponseWriter, _ *http.Request, _ string) {
		s.reply(w, http.StatusOK, s.backend.Snapshot())
	})
	handle(RouteEvents, s.events)
	handle(RoutePlanRefresh, s.planRefresh)
	handle(RouteApplyRefresh, s.applyRefresh)
	handle(RouteCancelRefresh, s.cancelRefresh)
	handle(RouteRefreshAll, s.refreshAll)
	handle(RoutePing, s.ping)
	handle(RouteReviews, s.reviews)
	handle(RouteReviewEntries, s.reviewEntries)
	handle(RouteToolFlags, s.toolFlags)
	handle(RouteApproveTool, s.approveTool)
	handle(RouteRejectTool, s.rejectTool)
	handle(RouteConfirmations, func(w http.ResponseWriter, _ *http.Request, _ string) {
		s.reply(w, http.StatusOK, nonNil(s.backend.Confirmations()))
	})
	handle(RouteApproveConfirmation, s.approveConfirmation)
	handle(RouteRejectConfirmation, s.rejectConfirmation)
	handle(RouteSessions, func(w http.ResponseWriter, _ *http.Request, _ string) {
		s.reply(w, http.StatusOK, nonNil(s.backend.Sessions()))
	})
	handle(RouteEndSession, s.endSession)
	handle(RouteAudit, s.audit)
	handle(RoutePolicyTest, s.policyTest)
	handle(RoutePolicies, s.policies)
	handle(RouteAuditCall, s.auditCall)
	s.connectionRoutes()
}

// opHandler carries the operator the middleware found into a route.
type opHandler struct {
	s *Server
	h handler
}

type operatorKey struct{}

func (o opHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, _ := r.Context().Value(operatorKey{}).(string)
	o.h(w, r, op)
}

// ServeHTTP authenticates, bounds the request and routes it. Every answer
// that is not a route's own is an ErrorBody.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, ok := s.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", "Bearer")
		s.log.Warn("admin request refused: no admin key or a wrong one", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		s.fail(w, r, "", &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Message: ErrUnauthorized.Error()})
		return
	}
	if s.closed() {
		s.fail(w, r, op, &Error{Status: http.StatusServiceUnavailable, Code: CodeShuttingDown, Message: "the gateway is shutting down"})
		return
	}
	if r.ContentLength > MaxBodyBytes {
		s.fail(w, r, op, tooLarge())
		return
	}
	// No deadline on the whole request: a refresh may take as long as its
	// upstream's timeout. Reading the body and writing the answer get their
	// own (decode, reply).
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	r = r.WithContext(context.WithValue(r.Context(), operatorKey{}, op))
	if h, pattern := s.mux.Handler(r); pattern == "" {
		// The mux's own 404 and 405 (with its Allow header), in our shape.
		h.ServeHTTP(&muxError{ResponseWriter: w, s: s, r: r, op: op}, r)
		return
	}
	// ServeHTTP, not the handler found: it sets the path values.
	s.mux.ServeHTTP(w, r)
}

// authenticate finds the operator of the request's bearer key. Digests of
// equal length are compared in constant time against every key, so neither
// the key's length nor which key matched shows in the timing.
func (s *Server) authenticate(r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(auth) < len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return "", false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(auth[len(prefix):])))
	op, found := "", 0
	for _, k := range s.keys {
		if subtle.ConstantTimeCompare(sum[:], k.sum[:]) == 1 {
			op, found = k.operator, 1
		}
	}
	return op, found == 1
}

// muxError rewrites the mux's plain-text 404 and 405 into ErrorBody.
type muxError struct {
	http.ResponseWriter
	s     *Server
	r     *http.Request
	op    string
	wrote bool
}

func (m *muxError) WriteHeader(status int) {
	if m.wrote {
		return
	}
	m.wrote = true
	e := &Error{Status: status, Code: CodeNotFound, Message: fmt.Sprintf("no route %s %s", m.r.Method, m.r.URL.Path)}
	if status == http.StatusMethodNotAllowed {
		e.Code = CodeMethodNotAllowed
		e.Message = fmt.Sprintf("%s is not allowed on %s (allowed: %s)", m.r.Method, m.r.URL.Path, m.Header().Get("Allow"))
	}
	m.s.fail(m.ResponseWriter, m.r, m.op, e)
}

func (m *muxError) Write(b []byte) (int, error) {
	if !m.wrote {
		m.WriteHeader(http.StatusNotFound)
	}
	return len(b), nil
}

func tooLarge() *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: fmt.Sprintf("request body larger than %d bytes", MaxBodyBytes)}
}

func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

// reply writes v as JSON with status.
func (s *Server) reply(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("admin: encoding an answer", "err", err)
		status = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorBody{Error: &Error{Status: status, Code: CodeInternal, Message: "encoding the answer failed"}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	s.writeDeadline(w)
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeDeadline bounds writing the answer, so a client that stops reading
// does not hold its handler.
func (s *Server) writeDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.writeTO))
}

// fail answers err as the API does (ErrorFor) and logs it.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, op string, err error) {
	e := ErrorFor(err)
	if e.Status == 0 {
		e.Status = http.StatusInternalServerError
	}
	if e.Status >= 500 {
		s.log.Error("admin request failed", "operator", op, "method", r.Method, "path", r.URL.Path, "status", e.Status, "code", e.Code, "err", e.Message)
	} else if e.Status != http.StatusUnauthorized {
		s.log.Info("admin request refused", "operator", op, "method", r.Method, "path", r.URL.Path, "status", e.Status, "code", e.Code, "err", e.Message)
	}
	s.reply(w, e.Status, ErrorBody{Error: e})
}

func (s *Server) noContent(w http.ResponseWriter) {
	s.writeDeadline(w)
	w.WriteHeader(http.StatusNoContent)
}

// decode reads the request's JSON body into v, within readTimeout. An
// empty body leaves v as it is when emptyOK.
func decode(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) error {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(readTimeout))
	b, err := io.ReadAll(r.Body)
	// Cleared, or the server's background read would cancel a long action
	// at the deadline.
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge()
		}
		return badRequest("reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if emptyOK {
			return nil
		}
		return badRequest("a JSON body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed JSON body: %v", err)
	}
	if dec.More() {
		return badRequest("malformed JSON body: data after the JSON value")
	}
	return nil
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func (s *Server) info(w http.ResponseWriter, r *http.Request, op string) {
	info, err := s.backend.ConsoleAs(op).Info(r.Context())
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.reply(w, http.StatusOK, info)
}

func (s *Server) planRefresh(w http.ResponseWriter, r *http.Request, op string) {
	var req PlanRequest
	if err := decode(w, r, &req, false); err != nil {
		s.fail(w, r, op, err)
		return
	}
	if req.Upstream == "" {
		s.fail(w, r, op, badRequest("upstream is required"))
		return
	}
	plan, err := s.backend.ConsoleAs(op).PlanRefresh(r.Context(), req.Upstream)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.reply(w, http.StatusOK, plan)
}

func (s *Server) applyRefresh(w http.ResponseWriter, r *http.Request, op string) {
	diff, err := s.backend.ConsoleAs(op).ApplyRefresh(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.reply(w, http.StatusOK, diff)
}

func (s *Server) cancelRefresh(w http.ResponseWriter, r *http.Request, op string) {
	if err := s.backend.ConsoleAs(op).CancelRefresh(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.noContent(w)
}

func (s *Server) refreshAll(w http.ResponseWriter, r *http.Request, op string) {
	diffs, err := s.backend.ConsoleAs(op).RefreshAll(r.Context())
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.reply(w, http.StatusOK, nonNil(diffs))
}

func (s *Server) ping(w http.ResponseWriter, r *http.Request, op string) {
	d, err := s.backend.ConsoleAs(op).Ping(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.reply(w, http.StatusOK, PingResult{Latency: d})
}

func (s *Server) reviews(w http.ResponseWriter, r *http.Request, op string) {
	states, err := s.backend.ConsoleAs(op).ReviewStates(r.Context())
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	if states == nil {
		states = map[string]core.ReviewState{}
	}
	s.reply(w, http.StatusOK, states)
}

func (s *Server) reviewEntries(w http.ResponseWriter, r *http.Request, op string) {
	entries, err := s.backend.ConsoleAs(op).ReviewEntries(r.Context())
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.reply(w, http.StatusOK, nonNil(entries))
}

func (s *Server) toolFlags(w http.ResponseWriter, r *http.Request, op string) {
	flags, err := s.backend.ConsoleAs(op).ToolFlags(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.reply(w, http.StatusOK, nonNil(flags))
}

func (s *Server) approveTool(w http.ResponseWriter, r *http.Request, op string) {
	if err := s.backend.ConsoleAs(op).ApproveTool(r.Context(), r.PathValue("name"), op); err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.noContent(w)
}

func (s *Server) rejectTool(w http.ResponseWriter, r *http.Request, op string) {
	if err := s.backend.ConsoleAs(op).RejectTool(r.Context(), r.PathValue("name"), op); err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.noContent(w)
}

func (s *Server) approveConfirmation(w http.ResponseWriter, r *http.Request, op string) {
	if err := s.backend.ConsoleAs(op).ApproveConfirmation(r.Context(), r.PathValue("id"), op); err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.noContent(w)
}

func (s *Server) rejectConfirmation(w http.ResponseWriter, r *http.Request, op string) {
	var req RejectRequest
	if err := decode(w, r, &req, true); err != nil {
		s.fail(w, r, op, err)
		return
	}
	if err := s.backend.ConsoleAs(op).RejectConfirmation(r.Context(), r.PathValue("id"), op, req.Reason); err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.noContent(w)
}

func (s *Server) endSession(w http.ResponseWriter, r *http.Request, op string) {
	if err := s.backend.ConsoleAs(op).EndSession(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.noContent(w)
}

func (s *Server) policyTest(w http.ResponseWriter, r *http.Request, op string) {
	pt, ok := s.backend.(PolicyTester)
	if !ok {
		s.fail(w, r, op, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "this gateway cannot test policies"})
		return
	}
	var req PolicyTestRequest
	if err := decode(w, r, &req, false); err != nil {
		s.fail(w, r, op, err)
		return
	}
	if req.Actor == "" || req.Tool == "" {
		s.fail(w, r, op, badRequest("actor and tool are required"))
		return
	}
	trial, err := pt.TryPolicy(r.Context(), req)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.reply(w, http.StatusOK, trial)
}

func (s *Server) auditCall(w http.ResponseWriter, r *http.Request, op string) {
	checks, err := s.backend.ConsoleAs(op).AuditOf(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.reply(w, http.StatusOK, checks)
}

func (s *Server) policies(w http.ResponseWriter, r *http.Request, op string) {
	rep, err := s.backend.ConsoleAs(op).Policies(r.Context())
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	if rep.Rules == nil {
		rep.Rules = []core.PolicyRuleStats{}
	}
	s.reply(w, http.StatusOK, rep)
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request, op string) {
	var q core.AuditQuery
	v := r.URL.Query()
	if since := v.Get("since"); since != "" {
		t, err := ParseSince(since, s.now())
		if err != nil {
			s.fail(w, r, op, badRequest("since: %v", err))
			return
		}
		q.Since = t
	}
	if limit := v.Get("limit"); limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 0 {
			s.fail(w, r, op, badRequest("limit: %q is not a whole number of records", limit))
			return
		}
		q.Limit = n
	}
	recs, err := s.backend.Audit(r.Context(), q)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	s.reply(w, http.StatusOK, nonNil(recs))
}

// ParseSince reads an audit query's since: a duration back from now
// ("24h") or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q is negative", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (24h) nor an RFC 3339 time", s)
	}
	return t, nil
}
