// Package mcptest is a small MCP client over Streamable HTTP for tests
// (test tooling: the installed binary does not link it; `toolgate bench`
// has a client of its own): raw JSON-RPC on net/http, so a test can send
// exactly the bytes it means to (malformed bodies included) and see exactly
// what came back (status, headers, body), with typed helpers for the
// common exchanges.
//
// A [Client] is one MCP session at one URL. [Client.Post], [Client.Do] and
// [Client.Send] send anything and return the answer unjudged; [Client.Call],
// [Client.Initialize], [Client.Notify], [Client.ListTools] and
// [Client.CallTool] speak the protocol and report a non-200 answer as a
// [*StatusError] and a JSON-RPC error as an [*Error]. An answer is either one
// JSON body (application/json) or an SSE stream (text/event-stream) whose
// events may carry notifications and server requests before the response;
// [Response.Messages] and [Stream.Next] give every message, in order.
//
// A Client is safe for concurrent use: the session id, the negotiated
// protocol version and the request ids are atomic; a call in flight on one
// goroutine and a notification sent from another (cancellation, an answer
// to an elicitation) is the intended use. A [Stream] belongs to one
// goroutine.
package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// LatestProtocol is the protocol version a Client asks for by default.
const LatestProtocol = "2025-06-18"

// MaxBody bounds how much of an answer a Client reads, and one SSE event.
const MaxBody = 16 << 20

// ErrNoResponse is returned when an answer carries no JSON-RPC response:
// an empty body, or a stream that ended before one.
var ErrNoResponse = errors.New("mcptest: no JSON-RPC response in the answer")

// ErrTooLarge is returned when an answer or an SSE event exceeds MaxBody.
var ErrTooLarge = errors.New("mcptest: answer larger than MaxBody")

// Options configures a Client; the zero value (or nil) is a client with
// http.DefaultClient, no credentials and LatestProtocol.
type Options struct {
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Authorization, if not empty, is the Authorization header of every
	// request ("Bearer <token>").
	Authorization string
	// Header is added to every request (say, a test's actor headers). It is
	// read, never written, after New.
	Header http.Header
	// ProtocolVersion is what Initialize asks for; "" means LatestProtocol.
	ProtocolVersion string
	// ClientName and ClientVersion are Initialize's clientInfo; "" means
	// "mcptest" and "1".
	ClientName, ClientVersion string
	// Capabilities is Initialize's capabilities object; nil means {}.
	Capabilities json.RawMessage
}

// Client is one MCP session over Streamable HTTP. Safe for concurrent use.
type Client struct {
	url  string
	hc   *http.Client
	opts Options

	nextID atomic.Int64
	// state is swapped whole, so a request reads id and version together
	// without a lock.
	state atomic.Pointer[session]
}

// session is a session id and the protocol version sent with it.
type session struct{ id, proto string }

// New returns a client of the endpoint at url. It sends nothing.
func New(url string, opts *Options) *Client {
	c := &Client{url: url, hc: http.DefaultClient}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.HTTPClient != nil {
		c.hc = c.opts.HTTPClient
	}
	if c.opts.ProtocolVersion == "" {
		c.opts.ProtocolVersion = LatestProtocol
	}
	return c
}

// URL is the endpoint's URL.
func (c *Client) URL() string { return c.url }

// Session is the session id the server minted at Initialize (or the one
// set with SetSession); "" when there is none.
func (c *Client) Session() string {
	if s := c.state.Load(); s != nil {
		return s.id
	}
	return ""
}

// SetSession makes every later request carry session id and protocol
// version proto ("" means the client's ProtocolVersion): to speak on
// another client's session, or on an id never minted. An empty id drops
// the session headers.
func (c *Client) SetSession(id, proto string) {
	if proto == "" {
		proto = c.opts.ProtocolVersion
	}
	c.state.Store(&session{id: id, proto: proto})
}

// NextID returns a request id not yet used by this client (1, 2, …).
func (c *Client) NextID() int64 { return c.nextID.Add(1) }

// NewRequest is a request to the endpoint with every header the client
// sends: JSON in, JSON or SSE out, the credentials, Options.Header, and the
// session's id and protocol version once there is a session. body may be
// any reader; one that is not a *bytes.Reader, *bytes.Buffer or
// *strings.Reader is sent chunked, without a Content-Length.
func (c *Client) NewRequest(ctx context.Context, method string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, body)
	if err != nil {
		return nil, err
	}
	h := req.Header
	if method == http.MethodPost {
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
	} else if method == http.MethodGet {
		h.Set("Accept", "text/event-stream")
	}
	if c.opts.Authorization != "" {
		h.Set("Authorization", c.opts.Authorization)
	}
	for k, vs := range c.opts.Header {
		h[k] = vs
	}
	if s := c.state.Load(); s != nil && s.id != "" {
		h.Set("Mcp-Session-Id", s.id)
		h.Set("Mcp-Protocol-Version", s.proto)
	}
	return req, nil
}

// Response is one answer, read whole. Post and Do return it by value: a
// hot loop (the bench's) allocates nothing for it.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ContentType is the answer's media type without parameters.
func (r *Response) ContentType() string { return mediaType(r.Header.Get("Content-Type")) }

// IsStream reports whether the answer is an SSE stream.
func (r *Response) IsStream() bool { return r.ContentType() == "text/event-stream" }

// Messages parses the answer into its JSON-RPC messages, in order: a JSON
// body is one message or a batch of them, an SSE stream one message per
// event with data. An empty body has none.
func (r *Response) Messages() ([]Message, error) {
	if r.IsStream() {
		return readEvents(bytes.NewReader(r.Body))
	}
	return parseJSONBody(r.Body)
}

// Decode decodes the answer's JSON-RPC response into v: the body itself
// when it is JSON (with no second parse, so it costs what decoding the body
// costs), or the first response of an SSE stream. It is ErrNoResponse when
// the body is empty or the stream has no response.
func (r *Response) Decode(v any) error {
	if !r.IsStream() {
		if len(bytes.TrimSpace(r.Body)) == 0 {
			return ErrNoResponse
		}
		return json.Unmarshal(r.Body, v)
	}
	msgs, err := r.Messages()
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.IsResponse() {
			return json.Unmarshal(m.Raw, v)
		}
	}
	return ErrNoResponse
}

// Result is the answer's JSON-RPC response: its result, or its error. err
// is ErrNoResponse when there is neither, or the answer does not parse.
func (r *Response) Result() (result json.RawMessage, rpcErr *Error, err error) {
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := r.Decode(&m); err != nil {
		return nil, nil, err
	}
	if m.Error != nil {
		return nil, m.Error, nil
	}
	if m.Result == nil {
		return nil, nil, ErrNoResponse
	}
	return m.Result, nil, nil
}

// Do sends req with the client's HTTP client and reads the whole answer
// (up to MaxBody). It keeps the session id of an answer that mints one when
// the client has none. Any status is an answer, not an error.
func (c *Client) Do(req *http.Request) (Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	c.keepSession(resp.Header)
	b, err := readAll(resp.Body)
	if err != nil {
		return Response{}, fmt.Errorf("%s %s: reading the answer: %w", req.Method, req.URL, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// readAll is io.ReadAll stopping at MaxBody, without the allocation an
// io.LimitReader would add to every call.
func readAll(r io.Reader) ([]byte, error) {
	b := make([]byte, 0, 512)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > MaxBody {
			return nil, ErrTooLarge
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append pick the next size
		}
	}
}

// keepSession records a minted session id, and the protocol version asked
// for until Initialize learns the negotiated one.
func (c *Client) keepSession(h http.Header) {
	old := c.state.Load()
	if old != nil && old.id != "" {
		return // the common case: no header lookup on a session's calls
	}
	if id := h.Get("Mcp-Session-Id"); id != "" {
		c.state.CompareAndSwap(old, &session{id: id, proto: c.opts.ProtocolVersion})
	}
}

// Post sends body as it is (malformed or not) with header added to the
// client's headers (header may be nil), and reads the whole answer.
func (c *Client) Post(ctx context.Context, body []byte, header http.Header) (Response, error) {
	req, err := c.NewRequest(ctx, http.MethodPost, bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	return c.Do(req)
}

// StatusError is an answer to a request whose HTTP status is not 200 (or,
// for a notification, not 202).
type StatusError struct {
	Method string // the JSON-RPC method
	Status int
	Header http.Header
	Body   []byte
}

// Error says the method, the status and the start of the body.
func (e *StatusError) Error() string {
	return fmt.Sprintf("mcptest: %s: HTTP %d: %.200s", e.Method, e.Status, e.Body)
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error says the code, the message and the data, if any.
func (e *Error) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("JSON-RPC error %d: %s (%s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
}

// Message is one JSON-RPC message as it arrived: a response (ID and Result
// or Error), a request (ID and Method) or a notification (Method alone).
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
	// Raw is the whole message, verbatim.
	Raw json.RawMessage `json:"-"`
}

// IsResponse reports whether m answers a request.
func (m Message) IsResponse() bool { return m.Method == "" && (m.Result != nil || m.Error != nil) }

// IsRequest reports whether m is a request (the server's, on a stream).
func (m Message) IsRequest() bool { return m.Method != "" && hasID(m.ID) }

// IsNotification reports whether m is a notification.
func (m Message) IsNotification() bool { return m.Method != "" && !hasID(m.ID) }

func hasID(id json.RawMessage) bool { return len(id) > 0 && string(id) != "null" }

func parseMessage(b []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return Message{}, fmt.Errorf("mcptest: a message that is not JSON-RPC: %w: %.200s", err, b)
	}
	m.Raw = bytes.Clone(b)
	return m, nil
}

// parseJSONBody is a JSON answer's messages: one object, or a batch.
func parseJSONBody(b []byte) ([]Message, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != '[' {
		m, err := parseMessage(b)
		if err != nil {
			return nil, err
		}
		return []Message{m}, nil
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(b, &batch); err != nil {
		return nil, fmt.Errorf("mcptest: a batch that is not JSON: %w: %.200s", err, b)
	}
	out := make([]Message, 0, len(batch))
	for _, raw := range batch {
		m, err := parseMessage(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// eventReader reads SSE events (the WHATWG event-stream format): data lines
// of one event are joined with "\n"; a blank line ends the event; comments
// and the event, id and retry fields are skipped; an event cut off by the
// end of the stream is dropped, as the format says. Lines end in "\n" or
// "\r\n".
type eventReader struct {
	sc *bufio.Scanner
}

func newEventReader(r io.Reader) *eventReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, MaxBody)
	return &eventReader{sc: sc}
}

// next returns the data of the next event that has any; io.EOF at the end.
func (e *eventReader) next() ([]byte, error) {
	var data []byte
	has := false
	for e.sc.Scan() {
		line := e.sc.Bytes()
		if len(line) == 0 {
			if has {
				return data, nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue // a comment (empty field) or another field
		}
		value, _ = bytes.CutPrefix(value, []byte(" "))
		if has {
			data = append(data, '\n')
		}
		data = append(data, value...)
		has = true
	}
	if err := e.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, ErrTooLarge
		}
		return nil, err
	}
	return nil, io.EOF
}

func readEvents(r io.Reader) ([]Message, error) {
	er := newEventReader(r)
	var out []Message
	for {
		data, err := er.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		m, err := parseMessage(data)
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

func mediaType(ct string) string {
	ct, _, _ = strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(ct))
}

// message is a JSON-RPC request's body, or a notification's when id is 0;
// params nil leaves them out, a json.RawMessage goes verbatim.
func message(id int64, method string, params any) ([]byte, error) {
	b := []byte(`{"jsonrpc":"2.0",`)
	if id != 0 {
		b = append(strconv.AppendInt(append(b, `"id":`...), id, 10), ',')
	}
	m, _ := json.Marshal(method) // a string always marshals
	b = append(append(b, `"method":`...), m...)
	if params != nil {
		p, ok := params.(json.RawMessage)
		if !ok {
			var err error
			if p, err = json.Marshal(params); err != nil {
				return nil, fmt.Errorf("mcptest: %s params: %w", method, err)
			}
		}
		b = append(append(b, `,"params":`...), p...)
	}
	return append(b, '}'), nil
}

// Call sends a request of method with params (marshalled as JSON; nil
// leaves them out; a json.RawMessage goes verbatim) under the next id, and
// returns the response's result or its JSON-RPC error. err is a
// *StatusError when the answer is not 200, ErrNoResponse when it has no
// response, or the transport's error.
func (c *Client) Call(ctx context.Context, method string, params any) (result json.RawMessage, rpcErr *Error, err error) {
	body, err := message(c.NextID(), method, params)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.Post(ctx, body, nil)
	if err != nil {
		return nil, nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, nil, &StatusError{Method: method, Status: resp.Status, Header: resp.Header, Body: resp.Body}
	}
	result, rpcErr, err = resp.Result()
	if err != nil {
		return nil, nil, fmt.Errorf("mcptest: %s: %w: %.200s", method, err, resp.Body)
	}
	return result, rpcErr, nil
}

// Notify sends a notification of method with params (nil leaves them out);
// the answer must be 202 Accepted. mcp-go's server also answers 200 with
// an event stream when a notification it had queued for the session (a
// list_changed) is sent while the POST is open; a stream of notifications
// only is taken as accepted. Anything else is an error.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	body, err := message(0, method, params)
	if err != nil {
		return err
	}
	resp, err := c.Post(ctx, body, nil)
	if err != nil {
		return err
	}
	if resp.Status == http.StatusAccepted {
		return nil
	}
	if resp.Status == http.StatusOK && resp.IsStream() {
		msgs, err := resp.Messages()
		if err == nil && len(msgs) > 0 && !slices.ContainsFunc(msgs, func(m Message) bool { return m.Method == "" || len(m.ID) > 0 }) {
			return nil
		}
	}
	return &StatusError{Method: method, Status: resp.Status, Header: resp.Header, Body: resp.Body}
}

// InitializeResult is what a server answers to initialize.
type InitializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
	Instructions string `json:"instructions,omitempty"`
}

// Initialize opens a session: initialize with the client's protocol
// version, clientInfo and capabilities, then notifications/initialized. It
// keeps the minted session id (a stateless server mints none: Session
// stays "") and, from then on, sends the negotiated protocol version. An
// earlier session of this client is forgotten first.
func (c *Client) Initialize(ctx context.Context) (*InitializeResult, error) {
	c.SetSession("", "")
	name, version := c.opts.ClientName, c.opts.ClientVersion
	if name == "" {
		name = "mcptest"
	}
	if version == "" {
		version = "1"
	}
	caps := c.opts.Capabilities
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	params := struct {
		ProtocolVersion string            `json:"protocolVersion"`
		Capabilities    json.RawMessage   `json:"capabilities"`
		ClientInfo      map[string]string `json:"clientInfo"`
	}{c.opts.ProtocolVersion, caps, map[string]string{"name": name, "version": version}}
	result, rpcErr, err := c.Call(ctx, "initialize", params)
	if err != nil {
		return nil, err
	}
	if rpcErr != nil {
		return nil, fmt.Errorf("mcptest: initialize: %w", rpcErr)
	}
	var ir InitializeResult
	if err := json.Unmarshal(result, &ir); err != nil || ir.ProtocolVersion == "" {
		return nil, fmt.Errorf("mcptest: initialize: a result without a protocol version: %.200s", result)
	}
	if id := c.Session(); id != "" {
		c.SetSession(id, ir.ProtocolVersion)
	}
	if err := c.Notify(ctx, "notifications/initialized", nil); err != nil {
		return nil, err
	}
	return &ir, nil
}

// Delete ends the session (DELETE with its id) and returns the answer,
// whatever its status. The client keeps the id, so a later request shows
// what the server says to an ended session.
func (c *Client) Delete(ctx context.Context) (Response, error) {
	req, err := c.NewRequest(ctx, http.MethodDelete, nil)
	if err != nil {
		return Response{}, err
	}
	return c.Do(req)
}

// Tool is one tool of a tools/list result.
type Tool struct {
	Name string
	// Raw is the tool's object, verbatim.
	Raw json.RawMessage
}

// UnmarshalJSON keeps the object whole next to its name.
func (t *Tool) UnmarshalJSON(b []byte) error {
	var v struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	t.Name, t.Raw = v.Name, bytes.Clone(b)
	return nil
}

// maxPages bounds ListTools: a server that hands out cursors forever is a
// failure, not a hang.
const maxPages = 1000

// ListTools lists every page of tools/list.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) {
	var tools []Tool
	cursor := ""
	for range maxPages {
		var params any = struct{}{}
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		result, rpcErr, err := c.Call(ctx, "tools/list", params)
		if err != nil {
			return tools, err
		}
		if rpcErr != nil {
			return tools, fmt.Errorf("mcptest: tools/list: %w", rpcErr)
		}
		var page struct {
			Tools      []Tool `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(result, &page); err != nil {
			return tools, fmt.Errorf("mcptest: tools/list: %w: %.200s", err, result)
		}
		tools = append(tools, page.Tools...)
		if cursor = page.NextCursor; cursor == "" {
			return tools, nil
		}
	}
	return tools, fmt.Errorf("mcptest: tools/list: more than %d pages", maxPages)
}

// ToolResult is a tools/call result.
type ToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text,omitempty"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// Raw is the result object, verbatim.
	Raw json.RawMessage `json:"-"`
}

// Text is the text of the first content block, "" when it has none.
func (r *ToolResult) Text() string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// CallTool calls tool name with args (marshalled as JSON; nil sends {}).
// A tool's failure is a result with IsError; rpcErr is the protocol's
// refusal (an unknown tool, bad params).
func (c *Client) CallTool(ctx context.Context, name string, args any) (res *ToolResult, rpcErr *Error, err error) {
	if args == nil {
		args = struct{}{}
	}
	params := struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}{name, args}
	result, rpcErr, err := c.Call(ctx, "tools/call", params)
	if err != nil || rpcErr != nil {
		return nil, rpcErr, err
	}
	var r ToolResult
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, nil, fmt.Errorf("mcptest: tools/call %s: %w: %.200s", name, err, result)
	}
	r.Raw = result
	return &r, nil, nil
}

// Stream is an answer read as it arrives: one message at a time, the
// notifications and server requests of an SSE stream before its response.
// Not safe for concurrent use; Close it.
type Stream struct {
	Status int
	Header http.Header

	body   io.ReadCloser
	events *eventReader // nil for a JSON answer
	queued []Message    // a JSON answer's messages not yet returned
	read   bool         // the JSON answer has been read
}

// Send posts body and returns as soon as the answer's headers arrive; the
// answer's messages come from [Stream.Next]. Any status is an answer: check
// Status.
// Cancelling ctx drops the connection.
func (c *Client) Send(ctx context.Context, body []byte, header http.Header) (*Stream, error) {
	req, err := c.NewRequest(ctx, http.MethodPost, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	return c.open(req)
}

// Listen opens the session's GET stream, where the server sends what is
// not an answer to a request (list_changed and the like).
func (c *Client) Listen(ctx context.Context) (*Stream, error) {
	req, err := c.NewRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	return c.open(req)
}

func (c *Client) open(req *http.Request) (*Stream, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	c.keepSession(resp.Header)
	s := &Stream{Status: resp.StatusCode, Header: resp.Header, body: resp.Body}
	if mediaType(resp.Header.Get("Content-Type")) == "text/event-stream" {
		s.events = newEventReader(resp.Body)
	}
	return s, nil
}

// ContentType is the answer's media type without parameters.
func (s *Stream) ContentType() string { return mediaType(s.Header.Get("Content-Type")) }

// Next returns the next message; io.EOF once the answer has ended.
func (s *Stream) Next() (Message, error) {
	if s.events != nil {
		data, err := s.events.next()
		if err != nil {
			return Message{}, err
		}
		return parseMessage(data)
	}
	if !s.read {
		s.read = true
		b, err := readAll(s.body)
		if err != nil {
			return Message{}, err
		}
		if s.queued, err = parseJSONBody(b); err != nil {
			return Message{}, err
		}
	}
	if len(s.queued) == 0 {
		return Message{}, io.EOF
	}
	m := s.queued[0]
	s.queued = s.queued[1:]
	return m, nil
}

// Messages reads the stream in a goroutine of its own and hands over each
// message on the channel (buffered to buf), which is closed when the stream
// ends or fails: for a test that waits on a stream while it acts.
func (s *Stream) Messages(buf int) <-chan Message {
	msgs := make(chan Message, buf)
	go func() {
		defer close(msgs)
		for {
			m, err := s.Next()
			if err != nil {
				return
			}
			msgs <- m
		}
	}()
	return msgs
}

// Close ends the answer, dropping the connection if it is still open.
func (s *Stream) Close() error { return s.body.Close() }
