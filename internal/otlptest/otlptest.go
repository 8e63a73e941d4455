// Package otlptest is an OTLP trace receiver for tests: the official OTLP
// protobuf types served over real HTTP (and gRPC) on 127.0.0.1, keeping
// every span it is sent and the headers the exports came with.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened: ids in hex, attributes as text.
type Span struct {
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string
	Kind         tracepb.Span_SpanKind
	Attributes   map[string]string
	StatusError  bool
	// Resource is the attributes of the resource that sent it.
	Resource map[string]string
	// Scope is the instrumentation scope's name.
	Scope string
}

// Receiver collects what it is sent.
type Receiver struct {
	// URL is the OTLP/HTTP base URL (http://127.0.0.1:port); GRPC is the
	// gRPC endpoint URL, once StartGRPC served one.
	URL  string
	GRPC string

	// discard: count spans instead of keeping them (a benchmark's
	// receiver, which would otherwise grow for the whole run). Its
	// exports are counted from the protobuf wire format without decoding
	// them into messages: a benchmark's receiver stands for a collector
	// that runs on hardware of its own, and building every span's Go
	// objects on the benchmarked machine's cores would be counted
	// against the gateway.
	discard bool

	mu      sync.Mutex
	count   int
	spans   []Span
	headers []map[string][]string
	changed chan struct{}
}

// Start serves an OTLP/HTTP receiver until the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	return start(t, false)
}

// StartCounting is Start for a benchmark: every export is read in full
// and checked to be well-formed protobuf, but its spans are only counted
// (Count), from the wire format.
func StartCounting(t testing.TB) *Receiver {
	t.Helper()
	return start(t, true)
}

// Count is how many spans were received.
func (r *Receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

func start(t testing.TB, discard bool) *Receiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r, stop := Serve(ln, discard)
	t.Cleanup(stop)
	return r
}

// Serve serves an OTLP/HTTP receiver on ln until stop is called, for a
// receiver outside a test (a benchmark's child process); with discard
// it only counts the spans.
func Serve(ln net.Listener, discard bool) (r *Receiver, stop func()) {
	r = &Receiver{changed: make(chan struct{}), discard: discard}
	srv := &http.Server{Handler: http.HandlerFunc(r.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	r.URL = "http://" + ln.Addr().String()
	return r, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
}

// StartGRPC serves the OTLP gRPC trace service too, until the test ends.
func (r *Receiver) StartGRPC(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(s, grpcService{r: r})
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ln) }()
	t.Cleanup(func() { s.Stop(); <-done })
	r.GRPC = "http://" + ln.Addr().String()
}

type grpcService struct {
	collectorpb.UnimplementedTraceServiceServer
	r *Receiver
}

func (g grpcService) Export(ctx context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	g.r.add(req, md)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "only POST /v1/traces", http.StatusNotFound)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := readBody(body, req.ContentLength, r.discard)
	if r.discard {
		defer bodies.Put(&b)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "content type "+ct+" is not application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	if r.discard {
		n, err := countSpans(b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.count += n
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		return // an empty ExportTraceServiceResponse is no bytes at all
	}
	var msg collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h := map[string][]string{}
	for k, v := range req.Header {
		h[strings.ToLower(k)] = v
	}
	r.add(&msg, h)
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

// maxBody bounds an export read.
const maxBody = 64 << 20

// bodies are the counting receiver's read buffers, reused: a collector
// reads into buffers it keeps, and growing a new one for every export
// would be this receiver's own cost on the benchmarked machine.
var bodies = sync.Pool{New: func() any { return new([]byte) }}

// readBody reads body, of length n when known (≥ 0), into a buffer of
// that size; reused when reuse (the caller returns it to bodies).
func readBody(body io.Reader, n int64, reuse bool) ([]byte, error) {
	if n < 0 || n > maxBody || !reuse {
		return io.ReadAll(io.LimitReader(body, maxBody))
	}
	p := bodies.Get().(*[]byte)
	b := *p
	if int64(cap(b)) < n {
		b = make([]byte, n)
	}
	b = b[:n]
	_, err := io.ReadFull(body, b)
	return b, err
}

func (r *Receiver) add(msg *collectorpb.ExportTraceServiceRequest, headers map[string][]string) {
	if r.discard {
		n := 0
		for _, rs := range msg.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				n += len(ss.GetSpans())
			}
		}
		r.mu.Lock()
		r.count += n
		r.mu.Unlock()
		return
	}
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Kind: s.GetKind(), Attributes: attrs(s.GetAttributes()),
					StatusError: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					Resource:    res, Scope: ss.GetScope().GetName(),
				})
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count += len(got)
	r.spans = append(r.spans, got...)
	r.headers = append(r.headers, headers)
	close(r.changed)
	r.changed = make(chan struct{})
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, value(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	}
	return v.String()
}

// Spans is every span received so far, ordered by trace and name.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]Span(nil), r.spans...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].TraceID < out[j].TraceID })
	return out
}

// Headers is the headers (lower-case names; gRPC metadata for gRPC) of
// every export received so far.
func (r *Receiver) Headers() []map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string][]string(nil), r.headers...)
}

// Wait returns the spans once done says they are all there, or fails the
// test when ctx ends first.
func (r *Receiver) Wait(t *testing.T, ctx context.Context, done func([]Span) bool) []Span {
	t.Helper()
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if s := r.Spans(); done(s) {
			return s
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the spans expected did not arrive: %v; received %d:\n%s", ctx.Err(), len(r.Spans()), Dump(r.Spans()))
			return nil
		}
	}
}

// Dump is spans as lines, for failure messages.
func Dump(spans []Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "%s %s parent=%s %q kind=%v err=%v %v\n", s.TraceID, s.SpanID, s.ParentSpanID, s.Name, s.Kind, s.StatusError, s.Attributes)
	}
	return b.String()
}

// The field numbers countSpans walks: ExportTraceServiceRequest's
// resource_spans, ResourceSpans' scope_spans, ScopeSpans' spans.
const (
	fieldResourceSpans protowire.Number = 1
	fieldScopeSpans    protowire.Number = 2
	fieldSpans         protowire.Number = 2
)

// countSpans is how many spans an encoded ExportTraceServiceRequest
// holds, read from the wire format: an error for bytes that are not
// well-formed protobuf down to the spans.
func countSpans(b []byte) (int, error) {
	n := 0
	err := eachField(b, fieldResourceSpans, func(rs []byte) error {
		return eachField(rs, fieldScopeSpans, func(ss []byte) error {
			return eachField(ss, fieldSpans, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// eachField calls f with the bytes of every length-delimited field num of
// the message b, skipping the other fields.
func eachField(b []byte, num protowire.Number, f func([]byte) error) error {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return protowire.ParseError(l)
			}
			if err := f(v); err != nil {
				return err
			}
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
	}
	return nil
}
