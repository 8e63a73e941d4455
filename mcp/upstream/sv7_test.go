package upstream

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	u := connect(t, Options{Name: "meta", URL: ts.URL, Transport: "http"})
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

// IM-4: the signature covers a timestamp, so a captured request is
// refused once it is older than the receiver's window; the string to sign
// is exactly t "\n" METHOD "\n" URL "\n" body, as documented.
func TestSignedTimestampIM4(t *testing.T) {
	secret := []byte("signing-secret")
	at := time.Unix(1_800_000_000, 0)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	h := Sign(secret, at, "POST", "https://up.example/mcp", body)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("1800000000\nPOST\nhttps://up.example/mcp\n"))
	m.Write(body)
	if want := "t=1800000000,v1=" + hex.EncodeToString(m.Sum(nil)); h != want {
		t.Fatalf("Sign = %s, want %s", h, want)
	}
	for name, tc := range map[string]struct {
		now  time.Time
		body []byte
		want error
	}{
		"fresh":         {at.Add(30 * time.Second), body, nil},
		"replayed late": {at.Add(6 * time.Minute), body, ErrSignatureStale},
		"from ahead":    {at.Add(-6 * time.Minute), body, ErrSignatureStale},
		"body changed":  {at, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`), ErrSignatureMismatch},
	} {
		if err := VerifySignature(secret, h, "POST", "https://up.example/mcp", tc.body, tc.now, 5*time.Minute); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if err := VerifySignature(secret, "deadbeef", "POST", "https://up.example/mcp", body, at, time.Minute); !errors.Is(err, ErrSignatureMalformed) {
		t.Errorf("the old form without a time: %v, want malformed", err)
	}
}
