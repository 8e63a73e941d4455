package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// mcpClient is one MCP session over Streamable HTTP, as much of a client
// as the bench needs: initialize, raw POSTs with the session's headers, a
// result read from a JSON or SSE answer, DELETE. The tests' fuller client
// (internal/mcptest) is test tooling and stays out of the installed binary
// (docs/architecture.md); this one is part of `toolgate bench`.
type mcpClient struct {
	url, auth string
	hc        *http.Client
	nextID    atomic.Int64
	// id and proto are set once, by initialize, before any concurrent use.
	id, proto string
}

// maxAnswer bounds how much of an answer the bench reads.
const maxAnswer = 16 << 20

var errNoResponse = errors.New("no JSON-RPC response in the answer")

func newMCPClient(url string, hc *http.Client, key string) *mcpClient {
	c := &mcpClient{url: url, hc: hc, proto: benchProtocol}
	if key != "" {
		c.auth = "Bearer " + key
	}
	return c
}

// Session is the session id the server minted; "" for a stateless server.
func (c *mcpClient) Session() string { return c.id }

// NextID is a request id not used yet by this client.
func (c *mcpClient) NextID() int64 { return c.nextID.Add(1) }

// mcpAnswer is one answer, read whole.
type mcpAnswer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *mcpAnswer) isStream() bool {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(ct), "text/event-stream")
}

// Decode decodes the answer's JSON-RPC response into v: the body when it
// is JSON, else the first response among the stream's events.
func (r *mcpAnswer) Decode(v any) error {
	if !r.isStream() {
		if len(bytes.TrimSpace(r.Body)) == 0 {
			return errNoResponse
		}
		return json.Unmarshal(r.Body, v)
	}
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	sc.Buffer(nil, maxAnswer)
	var data []byte
	flush := func() (bool, error) {
		if len(data) == 0 {
			return false, nil
		}
		var m struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		err := json.Unmarshal(data, &m)
		if err == nil && m.Method == "" && (m.Result != nil || m.Error != nil) {
			return true, json.Unmarshal(data, v)
		}
		data = data[:0]
		return false, nil
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if done, err := flush(); done {
				return err
			}
			continue
		}
		if value, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(value, []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errNoResponse
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Result is the answer's result, or its JSON-RPC error.
func (r *mcpAnswer) Result() (json.RawMessage, *rpcError, error) {
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := r.Decode(&m); err != nil {
		return nil, nil, err
	}
	if m.Error != nil {
		return nil, m.Error, nil
	}
	if m.Result == nil {
		return nil, nil, errNoResponse
	}
	return m.Result, nil, nil
}

func (c *mcpClient) do(ctx context.Context, method string, body []byte) (mcpAnswer, error) {
	return c.doWith(ctx, method, body, nil)
}

func (c *mcpClient) doWith(ctx context.Context, method string, body []byte, extra http.Header) (mcpAnswer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, rd)
	if err != nil {
		return mcpAnswer{}, err
	}
	h := req.Header
	if method == http.MethodPost {
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
	}
	if c.auth != "" {
		h.Set("Authorization", c.auth)
	}
	if c.id != "" {
		h.Set("Mcp-Session-Id", c.id)
		h.Set("Mcp-Protocol-Version", c.proto)
	}
	for k, v := range extra {
		h[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return mcpAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := readAnswer(resp.Body)
	if err != nil {
		return mcpAnswer{}, fmt.Errorf("%s %s: reading the answer: %w", method, c.url, err)
	}
	return mcpAnswer{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// readAnswer is io.ReadAll stopping at maxAnswer, without the allocation
// an io.LimitReader would add to every call of the measured loop.
func readAnswer(r io.Reader) ([]byte, error) {
	b := make([]byte, 0, 512)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > maxAnswer {
			return nil, fmt.Errorf("answer larger than %d bytes", maxAnswer)
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// Post sends body as it is on the session and reads the whole answer,
// with header's values added (nil adds none).
func (c *mcpClient) Post(ctx context.Context, body []byte, header http.Header) (mcpAnswer, error) {
	return c.doWith(ctx, http.MethodPost, body, header)
}

// Delete ends the session.
func (c *mcpClient) Delete(ctx context.Context) (mcpAnswer, error) {
	return c.do(ctx, http.MethodDelete, nil)
}

// initialize opens the session: initialize, then notifications/initialized
// on the minted id (none from a stateless server) and negotiated version.
func (c *mcpClient) initialize(ctx context.Context) error {
	body := []byte(`{"jsonrpc":"2.0","id":` + fmt.Sprint(c.NextID()) + `,"method":"initialize","params":{"protocolVersion":"` +
		benchProtocol + `","capabilities":{},"clientInfo":{"name":"toolgate-bench","version":"1"}}}`)
	resp, err := c.do(ctx, http.MethodPost, body)
	if err != nil {
		return err
	}
	if resp.Status != http.StatusOK {
		return fmt.Errorf("initialize: HTTP %d: %.200s", resp.Status, resp.Body)
	}
	result, rpcErr, err := resp.Result()
	if err != nil {
		return fmt.Errorf("initialize: %w: %.200s", err, resp.Body)
	}
	if rpcErr != nil {
		return fmt.Errorf("initialize: JSON-RPC error %d: %s", rpcErr.Code, rpcErr.Message)
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(result, &ir) != nil || ir.ProtocolVersion == "" {
		return fmt.Errorf("initialize: a result without a protocol version: %.200s", result)
	}
	c.id, c.proto = resp.Header.Get("Mcp-Session-Id"), ir.ProtocolVersion
	resp, err = c.do(ctx, http.MethodPost, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return err
	}
	// 202; mcp-go may instead answer 200 with queued notifications.
	if resp.Status != http.StatusAccepted && (resp.Status != http.StatusOK || !resp.isStream()) {
		return fmt.Errorf("notifications/initialized: HTTP %d: %.200s", resp.Status, resp.Body)
	}
	return nil
}

// toolResult is what the soak reads of a tools/call result.
type toolResult struct {
	IsError bool `json:"isError"`
}

// CallTool calls tool name with args on the session.
func (c *mcpClient) CallTool(ctx context.Context, name string, args any) (*toolResult, *rpcError, error) {
	params, err := json.Marshal(struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}{name, args})
	if err != nil {
		return nil, nil, err
	}
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, c.NextID(), params)
	resp, err := c.Post(ctx, body, nil)
	if err != nil {
		return nil, nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, nil, fmt.Errorf("tools/call: HTTP %d: %.200s", resp.Status, resp.Body)
	}
	result, rpcErr, err := resp.Result()
	if err != nil || rpcErr != nil {
		return nil, rpcErr, err
	}
	var r toolResult
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, nil, err
	}
	return &r, nil, nil
}
