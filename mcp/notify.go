package mcp

import (
	"cmp"
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// serveNotification hands a client's notification on a session to mcp-go
// and answers 202 Accepted, as the Streamable HTTP transport requires.
// While mcp-go serves a POST it forwards whatever is queued for the session
// to that POST's answer, so a notification could be answered 200 with a
// stream of queued list_changed notifications, taken from the GET stream
// they were meant for. Where mcp-go still serves the POST, those are queued
// on the session again, for its GET stream (or its next request's answer),
// and an answer that is not such a stream (an error: a protocol version
// the session did not negotiate) is passed on as mcp-go wrote it.
func (e *Endpoint) serveNotification(w http.ResponseWriter, r *http.Request, session string, body []byte) {
	// On a session that initialize bound, under its own protocol version,
	// the notification goes to mcp-go's handler directly: nothing then
	// reads the session's queue but its GET stream. mcp-go's own forwarder
	// would race the handler for it, and drop what it took once the
	// handler was done.
	if s := e.ids.session(session); s != nil {
		if p := r.Header.Get(mcpgo.HeaderProtocolVersion); p == "" || p == e.ids.protocolOf(session) {
			e.mcp.HandleMessage(e.mcp.WithContext(r.Context(), s), body)
			w.WriteHeader(http.StatusAccepted)
			return
		}
	}
	rec := &bufferWriter{}
	e.library(rec, r, body)
	status := cmp.Or(rec.status, http.StatusOK)
	if mt, _, _ := mime.ParseMediaType(rec.Header().Get("Content-Type")); status != http.StatusOK || mt != "text/event-stream" {
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(status)
		_, _ = w.Write(rec.Bytes())
		return
	}
	for _, line := range strings.Split(rec.String(), "\n") {
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: ")
		if !ok {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params map[string]any  `json:"params"`
		}
		if json.Unmarshal([]byte(data), &m) != nil || m.Method == "" || len(m.ID) > 0 {
			continue // nothing but notifications answers a notification
		}
		_ = e.mcp.SendNotificationToSpecificClient(session, m.Method, m.Params)
	}
	w.WriteHeader(http.StatusAccepted)
}
