package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
)

// Every request to a modern upstream carries the revision's _meta; what
// the request's own _meta had is kept (a progress token, the idempotency
// key of SV-7), the revision's members cannot be forged by it, and the
// arguments go as they were written. Covers IM-2, IM-17.
func TestModernParamsCarryTheRevisionsMeta(t *testing.T) {
	era := newModernEra(ModernProtocolVersion)
	era.http = true
	args := `{"n":12345678901234567890, "s":"a\u00e9"}`
	cases := []struct {
		name   string
		params any
		keep   map[string]string
	}{
		{"none", nil, nil},
		{"null", json.RawMessage(`null`), nil},
		{"value", map[string]string{"cursor": "c1"}, map[string]string{"cursor": `"c1"`}},
		{"call", json.RawMessage(callParamsJSON("echo", json.RawMessage(args), &callMeta{ProgressToken: "tg-progress-1", IdempotencyKey: "k1"})),
			map[string]string{"name": `"echo"`, "arguments": args}},
		{"forged", json.RawMessage(`{"_meta":{"` + mcpgo.MetaKeyProtocolVersion + `":"2025-06-18","x":1}}`), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := era.params(tc.params)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			for k, v := range tc.keep {
				if string(got[k]) != v {
					t.Errorf("%s = %s, want %s", k, got[k], v)
				}
			}
			var meta map[string]json.RawMessage
			if err := json.Unmarshal(got["_meta"], &meta); err != nil {
				t.Fatalf("_meta %s: %v", got["_meta"], err)
			}
			if string(meta[mcpgo.MetaKeyProtocolVersion]) != `"`+ModernProtocolVersion+`"` ||
				string(meta[mcpgo.MetaKeyClientInfo]) != `{"name":"toolgate","version":"0"}` ||
				len(meta[mcpgo.MetaKeyClientCapabilities]) == 0 {
				t.Errorf("_meta = %s", got["_meta"])
			}
			switch tc.name {
			case "call":
				if string(meta["progressToken"]) != `"tg-progress-1"` || string(meta[IdempotencyMetaKey]) != `"k1"` {
					t.Errorf("the call's own _meta was lost: %s", got["_meta"])
				}
			case "forged":
				if string(meta["x"]) != "1" {
					t.Errorf("member x lost: %s", got["_meta"])
				}
			}
			h, err := era.header("tools/call", raw)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "call" && (h.Get(mcpgo.HeaderMethod) != "tools/call" || h.Get(mcpgo.HeaderName) != "echo") {
				t.Errorf("headers = %v", h)
			}
		})
	}
}

// Params that are not an object, or an _meta that is not one, are refused
// before anything is sent. Covers IM-29.
func TestModernParamsRefuseWhatIsNoObject(t *testing.T) {
	era := newModernEra(ModernProtocolVersion)
	for _, p := range []string{`[1]`, `"s"`, `{"_meta":[1]}`, `{"_meta":"x"}`} {
		if _, err := era.params(json.RawMessage(p)); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
	s := &session{modern: era, lost: context.Background()}
	if _, err := s.request(ctxT(t, time.Second), "tools/list", json.RawMessage(`[1]`)); !errors.Is(err, core.ErrNotSent) {
		t.Errorf("request with array params: %v", err)
	}
}

// Only an initialize refused for its revision (or unknown) leads to a
// server/discover probe; a refusal of the client (401, 403) or a server
// error is the connection's answer. Covers IM-2, IM-29.
func TestRefusesLegacy(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{mcpgo.UnsupportedProtocolVersionError{Version: "2025-06-18", Supported: []string{ModernProtocolVersion}}, true},
		{fmt.Errorf("initialize: %w", mcpgo.ErrMethodNotFound), true},
		{answered(400, errors.New("bad")), true},
		{answered(404, errors.New("gone")), true},
		{answered(401, errors.New("who")), false},
		{answered(403, errors.New("no")), false},
		{answered(500, errors.New("boom")), false},
		{mcpgo.ErrInvalidParams, false},
		{errors.New("connection refused"), false},
	}
	for _, tc := range cases {
		if got := refusesLegacy(tc.err); got != tc.want {
			t.Errorf("refusesLegacy(%v) = %v", tc.err, got)
		}
	}
}
