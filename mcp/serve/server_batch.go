package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// batchRevision is the one protocol revision with JSON-RPC batches: later
// revisions removed them.
const batchRevision = "2025-03-26"

// serveBatch answers a JSON-RPC batch. On a session negotiated at
// 2025-03-26 each message goes through the endpoint on its own, exactly as
// if it had been posted alone, and the answers come back as one array (a
// batch of notifications and responses only is 202). Anywhere else a batch
// is refused with one JSON-RPC error saying why. mcp-go reads no batches.
func (e *Endpoint) serveBatch(w http.ResponseWriter, r *http.Request, body []byte, session string) {
	var msgs []json.RawMessage
	if err := json.Unmarshal(body, &msgs); err != nil {
		writeRPCError(w, http.StatusBadRequest, mcpgo.PARSE_ERROR, "request body is not valid json")
		return
	}
	protocol := ""
	if session != "" {
		protocol = e.ids.Lookup(session).Protocol
	}
	if protocol != batchRevision {
		why := "this request has no session"
		if protocol != "" {
			why = "the session uses protocol " + protocol
		}
		writeRPCError(w, http.StatusBadRequest, mcpgo.INVALID_REQUEST,
			fmt.Sprintf("JSON-RPC batches are served only on protocol %s; %s: send each message on its own", batchRevision, why))
		return
	}
	if len(msgs) == 0 {
		writeRPCError(w, http.StatusBadRequest, mcpgo.INVALID_REQUEST, "empty batch")
		return
	}
	var answers []json.RawMessage
	for _, m := range msgs {
		var head struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(m, &head)
		if head.Method == string(mcpgo.MethodInitialize) {
			answers = append(answers, jsonrpc.ErrorBody(head.ID, mcpgo.INVALID_REQUEST, "initialize cannot be part of a batch"))
			continue
		}
		one := r.Clone(r.Context())
		one.Body, one.ContentLength = io.NopCloser(bytes.NewReader(m)), int64(len(m))
		rec := &bufferWriter{}
		e.ServeHTTP(rec, one)
		answers = append(answers, batchAnswers(rec)...)
	}
	if len(answers) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out := []byte{'['}
	for i, a := range answers {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, bytes.TrimSpace(a)...)
	}
	writeJSON(w, http.StatusOK, append(out, ']', '\n'))
}

// batchAnswers are the responses one message got: its JSON answer, or the
// responses on its event stream (what else streamed has no place in a
// batch's single JSON answer). An HTTP error becomes a JSON-RPC one.
func batchAnswers(rec *bufferWriter) []json.RawMessage {
	b := bytes.TrimSpace(rec.Bytes())
	if rec.status == http.StatusAccepted || len(b) == 0 {
		return nil
	}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		var out []json.RawMessage
		for _, line := range strings.Split(string(b), "\n") {
			data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: ")
			if !ok {
				continue
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal([]byte(data), &m) == nil && m.Method == "" && len(m.ID) > 0 {
				out = append(out, json.RawMessage(data))
			}
		}
		return out
	}
	if json.Valid(b) {
		return []json.RawMessage{b}
	}
	return []json.RawMessage{jsonrpc.ErrorBody(nil, mcpgo.INTERNAL_ERROR, strings.TrimSpace(string(b)))}
}

func writeRPCError(w http.ResponseWriter, status, code int, message string) {
	writeJSON(w, status, append(jsonrpc.ErrorBody(nil, code, message), '\n'))
}

// bufferWriter is an http.ResponseWriter into a buffer: one message of a
// batch answered as if alone.
type bufferWriter struct {
	bytes.Buffer
	hdr    http.Header
	status int
}

func (b *bufferWriter) Header() http.Header {
	if b.hdr == nil {
		b.hdr = http.Header{}
	}
	return b.hdr
}

func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

// Flush lets a streamed answer be written into the buffer.
func (b *bufferWriter) Flush() {}
