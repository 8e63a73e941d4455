package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/mcp/jsonrpc"
	"github.com/toolgate/toolgate/telemetry"
)

// poster sends a Streamable HTTP upstream's tools/call as one POST of the
// JSON-RPC bytes over the session's pooled client, and reads the result's
// bytes out of the answer once. mcp-go's transport marshals the request
// again, clones its headers, decodes the whole answer into its types and,
// for a stream, runs two goroutines per call; the session, initialize,
// notifications and the standing GET stream stay with it.
//
// It sends what mcp-go would: the session id and protocol version headers,
// through the same http.Client, so authTransport adds the upstream's
// credentials and signature. It accepts a JSON answer or an event stream
// (notifications and the server's requests on it go where mcp-go sends
// them; a stream the server ends before the answer is resumed with
// Last-Event-ID, as mcp-go does). Errors are shaped for session.classify as
// mcp-go's are, so a call whose answer was lost is never taken for one that
// was not sent (IM-29).
type poster struct {
	hc       *http.Client
	url      string
	st       *transport.StreamableHTTP
	protocol string
	// session is the id initialize was given; "" if the server gave none.
	session string
	onNote  func(mcpgo.JSONRPCNotification)
	onReq   transport.RequestHandler
	reply   func(context.Context, *transport.JSONRPCResponse) error
	// header is every call's headers, cloned per call.
	header http.Header
	// pool, when set, carries the calls instead of hc, with auth's
	// credentials and signature.
	pool *connPool
	auth *authTransport
}

// legacyProtocols are the revisions with sessions, listed once: mcp-go
// builds the list anew on every call of LegacyProtocolVersions.
var legacyProtocols = mcpgo.LegacyProtocolVersions()

func newPoster(hc *http.Client, url string, st *transport.StreamableHTTP, protocol string,
	onNote func(mcpgo.JSONRPCNotification), onReq transport.RequestHandler,
	reply func(context.Context, *transport.JSONRPCResponse) error) *poster {
	if protocol != "" && !slices.Contains(legacyProtocols, protocol) {
		// Revisions without sessions change the headers; mcp-go knows them.
		return nil
	}
	p := &poster{hc: hc, url: url, st: st, protocol: protocol, session: st.GetSessionId(),
		onNote: onNote, onReq: onReq, reply: reply, header: http.Header{}}
	p.header["Content-Type"] = []string{"application/json"}
	p.header["Accept"] = []string{"application/json, text/event-stream"}
	if p.session != "" {
		p.header[server.HeaderKeySessionID] = []string{p.session}
	}
	if protocol != "" {
		p.header[mcpgo.HeaderProtocolVersion] = []string{protocol}
	}
	return p
}

// callBody is a tools/call request with id and params (an object's
// bytes), built in one allocation, with room for the newline that ends it
// on stdio.
func callBody(id string, params []byte) []byte {
	const head, mid, tail = `{"jsonrpc":"2.0","id":`, `,"method":"tools/call","params":`, `}`
	b := make([]byte, 0, len(head)+len(id)+2+len(mid)+len(params)+len(tail)+1)
	b = append(b, head...)
	b = jsonrpc.AppendString(b, id)
	b = append(b, mid...)
	b = append(b, params...)
	return append(b, tail...)
}

// callParamsJSON is tools/call's params: name, the arguments as given
// (valid JSON), and _meta when meta has a member.
func callParamsJSON(name string, args json.RawMessage, meta *callMeta) []byte {
	b := make([]byte, 0, len(name)+len(args)+160)
	b = append(b, `{"name":`...)
	b = jsonrpc.AppendString(b, name)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	if meta != nil && (meta.ProgressToken != "" || meta.IdempotencyKey != "" || meta.LogLevel != "" || meta.Traceparent != "") {
		b = append(b, `,"_meta":{`...)
		n := len(b)
		if meta.ProgressToken != "" {
			b = append(b, `"progressToken":`...)
			b = jsonrpc.AppendString(b, meta.ProgressToken)
		}
		if meta.IdempotencyKey != "" {
			if len(b) > n {
				b = append(b, ',')
			}
			b = append(b, `"`+IdempotencyMetaKey+`":`...)
			b = jsonrpc.AppendString(b, meta.IdempotencyKey)
		}
		if meta.LogLevel != "" {
			if len(b) > n {
				b = append(b, ',')
			}
			b = append(b, `"`+mcpgo.MetaKeyLogLevel+`":`...)
			b = jsonrpc.AppendString(b, meta.LogLevel)
		}
		b = appendTraceMeta(b, meta)
		b = append(b, '}')
	}
	return append(b, '}')
}

// errNoAnswer is a response stream that ended without the response, as
// mcp-go words it, so that classifyErr takes it for a lost answer.
var errNoAnswer = errors.New("unexpected nil response")

// call POSTs body, a tools/call request, and returns the response. code is
// the HTTP status of an answer that failed, for classify; 0 otherwise.
func (p *poster) call(ctx context.Context, body []byte) (*rpcAnswer, int, error) {
	a, code, err := p.exchange(ctx, body)
	if err != nil && p.pool != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// Cut by the context, which set the connection's deadline: say so,
		// as net/http does.
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return a, code, err
}

func (p *poster) exchange(ctx context.Context, body []byte) (resp *rpcAnswer, code int, err error) {
	if p.session != "" && p.st.GetSessionId() != p.session {
		// mcp-go saw the session end (a 404 elsewhere): as its transport, send nothing.
		return nil, 0, fmt.Errorf("failed to send request: %w", transport.ErrSessionTerminated)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errBuildRequest, err)
	}
	req.Header = p.header.Clone()
	telemetry.Inject(ctx, req.Header)
	var res *http.Response
	var release func(reuse bool)
	if p.pool != nil {
		res, release, err = p.send(ctx, req)
		if err == nil && res.StatusCode >= 300 && res.StatusCode < 400 {
			// A redirect: the server did not act on the request, and the
			// client follows it as it followed mcp-go's.
			release(false)
			release = nil
			req, err = http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
			if err != nil {
				return nil, 0, fmt.Errorf("%w: %w", errBuildRequest, err)
			}
			req.Header = p.header.Clone()
			res, err = p.hc.Do(req)
		}
	} else {
		res, err = p.hc.Do(req)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("failed to send request: %w", err)
	}
	reuse := false
	defer func() {
		if release != nil {
			release(reuse)
		} else {
			res.Body.Close()
		}
	}()
	switch res.StatusCode {
	case http.StatusOK, http.StatusAccepted:
	case http.StatusNotFound:
		// The server no longer knows the session: reconnect (IM-27).
		return nil, res.StatusCode, fmt.Errorf("failed to send request: %w", transport.ErrSessionTerminated)
	default:
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		var a rpcAnswer
		if json.Unmarshal(b, &a) == nil && a.Error != nil {
			return &a, res.StatusCode, nil
		}
		return nil, res.StatusCode, fmt.Errorf("request failed with status %d: %s", res.StatusCode, b)
	}
	mt := res.Header.Get("Content-Type")
	if mt != "application/json" {
		mt, _, _ = mime.ParseMediaType(mt)
	}
	switch mt {
	case "application/json":
		b, err := readBody(res)
		if err != nil {
			return nil, 0, fmt.Errorf("failed to decode response: %w", err)
		}
		a, err := readAnswer(b)
		if err != nil {
			return nil, 0, fmt.Errorf("failed to decode response: %w", err)
		}
		if len(a.ID) == 0 || string(a.ID) == "null" {
			return nil, 0, errors.New("response should contain RPC id")
		}
		reuse = true
		return &a, 0, nil
	case "text/event-stream":
		a, err := p.stream(ctx, res.Body)
		return a, 0, err
	}
	return nil, 0, fmt.Errorf("unexpected content type: %s", res.Header.Get("Content-Type"))
}

var errBuildRequest = errors.New("failed to create request")

// send writes req on a pooled connection and reads the answer's head.
// release(reuse) ends the exchange: the connection goes back to the pool
// when reuse is set and it is fit to, else it is closed. The call's
// context ending makes the connection's reads and writes fail at once.
func (p *poster) send(ctx context.Context, req *http.Request) (*http.Response, func(reuse bool), error) {
	r, err := p.auth.prepare(req)
	if err != nil {
		return nil, nil, err
	}
	if u := r.URL.User; u != nil && r.Header.Get("Authorization") == "" {
		// What net/http's client does with a URL's credentials.
		pw, _ := u.Password()
		r.SetBasicAuth(u.Username(), pw)
	}
	pc, err := p.pool.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = pc.c.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, func(bool), error) {
		stop()
		_ = pc.c.Close()
		return nil, nil, err
	}
	if err := r.Write(pc.bw); err != nil {
		return fail(err)
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(err)
	}
	res, err := http.ReadResponse(pc.br, r)
	for err == nil && res.StatusCode >= 100 && res.StatusCode < 200 && res.StatusCode != http.StatusSwitchingProtocols {
		// Informational answers (103 Early Hints) come before the answer.
		res, err = http.ReadResponse(pc.br, r)
	}
	if err != nil {
		return fail(err)
	}
	release := func(reuse bool) {
		cut := !stop()
		_ = res.Body.Close() // reads what is left of a body of known end
		if reuse && !cut && !res.Close && ctx.Err() == nil {
			p.pool.put(pc)
			return
		}
		_ = pc.c.Close()
	}
	return res, release, nil
}

// readBody reads an answer whole: in one allocation when its length is
// known.
func readBody(res *http.Response) ([]byte, error) {
	if n := res.ContentLength; n > 0 && n <= 64<<20 {
		b := make([]byte, n)
		_, err := io.ReadFull(res.Body, b)
		return b, err
	}
	return io.ReadAll(res.Body)
}

// rpcAnswer is a JSON-RPC message read off an answer: a response, or on a
// stream a notification or a request of the server's.
type rpcAnswer struct {
	ID     json.RawMessage  `json:"id"`
	Method string           `json:"method"`
	Result aliasRaw         `json:"result"`
	Error  *rpcErrorDetails `json:"error"`
}

// rpcErrorDetails is a JSON-RPC error as the gateway reads it.
type rpcErrorDetails struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// readAnswer is json.Unmarshal of b into an rpcAnswer. A response whose
// members need no interpreting (no name in other case, a plain method, an
// error object that decodes) is read in one scan and one check, its result
// never decoded; anything else, and every error, is encoding/json's.
func readAnswer(b []byte) (rpcAnswer, error) {
	var a rpcAnswer
	if m, ok := jsonrpc.Scan(b); ok && !m.Folded && json.Valid(b) {
		a.ID, a.Result = json.RawMessage(m.ID), aliasRaw(m.Result)
		plain := true
		switch n := len(m.Method); {
		case n == 0 || string(m.Method) == "null":
		case n >= 2 && m.Method[0] == '"' && bytes.IndexByte(m.Method, '\\') < 0 && utf8.Valid(m.Method):
			a.Method = string(m.Method[1 : n-1])
		default:
			plain = false
		}
		if e := m.Err; plain && len(e) > 0 && string(e) != "null" {
			plain = e[0] == '{' && json.Unmarshal(e, &a.Error) == nil
		}
		if plain {
			return a, nil
		}
		a = rpcAnswer{}
	}
	err := json.Unmarshal(b, &a)
	return a, err
}

// aliasRaw is json.RawMessage without the copy: the answer's buffer is
// never reused, so the result may point into it.
type aliasRaw []byte

func (r *aliasRaw) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// stream reads an event stream until the response: notifications go to
// the session's handler, the server's requests to the gateway's, as
// mcp-go's transport does with them.
func (p *poster) stream(ctx context.Context, body io.ReadCloser) (*rpcAnswer, error) {
	var last string
	retry := time.Second
	for {
		a, ended, err := p.readEvents(ctx, body, &last, &retry)
		if a != nil || err != nil {
			return a, err
		}
		if !ended || last == "" || ctx.Err() != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errNoAnswer
		}
		// The server ended the stream after an event id and before the
		// answer: it wants the client to come back for it (SEP-1699).
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
		if err != nil {
			return nil, err
		}
		req.Header = p.header.Clone()
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Del("Content-Type")
		req.Header.Set("Last-Event-ID", last)
		res, err := p.hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("failed to resume the SSE stream for the response: %w", err)
		}
		if res.StatusCode != http.StatusOK {
			res.Body.Close()
			return nil, fmt.Errorf("failed to resume the SSE stream for the response: status %d", res.StatusCode)
		}
		body = res.Body
		defer res.Body.Close()
	}
}

// readEvents reads one stream's events; ended is whether the server ended
// it (as against it breaking off).
func (p *poster) readEvents(ctx context.Context, body io.Reader, last *string, retry *time.Duration) (a *rpcAnswer, ended bool, err error) {
	br := bufio.NewReader(body)
	var data []byte
	var id string
	hasID := false
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long data line: read the rest of it.
			rest, rerr := br.ReadBytes('\n')
			line, err = append(slices.Clone(line), rest...), rerr
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			if err == io.EOF {
				if len(data) > 0 {
					if a := p.dispatch(ctx, data); a != nil {
						return a, true, nil
					}
				}
				return nil, true, nil
			}
			return nil, false, nil
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasID {
				*last, hasID = id, false
			}
			if len(data) > 0 {
				if a := p.dispatch(ctx, data); a != nil {
					return a, true, nil
				}
				data = data[:0]
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		} else if v, ok := bytes.CutPrefix(line, []byte("id:")); ok {
			if v = bytes.TrimPrefix(v, []byte(" ")); bytes.IndexByte(v, 0) < 0 {
				id, hasID = string(v), true
			}
		} else if v, ok := bytes.CutPrefix(line, []byte("retry:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if ms, err := strconv.ParseUint(string(v), 10, 31); err == nil && len(v) > 0 && strings.Trim(string(v), "0123456789") == "" {
				*retry = max(time.Duration(ms)*time.Millisecond, 10*time.Millisecond)
			}
		}
	}
}

// dispatch handles one event's data; it returns the response when that is
// what the event carried.
func (p *poster) dispatch(ctx context.Context, data []byte) *rpcAnswer {
	var a rpcAnswer
	if json.Unmarshal(data, &a) != nil {
		return nil
	}
	noID := len(a.ID) == 0 || string(a.ID) == "null"
	switch {
	case noID && a.Method != "":
		var n mcpgo.JSONRPCNotification
		if json.Unmarshal(data, &n) == nil && p.onNote != nil {
			p.onNote(n)
		}
		return nil
	case noID:
		return nil
	case a.Method != "":
		var req transport.JSONRPCRequest
		if json.Unmarshal(data, &req) == nil {
			p.serverRequest(ctx, req)
		}
		return nil
	}
	// The buffer is reused for the next event: the result keeps a copy.
	a.Result = bytes.Clone(a.Result)
	a.ID = bytes.Clone(a.ID)
	return &a
}

// serverRequest answers a request the server sent on the call's stream, in
// a goroutine of its own as mcp-go does, so that the stream goes on being
// read; the handler is bounded by the call's context and 30 seconds, as
// mcp-go's, and the gateway's own handler bounds its wait for a person.
func (p *poster) serverRequest(ctx context.Context, req transport.JSONRPCRequest) {
	if p.onReq == nil {
		return
	}
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resp, err := p.onReq(rctx, req)
		if err != nil {
			resp = transport.NewJSONRPCErrorResponse(req.ID, mcpgo.INTERNAL_ERROR, err.Error(), nil)
		}
		if resp != nil && p.reply != nil {
			_ = p.reply(rctx, resp)
		}
	}()
}
