package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/mcptest"
)

// wireRequest is one HTTP request as a client sends it.
type wireRequest struct {
	name   string
	method string
	body   string
	header map[string]string
}

const testModernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// modernHeaders are a 2026-07-28 request's headers for method.
func modernHeaders(method string) map[string]string {
	return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
}

// sessionlessRequests are requests of every kind that no legacy session of
// the endpoint's answers: a stateless endpoint's, and a 2026-07-28 client's
// (stateless true adds the stateless endpoint's own).
func sessionlessRequests(stateless bool) []wireRequest {
	modern := []wireRequest{
		{"discover", "POST", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + testModernMeta + `}}`, modernHeaders("server/discover")},
		{"modern ping", "POST", `{"jsonrpc":"2.0","id":"p","method":"ping","params":{` + testModernMeta + `}}`, modernHeaders("ping")},
		{"modern setLevel, not of the era", "POST", `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info",` + testModernMeta + `}}`, modernHeaders("logging/setLevel")},
		{"modern unknown method", "POST", `{"jsonrpc":"2.0","id":3,"method":"no/such","params":{` + testModernMeta + `}}`, modernHeaders("no/such")},
		{"modern prompts/list", "POST", `{"jsonrpc":"2.0","id":4,"method":"prompts/list","params":{` + testModernMeta + `}}`, modernHeaders("prompts/list")},
		{"modern notification", "POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,` + testModernMeta + `}}`, modernHeaders("notifications/cancelled")},
		{"modern notification without _meta", "POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, modernHeaders("notifications/cancelled")},
		{"modern notification of another version", "POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`, modernHeaders("notifications/cancelled")},
		{"modern notification with Last-Event-ID", "POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,` + testModernMeta + `}}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Last-Event-ID": "4"}},
		{"modern response", "POST", `{"jsonrpc":"2.0","id":7,"result":{"a":1}}`, modernHeaders("")},
		{"modern ping response", "POST", `{"jsonrpc":"2.0","id":7,"result":{}}`, modernHeaders("")},
		{"modern GET", "GET", "", modernHeaders("")},
		{"modern DELETE", "DELETE", "", modernHeaders("")},
		{"modern HEAD", "HEAD", "", modernHeaders("")},
		{"modern PUT", "PUT", "", modernHeaders("")},
		{"modern wrong content type", "POST", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + testModernMeta + `}}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover", "Content-Type": "text/plain"}},
	}
	if !stateless {
		return modern
	}
	v := map[string]string{"Mcp-Protocol-Version": "2025-06-18"}
	withID := map[string]string{"Mcp-Protocol-Version": "2025-06-18", "Mcp-Session-Id": "abc"}
	legacy := []wireRequest{
		{"initialize", "POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, nil},
		{"failed initialize", "POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":"x"}`, nil},
		{"ping", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, v},
		{"ping of an unknown version", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}},
		{"setLevel on no session", "POST", `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`, withID},
		{"resources/list", "POST", `{"jsonrpc":"2.0","id":3,"method":"resources/list"}`, v},
		{"unknown method", "POST", `{"jsonrpc":"2.0","id":4,"method":"no/such"}`, v},
		{"notification", "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, v},
		{"no JSON-RPC version", "POST", `{"id":5,"method":"ping"}`, v},
		{"not JSON", "POST", `{"jsonrpc":`, v},
		{"not an object", "POST", `"ping"`, v},
		{"a method that is no string", "POST", `{"jsonrpc":"2.0","id":1,"method":7}`, v},
		{"empty object", "POST", `{}`, v},
		{"an id alone", "POST", `{"id":1}`, v},
		{"ping response", "POST", `{"jsonrpc":"2.0","id":1,"result":{}}`, v},
		{"response without a session", "POST", `{"jsonrpc":"2.0","id":5,"result":{"x":1}}`, v},
		{"response on no stream", "POST", `{"jsonrpc":"2.0","id":5,"result":{"x":1}}`, withID},
		{"response of a string id", "POST", `{"jsonrpc":"2.0","id":"s","error":{"code":1,"message":"m"}}`, withID},
		{"response of an unknown version", "POST", `{"jsonrpc":"2.0","id":5,"result":{"x":1}}`, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}},
		{"modern _meta without the header", "POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,` + testModernMeta + `}}`, nil},
		{"wrong content type", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Content-Type": "text/plain"}},
		{"DELETE", "DELETE", "", withID},
		{"DELETE of an unknown version", "DELETE", "", map[string]string{"Mcp-Protocol-Version": "1999-01-01"}},
		{"GET of an unknown version", "GET", "", map[string]string{"Mcp-Protocol-Version": "1999-01-01"}},
		{"HEAD", "HEAD", "", nil},
		{"PUT", "PUT", "", nil},
	}
	return append(legacy, modern...)
}

// wireAnswer is what a client reads of an answer: the status, the headers
// that say what it is, and the body.
type wireAnswer struct {
	status                               int
	contentType, allow, session, nosniff string
	body                                 string
}

func send(t *testing.T, url string, req wireRequest) wireAnswer {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), req.method, url, strings.NewReader(req.body))
	if err != nil {
		t.Fatal(err)
	}
	if req.method == "POST" {
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
	}
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("%s: %v", req.name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return wireAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Allow"), resp.Header.Get("Mcp-Session-Id"),
		resp.Header.Get("X-Content-Type-Options"), string(bytes.TrimSpace(body))}
}

// SV-1, SV-2: the endpoint answers every request of no legacy session — a
// stateless endpoint's, a 2026-07-28 client's — from its method table, as
// mcp-go's Streamable HTTP transport answered it over the same MCPServer:
// the same status, headers and body, for every kind of request and of
// refusal.
func TestSessionlessAnswersAsTheTransportDidSV1(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		e, url := legacyEndpoint(t, EndpointOptions{Stateless: stateless})
		ref := httptest.NewServer(server.NewStreamableHTTPServer(e.mcp, server.WithEndpointPath("/mcp"), server.WithStateLess(stateless)))
		t.Cleanup(ref.Close)
		for _, req := range sessionlessRequests(stateless) {
			got, want := send(t, url, req), send(t, ref.URL+"/mcp", req)
			if got != want {
				t.Errorf("stateless=%v, %s:\n got %+v\nwant %+v", stateless, req.name, got, want)
			}
		}
	}
}

// tableCatalog is an empty catalog that routes: every method of the
// catalog is offered.
type tableCatalog struct{ subscriptionRouter }

func (*tableCatalog) Catalog() core.Catalog { return core.Catalog{} }

func (*tableCatalog) ReadResource(context.Context, string) (json.RawMessage, error) {
	return nil, errors.New("no such resource")
}

func (*tableCatalog) GetPrompt(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("no such prompt")
}

// SV-1: every method the table lists is served in the eras it says, where
// the endpoint offers what it needs, by the gateway or HandleMessage — and
// not otherwise: there it gets the protocol's method-not-found, as a method
// no table lists.
func TestMethodTableErasSV1(t *testing.T) {
	endpoints := []struct {
		name    string
		opts    EndpointOptions
		offered func(offer) bool
	}{
		{"bare", EndpointOptions{}, func(o offer) bool { return o == always }},
		{"catalog", EndpointOptions{Catalog: &tableCatalog{}, Hub: NewHub()}, func(offer) bool { return true }},
		{"stateless catalog", EndpointOptions{Catalog: &tableCatalog{}, Hub: NewHub(), Stateless: true}, func(o offer) bool { return o != subscriptions }},
	}
	for _, ep := range endpoints {
		_, url := legacyEndpoint(t, ep.opts)
		legacy := mcptest.New(url, nil)
		if !ep.opts.Stateless {
			openTestSession(t, legacy)
		}
		for name, m := range methods {
			if strings.HasPrefix(name, "notifications/") || m.opens || m.streams {
				continue // answered with nothing, or opening a session or a stream
			}
			for _, modern := range []bool{false, true} {
				var answer []byte
				if modern {
					// Mcp-Name names what tools/call, prompts/get and
					// resources/read are of.
					h := modernHeaders(name)
					h["Mcp-Name"] = "x"
					answer = []byte(send(t, url, wireRequest{name: name, method: "POST", header: h,
						body: `{"jsonrpc":"2.0","id":1,"method":"` + name + `","params":{"name":"x","uri":"x",` + testModernMeta + `}}`}).body)
				} else {
					resp, err := legacy.Post(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"`+name+`","params":{}}`), nil)
					if err != nil {
						t.Fatal(err)
					}
					answer = resp.Body
				}
				notFound := bytes.Contains(answer, []byte(`"code":-32601`))
				if served := (modern && m.modern || !modern && m.legacy) && ep.offered(m.needs); served == notFound {
					t.Errorf("%s endpoint, %s (modern=%v): the table says served=%v; answered %s", ep.name, name, modern, served, answer)
				}
			}
		}
	}
}

// SV-1, SV-2: a subscriptions/listen stream is acknowledged, gets the
// broadcasts of the kinds it asked for, tagged with its id, and no other;
// one that asked for nothing is acknowledged and answered at once.
func TestListenStreamsSV1(t *testing.T) {
	e, url := legacyEndpoint(t, EndpointOptions{})
	listen := func(ctx context.Context, filter string) *bufio.Reader {
		req := wireRequest{name: "listen", method: "POST", header: modernHeaders(string(mcpgo.MethodSubscriptionsListen)),
			body: `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":` + filter + `,` + testModernMeta + `}}`}
		r, _ := http.NewRequestWithContext(ctx, req.method, url, strings.NewReader(req.body))
		r.Header.Set("Content-Type", "application/json")
		for k, v := range req.header {
			r.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		return bufio.NewReader(resp.Body)
	}
	next := func(events *bufio.Reader) string {
		t.Helper()
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream ended: %v", err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				return strings.TrimSpace(data)
			}
		}
	}
	// Bounded: a broadcast that never comes ends the stream, not the run.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	events := listen(ctx, `{"toolsListChanged":true,"promptsListChanged":true}`)
	if ack := next(events); !strings.Contains(ack, `"notifications/subscriptions/acknowledged"`) || !strings.Contains(ack, `"toolsListChanged":true`) ||
		strings.Contains(ack, "promptsListChanged") || !strings.Contains(ack, `"io.modelcontextprotocol/subscriptionId":"l1"`) {
		t.Fatalf("first event %s, want the acknowledgement of tools list changes alone (the endpoint offers no prompts)", ack)
	}
	// Not asked for (not offered), then asked for: only the second comes.
	e.mcp.SendNotificationToAllClients(mcpgo.MethodNotificationPromptsListChanged, nil)
	e.ToolsChanged()
	if got := next(events); !strings.Contains(got, `"method":"notifications/tools/list_changed"`) || !strings.Contains(got, `"io.modelcontextprotocol/subscriptionId":"l1"`) {
		t.Fatalf("after two broadcasts: %s, want the tools list change, tagged", got)
	}
	cancel()

	events = listen(t.Context(), `{}`)
	ack, result := next(events), next(events)
	if !strings.Contains(ack, `"notifications/subscriptions/acknowledged"`) || !strings.Contains(result, `"id":"l1","result"`) {
		t.Fatalf("a listen asking for nothing: %s then %s, want the acknowledgement then the result", ack, result)
	}
}
