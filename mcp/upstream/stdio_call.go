package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// stdioPipe is the gateway's end of a stdio child: it writes JSON-RPC
// lines to the child's stdin and one goroutine reads its stdout line by
// line, routing each response to the request that waits for it by id.
//
// It is the transport mcp-go's client runs initialize, notifications and
// the server's requests over (transport.BidirectionalInterface, behaving
// as mcp-go's own stdio transport does), and tools/call goes around the
// client through call: the request's bytes are written as they are, and
// the result's bytes are cut out of the line once, never decoded.
// mcp-go's transport marshals every request, parses every line two or
// three times and decodes the whole response into its types.
type stdioPipe struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	log    *slog.Logger
	// done is closed when stdout ends or on Close: nothing more will be
	// answered.
	done      chan struct{}
	doneOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
	// readerDone is closed when the reading goroutine has returned.
	readerDone chan struct{}
	startOnce  sync.Once

	// wmu keeps lines whole on stdin.
	wmu sync.Mutex

	hmu       sync.RWMutex
	ctx       context.Context
	onNote    func(mcpgo.JSONRPCNotification)
	onRequest transport.RequestHandler

	mu sync.Mutex
	// pending maps a request id, as the JSON bytes it was sent with, to the
	// channel its response is handed over on.
	pending map[string]chan stdioReply
}

var _ transport.BidirectionalInterface = (*stdioPipe)(nil)

// stdioReply is one response line, and what the reader cut out of it.
type stdioReply struct {
	line []byte
	msg  jsonrpc.Members
	err  error
}

// maxStdioLine bounds one line of a child's stdout. A longer line is
// skipped, not kept; the request it answers, if its head names one, fails.
var maxStdioLine = 64 << 20

// errLineTooLong is the error of a call whose response was over maxStdioLine.
var errLineTooLong = errors.New("response line too long")

// startStdioPipe starts cmd with its stdin and stdout on pipes of the
// gateway's own. The pipes are *os.File, so exec starts no copying
// goroutines and Wait does not close the gateway's ends.
func startStdioPipe(cmd *exec.Cmd, log *slog.Logger) (*stdioPipe, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	// The child has its own copies now; the gateway keeps only its ends,
	// so the child's exit ends stdout.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("failed to start command: %w", err)
	}
	return &stdioPipe{
		cmd: cmd, stdin: inW, stdout: outR, log: log,
		done: make(chan struct{}), readerDone: make(chan struct{}),
		ctx: context.Background(), pending: map[string]chan stdioReply{},
	}, nil
}

// Start starts reading stdout; ctx is what the server's requests are
// handled under. Later calls do nothing.
func (p *stdioPipe) Start(ctx context.Context) error {
	p.startOnce.Do(func() {
		p.hmu.Lock()
		p.ctx = ctx
		p.hmu.Unlock()
		go p.read()
	})
	return nil
}

func (p *stdioPipe) GetSessionId() string { return "" }

func (p *stdioPipe) SetNotificationHandler(h func(mcpgo.JSONRPCNotification)) {
	p.hmu.Lock()
	p.onNote = h
	p.hmu.Unlock()
}

func (p *stdioPipe) SetRequestHandler(h transport.RequestHandler) {
	p.hmu.Lock()
	p.onRequest = h
	p.hmu.Unlock()
}

func (p *stdioPipe) closeDone() { p.doneOnce.Do(func() { close(p.done) }) }

// Close ends the connection: stdin is closed, which asks the child to
// exit, and the child is reaped. The caller (stopChild) signals the
// process group meanwhile if it does not exit. The reader ends with it:
// stdout is closed once the child is gone, in case a grandchild still
// holds its other end.
func (p *stdioPipe) Close() error {
	p.closeDone()
	p.closeOnce.Do(func() {
		if err := p.stdin.Close(); err != nil {
			p.closeErr = fmt.Errorf("failed to close stdin: %w", err)
		}
		if err := p.cmd.Wait(); err != nil && p.closeErr == nil {
			p.closeErr = err
		}
		_ = p.stdout.Close()
		p.startOnce.Do(func() { close(p.readerDone) })
		<-p.readerDone
	})
	return p.closeErr
}

// writeLine writes b, which ends in a newline, as one line.
func (p *stdioPipe) writeLine(b []byte) error {
	p.wmu.Lock()
	_, err := p.stdin.Write(b)
	p.wmu.Unlock()
	return err
}

// replies keeps the one-slot channels responses are handed over on. A
// channel goes back only once nothing can send on it any more: its
// response was received, or its wait was withdrawn under mu before any
// send, since the reader sends only on a channel it took out of pending.
var replies = sync.Pool{New: func() any { return make(chan stdioReply, 1) }}

// wait registers key and returns the channel its response comes on.
func (p *stdioPipe) wait(key string) chan stdioReply {
	ch := replies.Get().(chan stdioReply)
	p.mu.Lock()
	p.pending[key] = ch
	p.mu.Unlock()
	return ch
}

// withdraw ends the wait for key, and reports whether it was still
// registered, so no response can come on its channel any more.
func (p *stdioPipe) withdraw(key string, ch chan stdioReply) bool {
	p.mu.Lock()
	mine := p.pending[key] == ch
	if mine {
		delete(p.pending, key)
	}
	p.mu.Unlock()
	return mine
}

// abandon withdraws the wait for key; a channel that still gets its
// response is left to the collector.
func (p *stdioPipe) abandon(key string, ch chan stdioReply) {
	if p.withdraw(key, ch) {
		replies.Put(ch)
	}
}

// received returns a channel whose response was read to the pool.
func received(ch chan stdioReply, r stdioReply) (stdioReply, error) {
	replies.Put(ch)
	return r, r.err
}

// exchange writes line, a request whose id is key, and waits for its
// response, as mcp-go's stdio transport does: ErrTransportClosed once
// stdout has ended, the context's error when it ends first, and
// errConnectionLost when lost is closed first (nil: never).
func (p *stdioPipe) exchange(ctx context.Context, lost <-chan struct{}, key string, line []byte) (stdioReply, error) {
	select {
	case <-p.done:
		return stdioReply{}, transport.ErrTransportClosed
	case <-ctx.Done():
		return stdioReply{}, ctx.Err()
	default:
	}
	ch := p.wait(key)
	if err := p.writeLine(line); err != nil {
		p.abandon(key, ch)
		return stdioReply{}, fmt.Errorf("failed to write request: %w", err)
	}
	select {
	case r := <-ch:
		return received(ch, r)
	case <-p.done:
		// A response may have come just before stdout ended.
		select {
		case r := <-ch:
			return received(ch, r)
		default:
		}
		p.abandon(key, ch)
		return stdioReply{}, transport.ErrTransportClosed
	case <-lost:
		p.abandon(key, ch)
		return stdioReply{}, errConnectionLost
	case <-ctx.Done():
		p.abandon(key, ch)
		return stdioReply{}, ctx.Err()
	}
}

// call sends a tools/call request with params and the id "tg-N", and
// returns its response with the result's bytes as they came. The request
// is written in one buffer, its id a string that needs no escaping.
func (p *stdioPipe) call(ctx context.Context, lost <-chan struct{}, n int64, params []byte) (*rpcAnswer, error) {
	const head, mid, tail = `{"jsonrpc":"2.0","id":"tg-`, `","method":"tools/call","params":`, "}\n"
	line := make([]byte, 0, len(head)+20+len(mid)+len(params)+len(tail))
	line = append(line, head...)
	line = strconv.AppendInt(line, n, 10)
	key := `"` + string(line[len(head)-3:]) + `"`
	line = append(line, mid...)
	line = append(line, params...)
	line = append(line, tail...)
	r, err := p.exchange(ctx, lost, key, line)
	if err != nil {
		return nil, err
	}
	a := &rpcAnswer{ID: r.msg.ID, Result: aliasRaw(r.msg.Result)}
	if e := r.msg.Err; len(e) > 0 && string(e) != "null" {
		if err := json.Unmarshal(e, &a.Error); err != nil {
			return nil, fmt.Errorf("failed to decode response: %w", err)
		}
	}
	return a, nil
}

// SendRequest is the client's requests: initialize, and the gateway's
// other requests through session.request.
func (p *stdioPipe) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal request: %w", err)
	}
	key, err := json.Marshal(req.ID)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal request: %w", err)
	}
	r, err := p.exchange(ctx, nil, string(key), append(b, '\n'))
	if err != nil {
		return nil, err
	}
	var resp transport.JSONRPCResponse
	if err := json.Unmarshal(r.line, &resp); err != nil {
		return nil, fmt.Errorf("failed to decode response: %w", err)
	}
	return &resp, nil
}

func (p *stdioPipe) SendNotification(ctx context.Context, n mcpgo.JSONRPCNotification) error {
	select {
	case <-p.done:
		return transport.ErrTransportClosed
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("failed to marshal notification: %w", err)
	}
	if err := p.writeLine(append(b, '\n')); err != nil {
		return fmt.Errorf("failed to write notification: %w", err)
	}
	return nil
}

// read is the one reader of stdout. It ends when stdout ends (the child
// exited, or Close closed it), and then ends every wait.
func (p *stdioPipe) read() {
	defer close(p.readerDone)
	defer p.closeDone()
	br := bufio.NewReaderSize(p.stdout, 32<<10)
	for {
		line, over, err := readLine(br, maxStdioLine)
		if err != nil {
			if err != io.EOF && !errors.Is(err, os.ErrClosed) {
				p.log.Debug("stdout read failed", "err", err)
			}
			return
		}
		if over {
			p.tooLong(line)
			continue
		}
		p.handle(line)
	}
}

// readLine returns the next line without its newline, in a buffer of its
// own. A line over max is skipped to its end, and only its head returned,
// with over set.
func readLine(br *bufio.Reader, max int) (line []byte, over bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if len(line) == 0 && err == nil && len(frag) <= max+1 {
			// The whole line in one piece, the common case: one copy.
			return bytes.Clone(frag[:len(frag)-1]), false, nil
		}
		if !over {
			if len(line)+len(frag) > max {
				over = true
				if len(line) < headLen {
					line = append(line, frag[:min(len(frag), headLen-len(line))]...)
				}
			} else {
				line = append(line, frag...)
			}
		}
		switch {
		case err == nil:
			if !over {
				line = line[:len(line)-1]
			}
			return line, over, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) > 0 && !over:
			// A last line without its newline.
			return line, false, nil
		default:
			return nil, false, err
		}
	}
}

// headLen is how much of a line over maxStdioLine is kept to find whose
// response it was.
const headLen = 4 << 10

// handle routes one line: a response to the request waiting for it, a
// notification to the client's handler, a request of the server's to the
// gateway's handler.
func (p *stdioPipe) handle(line []byte) {
	m, ok := jsonrpc.Scan(line)
	if !ok || !json.Valid(line) {
		// As mcp-go: what is not a JSON-RPC message is skipped.
		p.log.Debug("stdout line is not a JSON-RPC message; skipped", "bytes", len(line))
		return
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.HasMethod && !hasID:
		var n mcpgo.JSONRPCNotification
		if json.Unmarshal(line, &n) != nil {
			return
		}
		p.hmu.RLock()
		if p.onNote != nil {
			p.onNote(n)
		}
		p.hmu.RUnlock()
	case m.HasMethod:
		var req transport.JSONRPCRequest
		if json.Unmarshal(line, &req) == nil {
			p.serverRequest(req)
		}
	default:
		p.deliver(m.ID, stdioReply{line: line, msg: m})
	}
}

// deliver hands r to the request with id, or drops it with a log.
func (p *stdioPipe) deliver(id []byte, r stdioReply) {
	ch := p.take(id)
	if ch == nil {
		// A response after its call gave up, or to no request at all.
		p.log.Info("upstream response matches no request in flight; dropped", "id", string(id))
		return
	}
	ch <- r
}

// take withdraws the wait for id and returns its channel, or nil.
func (p *stdioPipe) take(id []byte) chan stdioReply {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.pending[string(id)]
	if !ok && len(id) > 0 {
		// The same id written another way ("tg\u002d1", 1.0): as its value.
		if k, canon := canonicalID(id); canon {
			ch, ok = p.pending[k]
			id = []byte(k)
		}
	}
	if !ok {
		return nil
	}
	delete(p.pending, string(id))
	return ch
}

// canonicalID writes a JSON id the way its request was sent: a string as
// jsonrpc.AppendString does, an integral number as an integer.
func canonicalID(id []byte) (string, bool) {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return string(jsonrpc.AppendString(nil, v)), true
	case float64:
		if v == float64(int64(v)) {
			return strconv.FormatInt(int64(v), 10), true
		}
	}
	return "", false
}

// tooLong handles a line over maxStdioLine: the request its head names, if
// any waits, fails; the line itself is never kept.
func (p *stdioPipe) tooLong(head []byte) {
	id := headID(head)
	p.log.Info("upstream line over the size limit; dropped", "limit", maxStdioLine, "id", string(id))
	if id == nil {
		return
	}
	if ch := p.take(id); ch != nil {
		ch <- stdioReply{err: fmt.Errorf("%w: over %d bytes", errLineTooLong, maxStdioLine)}
	}
}

// headID finds the id of a message from its head, when the id comes
// before the members that make it long (as mcp-go and most servers write
// it) and no method says it is not a response.
func headID(head []byte) []byte {
	m, _ := jsonrpc.Scan(head)
	if m.HasMethod || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil
	}
	return m.ID
}

// serverRequest answers a request of the server's as mcp-go's transport
// does: in a goroutine of its own, under Start's context, an error as an
// internal error; with no handler, method not found.
func (p *stdioPipe) serverRequest(req transport.JSONRPCRequest) {
	p.hmu.RLock()
	h, ctx := p.onRequest, p.ctx
	p.hmu.RUnlock()
	if h == nil {
		p.respond(transport.NewJSONRPCErrorResponse(req.ID, mcpgo.METHOD_NOT_FOUND, "No request handler configured", nil))
		return
	}
	go func() {
		if err := ctx.Err(); err != nil {
			p.respond(transport.NewJSONRPCErrorResponse(req.ID, mcpgo.INTERNAL_ERROR, err.Error(), nil))
			return
		}
		resp, err := h(ctx, req)
		if err != nil {
			resp = transport.NewJSONRPCErrorResponse(req.ID, mcpgo.INTERNAL_ERROR, err.Error(), nil)
		}
		if resp != nil {
			p.respond(resp)
		}
	}()
}

func (p *stdioPipe) respond(resp *transport.JSONRPCResponse) {
	b, err := json.Marshal(resp)
	if err != nil {
		p.log.Info("answer to the upstream's request not encoded", "err", err)
		return
	}
	if err := p.writeLine(append(b, '\n')); err != nil {
		p.log.Debug("answer to the upstream's request not written", "err", err)
	}
}
