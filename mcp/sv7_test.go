package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

// metaRecorder is a JSON-RPC server by hand that records the _meta of every
// tools/call it is sent.
type metaRecorder struct {
	mu    sync.Mutex
	metas []json.RawMessage
}

func (m *metaRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch req.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "meta-session")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"meta","version":"1"}}}`, req.ID)
	case "tools/call":
		m.mu.Lock()
		m.metas = append(m.metas, req.Params.Meta)
		m.mu.Unlock()
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, req.ID)
	default:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)
	}
}

// SV-7: the idempotency key minted for a call goes upstream in the
// tools/call's _meta, so an upstream that deduplicates can; a call
// without one sends none.
func TestIdempotencyKeyUpstreamSV7(t *testing.T) {
	rec := &metaRecorder{}
	ts := startServer(t, rec)
	u := connect(t, UpstreamOptions{Name: "meta", URL: ts.URL, Transport: "http"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := u.CallTool(core.WithCall(ctx, core.Call{IdempotencyKey: "key-1"}), "t", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := u.CallTool(ctx, "t", nil); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.metas) != 2 {
		t.Fatalf("%d calls recorded", len(rec.metas))
	}
	var first map[string]any
	if err := json.Unmarshal(rec.metas[0], &first); err != nil || first[IdempotencyMetaKey] != "key-1" {
		t.Errorf("first call's _meta %s, want %s = key-1", rec.metas[0], IdempotencyMetaKey)
	}
	if len(rec.metas[1]) != 0 {
		t.Errorf("a call without a key sent _meta %s", rec.metas[1])
	}
}
