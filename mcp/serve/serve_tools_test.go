package serve_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/serve"
)

// modernMetaJSON is the _meta a 2026-07-28 request carries.
const modernMetaJSON = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// sendModern sends a 2026-07-28 request of method (named name, for
// tools/call) with params, which must end with the _meta above, and the
// extra headers; it returns the status and the body.
func sendModern(t *testing.T, url, method, name, params string, extra http.Header) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"m-1","method":"` + method + `","params":` + params + `}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-Actor", "alice")
	req.Header.Set("X-Test-Roles", "MEMBER")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(b))
}

// SV-1, SV-4: tools/list has one implementation for every era and session
// mode: a legacy session, a stateless endpoint and a 2026-07-28 client see
// the same tools, filtered for the actor (not admin_only, which needs a
// role; not the action gh_delete, with no confirm gate), in name order, and a cursor (the
// base64 of the last name seen, as mcp-go's pages hand out) starts after
// it on each. A cursor that is not base64 is refused, with nothing listed.
func TestToolsListOneImplementationEveryMode(t *testing.T) {
	stateful := serveEndpoint(t, serve.EndpointOptions{})
	stateless := serveEndpoint(t, serve.EndpointOptions{Stateless: true})

	names := func(raw []byte) []string {
		var out struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				ResultType string `json:"resultType"`
			} `json:"result"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if out.Error != nil {
			return []string{fmt.Sprintf("error %d", out.Error.Code)}
		}
		var n []string
		for _, tl := range out.Result.Tools {
			n = append(n, tl.Name)
		}
		return n
	}
	session := testClient(stateful.url, "alice", "MEMBER")
	initialize(t, session)
	list := map[string]func(params string) []byte{
		"session": func(params string) []byte {
			return post(t, session, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`+params+`}`).Body
		},
		"stateless": func(params string) []byte {
			c := testClient(stateless.url, "alice", "MEMBER")
			resp, err := c.Post(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`+params+`}`), http.Header{"Mcp-Protocol-Version": {"2025-06-18"}})
			if err != nil {
				t.Fatal(err)
			}
			return resp.Body
		},
		"2026-07-28": func(params string) []byte {
			p := strings.TrimSuffix(params, "}")
			if p != "{" {
				p += ","
			}
			_, b := sendModern(t, stateful.url, "tools/list", "", p+modernMetaJSON+"}", nil)
			return []byte(b)
		},
	}
	after := base64.StdEncoding.EncodeToString([]byte("boom"))
	for mode, get := range list {
		// The stateless endpoint learns of the tools from the bus.
		waittest.Succeeds(t, 10*time.Second, mode+" to list the tools", func() error {
			if got := strings.Join(names(get(`{}`)), ","); got != "boom,gh_search" {
				return &listError{mode, got}
			}
			return nil
		})
		if got := strings.Join(names(get(`{"cursor":"`+after+`"}`)), ","); got != "gh_search" {
			t.Errorf("%s: after %q listed %s", mode, "boom", got)
		}
		raw := get(`{"cursor":"%%% not base64"}`)
		if !strings.Contains(string(raw), `"code":-32602`) || strings.Contains(string(raw), `"tools"`) {
			t.Errorf("%s: a cursor that is not base64 answered %s", mode, raw)
		}
	}
}

type listError struct{ mode, got string }

func (e *listError) Error() string { return e.mode + " listed " + e.got }

// SV-1 on revision 2026-07-28: arguments a tool binds to headers
// (x-mcp-header) travel twice, and the gateway checks the two agree before
// anything runs: the same value runs the call, another value or a missing
// header is -32020 (HTTP 400) naming the header, and the tool is not
// called.
func TestModernParamHeadersChecked(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	ran := make(chan json.RawMessage, 4)
	if err := s.reg.Register(core.Tool{Name: "regional", Kind: core.KindRead, Description: "Bound to a header.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`),
		Handler: func(_ context.Context, args json.RawMessage) (core.Result, error) {
			ran <- args
			return core.TextResult("ran in " + string(args)), nil
		}}); err != nil {
		t.Fatal(err)
	}
	call := func(region string, header http.Header) (int, string) {
		return sendModern(t, s.url, "tools/call", "regional", `{"name":"regional","arguments":{"region":"`+region+`"},`+modernMetaJSON+`}`, header)
	}
	code, body := call("eu", http.Header{"Mcp-Param-Region": {"eu"}})
	if code != http.StatusOK || !strings.Contains(body, `ran in {\"region\":\"eu\"}`) {
		t.Fatalf("agreeing header: HTTP %d %s", code, body)
	}
	<-ran
	for name, header := range map[string]http.Header{
		"another value":  {"Mcp-Param-Region": {"us"}},
		"missing header": nil,
	} {
		code, body := call("eu", header)
		if code != http.StatusBadRequest || !strings.Contains(body, `"code":-32020`) || !strings.Contains(body, "Region") {
			t.Errorf("%s: HTTP %d %s, want -32020 naming the header", name, code, body)
		}
	}
	select {
	case args := <-ran:
		t.Fatalf("a call whose headers disagree ran with %s", args)
	default:
	}
}

// SV-1, QB-3: a tools/call whose params cannot be read (not an object, a
// name that is no string) is refused with -32602 on every mode, and
// nothing runs.
func TestToolsCallUnreadableParams(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	c := testClient(s.url, "alice", "MEMBER")
	initialize(t, c)
	for _, params := range []string{`[1,2]`, `"gh_search"`, `{"name":7,"arguments":{"q":"x"}}`} {
		resp := post(t, c, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":`+params+`}`)
		if !strings.Contains(string(resp.Body), `"code":-32602`) {
			t.Errorf("session, params %s: HTTP %d %s", params, resp.Status, resp.Body)
		}
	}
	code, body := sendModern(t, s.url, "tools/call", "gh_search", `{"name":7,"arguments":{"q":"x"},`+modernMetaJSON+`}`, nil)
	// Its Mcp-Name header cannot agree with a name that is no string:
	// either refusal will do, as long as nothing runs.
	if code != http.StatusBadRequest || !strings.Contains(body, `"code":-32602`) && !strings.Contains(body, `"code":-32020`) {
		t.Errorf("2026-07-28: HTTP %d %s", code, body)
	}
	select {
	case call := <-s.calls:
		t.Fatalf("a call with unreadable params ran: %+v", call)
	default:
	}
}

// postRaw posts body as it is with the headers given (plus the test actor
// and the JSON content type) and returns the status and the body.
func postRaw(t *testing.T, url, body string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"X-Test-Actor": {"alice"}, "X-Test-Roles": {"MEMBER"}}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// SV-1: a request whose id is null is no request MCP allows: it is read as
// a notification, as mcp-go reads it, and runs nothing, on a session and
// on revision 2026-07-28 alike.
func TestNullIDRunsNothing(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	c := testClient(s.url, "alice", "MEMBER")
	initialize(t, c)
	resp := post(t, c, `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"gh_search","arguments":{"q":"x"}}}`)
	if resp.Status != http.StatusAccepted {
		t.Errorf("session: HTTP %d %s, want 202 and nothing run", resp.Status, resp.Body)
	}
	code, body := postRaw(t, s.url, `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"gh_search","arguments":{"q":"x"},`+modernMetaJSON+`}}`,
		http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"gh_search"}})
	if code == http.StatusOK && strings.Contains(body, `"result"`) {
		t.Errorf("2026-07-28: HTTP %d %s, want no result", code, body)
	}
	// A call that does run proves the channel is read: nothing came
	// before it.
	if _, body := sendModern(t, s.url, "tools/call", "gh_search", `{"name":"gh_search","arguments":{"q":"ran"},`+modernMetaJSON+`}`, nil); !strings.Contains(body, "ran") {
		t.Fatalf("a real call: %s", body)
	}
	if call := <-s.calls; call.RequestID != "m-1" {
		t.Errorf("a tools/call with id null ran: request id %q", call.RequestID)
	}
}

// SV-1: a 2026-07-28 request whose member names encoding/json folds
// ("Params") is read as encoding/json reads it: its listing has the tools.
func TestModernFoldedMembersRead(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	code, body := postRaw(t, s.url, `{"jsonrpc":"2.0","id":"m-1","method":"tools/list","Params":{`+modernMetaJSON+`}}`,
		http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/list"}})
	if code != http.StatusOK || !strings.Contains(body, `"gh_search"`) {
		t.Errorf("folded 2026-07-28 tools/list: HTTP %d %s", code, body)
	}
}

// SV-2: a stateless endpoint's GET streams are capped per Mcp-Session-Id,
// as a stateful one's are; a closed stream frees its place.
func TestStatelessGetStreamsCapped(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{Stateless: true, MaxStreamsPerSession: 1})
	get := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url, nil)
		req.Header = http.Header{"Accept": {"text/event-stream"}, "X-Test-Actor": {"alice"}, "X-Test-Roles": {"MEMBER"}, "Mcp-Session-Id": {"same"}}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	first := get()
	if second := get(); first.StatusCode != http.StatusOK || second.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("two GET streams of one id: HTTP %d then %d", first.StatusCode, second.StatusCode)
	}
	_ = first.Body.Close()
	waittest.Succeeds(t, 5*time.Second, "the closed stream's place to be free", func() error {
		resp := get()
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	})
}

// SV-1: a tool handler that panics fails its call with -32603 on every
// mode, without what it panicked with, and the endpoint goes on serving.
func TestPanickingToolAnswered(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		s := serveEndpoint(t, serve.EndpointOptions{Stateless: stateless})
		if err := s.reg.Register(core.Tool{Name: "panicky", Kind: core.KindRead, Description: "Panics.",
			Handler: func(context.Context, json.RawMessage) (core.Result, error) { panic("secret-ish detail") }}); err != nil {
			t.Fatal(err)
		}
		c := testClient(s.url, "alice", "MEMBER")
		header := http.Header{"Mcp-Protocol-Version": {"2025-06-18"}}
		if !stateless {
			initialize(t, c)
			header = nil
		}
		var resp mcptest.Response
		waittest.Succeeds(t, 5*time.Second, "the tool to be served", func() error {
			var err error
			resp, err = c.Post(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"panicky","arguments":{}}}`), header)
			if err != nil {
				return err
			}
			if strings.Contains(string(resp.Body), "unknown tool") {
				return fmt.Errorf("not yet served: %s", resp.Body)
			}
			return nil
		})
		if !strings.Contains(string(resp.Body), `"code":-32603`) || strings.Contains(string(resp.Body), "secret-ish") {
			t.Errorf("stateless=%v: HTTP %d %s", stateless, resp.Status, resp.Body)
		}
		if _, err := c.Post(t.Context(), []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gh_search","arguments":{"q":"after"}}}`), header); err != nil {
			t.Errorf("stateless=%v: the next call: %v", stateless, err)
		}
	}
}
