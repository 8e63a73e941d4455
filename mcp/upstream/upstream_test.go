package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/upstreamtest"
)

// helperMains are what the test binary runs instead of the tests when its
// first argument names one; platform files add theirs in init.
var helperMains = map[string]func(){}

func TestMain(m *testing.M) {
	if upstreamtest.Serve() {
		return
	}
	if len(os.Args) > 1 && os.Args[1] == wireServerArg {
		runWireServer()
		return
	}
	if len(os.Args) > 1 && helperMains[os.Args[1]] != nil {
		helperMains[os.Args[1]]()
		return
	}
	os.Exit(m.Run())
}

// The test servers, by their names here.
const (
	stdioServerArg       = upstreamtest.StdioServerArg
	modernStdioServerArg = upstreamtest.ModernStdioServerArg
	rawServerArg         = upstreamtest.RawServerArg
	trickySchema         = upstreamtest.TrickySchema
)

// resultText returns the text of a result's single text block.
func resultText(t *testing.T, r core.Result) string {
	t.Helper()
	var v struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(r.JSON, &v); err != nil || len(v.Content) != 1 || v.Content[0].Type != "text" {
		t.Fatalf("result is not one text block: %s (%v)", r.JSON, err)
	}
	return v.Content[0].Text
}

// leakCheck fails the test if goroutines it started outlive its cleanup.
// It is called first, so its cleanup runs last.
func leakCheck(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestNewUpstreamValidates(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"neither", Options{Name: "a"}, "needs a command or a url"},
		{"both", Options{Name: "a", Command: "x", URL: "http://h"}, "both"},
		{"bad transport", Options{Name: "a", URL: "http://h", Transport: "grpc"}, "unknown transport"},
		{"stdio transport", Options{Name: "a", Command: "x", Transport: "sse"}, "does not apply"},
		{"scheme", Options{Name: "a", URL: "ftp://h"}, "http or https"},
		{"header", Options{Name: "a", URL: "http://h", Headers: map[string]string{"Bad Header": "v"}}, "invalid header"},
		{"secret", Options{Name: "a", URL: "http://h", Signing: &HMACSigning{Header: "X-Sig"}}, "secret is empty"},
		{"sig header", Options{Name: "a", URL: "http://h", Signing: &HMACSigning{Secret: []byte("s")}}, "signing header"},
		{"stderr", Options{Name: "a", Command: "x", StderrLimit: -1}, "negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"a"`) {
				t.Fatalf("err = %v, want one naming the upstream and containing %q", err, c.want)
			}
		})
	}
	for _, o := range []Options{
		{Name: "s", Command: "x"},
		{Name: "h", URL: "https://example.com/mcp", Transport: "http"},
		{Name: "e", URL: "http://127.0.0.1:1/sse", Transport: "sse"},
		{Name: "auto", URL: "http://127.0.0.1:1/mcp"},
	} {
		u, err := New(o)
		if err != nil {
			t.Fatalf("%s: %v", o.Name, err)
		}
		_, isStdio := u.(StderrReporter)
		if isStdio != (o.Command != "") {
			t.Errorf("%s: StderrReporter = %v", o.Name, isStdio)
		}
		if _, ok := u.(core.ToolsChangedNotifier); !ok {
			t.Errorf("%s: not a ToolsChangedNotifier", o.Name)
		}
		// Close before any Connect is fine, twice.
		if err := u.Close(); err != nil {
			t.Errorf("%s: Close: %v", o.Name, err)
		}
		if err := u.Close(); err != nil {
			t.Errorf("%s: second Close: %v", o.Name, err)
		}
		// Calls before Connect fail without sending anything.
		if _, err := u.ListTools(context.Background()); !errors.Is(err, core.ErrNotSent) {
			t.Errorf("%s: ListTools before Connect: %v", o.Name, err)
		}
	}
}

// IM-32: results pass through byte for byte; only the legacy shape changes.
func TestConvertResult(t *testing.T) {
	cases := []struct {
		name, in, want string
		isError        bool
	}{
		{"passthrough", `{"content":[{"type":"text","text":"hi"}], "structuredContent":{"n":12345678901234567890},"_meta":{"k":1}}`,
			`{"content":[{"type":"text","text":"hi"}], "structuredContent":{"n":12345678901234567890},"_meta":{"k":1}}`, false},
		{"isError passthrough", `{"content":[{"type":"text","text":"bad"}],"isError":true}`,
			`{"content":[{"type":"text","text":"bad"}],"isError":true}`, true},
		{"unknown block type kept", `{"content":[{"type":"hologram","data":"x"}]}`, `{"content":[{"type":"hologram","data":"x"}]}`, false},
		{"legacy string", `{"toolResult":"plain text"}`, `{"content":[{"type":"text","text":"plain text"}],"isError":false}`, false},
		{"legacy object", `{"toolResult":{"a": [1, 2]}}`, `{"content":[{"type":"text","text":"{\"a\":[1,2]}"}],"isError":false}`, false},
		{"legacy empty content", `{"content":[],"toolResult":42,"isError":true}`, `{"content":[{"type":"text","text":"42"}],"isError":true}`, true},
		{"legacy null content", `{"content":null,"toolResult":"x"}`, `{"content":[{"type":"text","text":"x"}],"isError":false}`, false},
		{"content wins", `{"content":[{"type":"text","text":"real"}],"toolResult":"legacy"}`,
			`{"content":[{"type":"text","text":"real"}],"toolResult":"legacy"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := convertResult(json.RawMessage(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got.JSON) != c.want || got.IsError != c.isError {
				t.Errorf("got %s isError=%v, want %s isError=%v", got.JSON, got.IsError, c.want, c.isError)
			}
		})
	}
	if _, err := convertResult(json.RawMessage(`[1]`)); err == nil {
		t.Error("a non-object result was accepted")
	}
}

// IM-3: the environment rule.
func TestChildEnv(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_SECRET", "xyz")
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("HOME", "/home/gw")
	minimal := childEnv(nil)
	for _, kv := range minimal {
		k, _, _ := strings.Cut(kv, "=")
		found := false
		for _, m := range minimalEnv {
			found = found || k == m
		}
		if !found {
			t.Errorf("minimal env carries %q", k)
		}
	}
	if !contains(minimal, "PATH=/usr/bin:/bin") || !contains(minimal, "HOME=/home/gw") {
		t.Errorf("minimal env lacks PATH or HOME: %v", minimal)
	}
	merged := childEnv(map[string]string{"A": "1", "HOME": "/override"})
	if !contains(merged, "TOOLGATE_TEST_SECRET=xyz") || !contains(merged, "A=1") || !contains(merged, "HOME=/override") {
		t.Errorf("merged env wrong: %v", merged)
	}
	if contains(merged, "HOME=/home/gw") {
		t.Error("merged env kept the overridden HOME")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestRing(t *testing.T) {
	r := newRing(8)
	r.Write([]byte("abc"))
	r.Write([]byte("defghij"))
	if got := r.String(); got != "cdefghij" {
		t.Errorf("ring = %q", got)
	}
	r.Write([]byte("0123456789"))
	if got := r.String(); got != "23456789" {
		t.Errorf("ring = %q", got)
	}
}

// IM-27/IM-29: the classes the importer's retry rules depend on. The
// end-to-end tests produce each of these from real failures too.
func TestClassifyErr(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	read := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	cases := []struct {
		name    string
		err     error
		is      error
		notSent bool
	}{
		{"stdio closed", fmt.Errorf("w: %w", transport.ErrTransportClosed), io.ErrUnexpectedEOF, false},
		{"session 404", fmt.Errorf("failed to send request: %w", transport.ErrSessionTerminated), core.ErrSessionExpired, false},
		{"dial refused", &url.Error{Op: "Post", URL: "http://h", Err: dial}, core.ErrNotSent, true},
		{"dns", &url.Error{Op: "Post", URL: "http://h", Err: &net.DNSError{Err: "no such host", Name: "h"}}, core.ErrNotSent, true},
		{"reset mid-flight", &url.Error{Op: "Post", URL: "http://h", Err: read}, syscall.ECONNRESET, false},
		{"stream ended early", errors.New("unexpected nil response"), io.ErrUnexpectedEOF, false},
		{"sse wait", errors.New("timeout waiting for SSE response after 1s"), context.DeadlineExceeded, false},
	}
	for _, c := range cases {
		got := classifyErr(c.err)
		if !errors.Is(got, c.is) || !core.Transient(got) || errors.Is(got, core.ErrNotSent) != c.notSent {
			t.Errorf("%s: %v (notSent=%v)", c.name, got, errors.Is(got, core.ErrNotSent))
		}
	}
	if got := classifyErr(errors.New("session terminated (404). need to re-initialize")); errors.Is(got, core.ErrSessionExpired) {
		t.Error("a look-alike string matched instead of the sentinel")
	}
}
