package upstream

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// wireServerArg, as the first argument, makes the test binary a stdio MCP
// server written line by line, for what a library server never sends:
// stray ids, oversized lines, a death with calls in flight.
const wireServerArg = "toolgate-test-stdio-wire"

// wireHugeBytes is the size of the "huge" tool's result text.
const wireHugeBytes = 256 << 10

func runWireServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	send := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		out.WriteString(line + "\n")
		out.Flush()
	}
	reply := func(id json.RawMessage, result string) {
		send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
	}
	text := func(s string) string {
		b, _ := json.Marshal(s)
		return `{"content":[{"type":"text","text":` + string(b) + `}]}`
	}
	hung := 0 // calls of hang read
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue
		}
		switch m.Method {
		case "initialize":
			reply(m.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"wire-test","version":"1"}}`)
		case "tools/list":
			reply(m.ID, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			switch m.Params.Name {
			case "stray":
				// An answer to no request, then the real one, its id
				// written with an escape.
				reply(json.RawMessage(`"nobody-1"`), text("stray"))
				id := strings.Replace(string(m.ID), "-", `\u002d`, 1)
				reply(json.RawMessage(id), text("after stray"))
			case "huge":
				reply(m.ID, text(strings.Repeat("x", wireHugeBytes)))
			case "hang":
				// Never answered; counted, for hung to tell.
				hung++
			case "hung":
				reply(m.ID, text(strconv.Itoa(hung)))
			case "die":
				os.Exit(3)
			default:
				reply(m.ID, text(m.Params.Name))
			}
		default:
			send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"no"}}`)
		}
	}
}

func connectWire(t *testing.T, log *slog.Logger) core.Upstream {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	u, err := New(Options{Name: "wire", Command: exe, Args: []string{wireServerArg}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	if _, err := u.Connect(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("Connect: %v (stderr: %s)", err, u.(StderrReporter).Stderr())
	}
	return u
}

// IM-2: a response whose id matches no request is dropped with a log, and does
// not stand in for the call's own; an id written with an escape is still
// its request's.
func TestStdioPipeStrayResponseDropped(t *testing.T) {
	leakCheck(t)
	var logs syncBuffer
	u := connectWire(t, slog.New(slog.NewTextHandler(&logs, nil)))
	if got := call(t, u, "stray", `{}`); got != "after stray" {
		t.Errorf("stray = %q, want the call's own answer", got)
	}
	if out := logs.String(); !strings.Contains(out, "matches no request") || !strings.Contains(out, `nobody-1`) {
		t.Errorf("no log of the dropped response:\n%s", out)
	}
	if got := call(t, u, "next", `{}`); got != "next" {
		t.Errorf("next = %q", got)
	}
}

// IM-2: a line over the bound is not kept: the call it answers fails at once
// with a clear error, and the connection goes on serving.
func TestStdioPipeOversizedLineBounded(t *testing.T) {
	leakCheck(t)
	old := maxStdioLine
	maxStdioLine = 64 << 10
	t.Cleanup(func() { maxStdioLine = old })
	var logs syncBuffer
	u := connectWire(t, slog.New(slog.NewTextHandler(&logs, nil)))
	start := time.Now()
	_, err := u.CallTool(ctxT(t, 10*time.Second), "huge", nil)
	if !errors.Is(err, errLineTooLong) {
		t.Fatalf("huge: %v, want errLineTooLong", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("huge failed after %v: it waited instead of failing", d)
	}
	if !strings.Contains(logs.String(), "over the size limit") {
		t.Errorf("no log of the dropped line:\n%s", logs.String())
	}
	if got := call(t, u, "after", `{}`); got != "after" {
		t.Errorf("after the long line = %q", got)
	}
}

// IM-27: a child that dies with calls in flight fails every one of them
// as a lost answer (transient, not ErrNotSent), and the upstream connects
// again.
func TestStdioPipeDeathWithCallsInFlightIM27(t *testing.T) {
	leakCheck(t)
	u := connectWire(t, nil)
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := u.CallTool(ctxT(t, 10*time.Second), "hang", nil)
			errs <- err
		}()
	}
	// The child has read every hanging call before it dies.
	waittest.Eventually(t, 10*time.Second, "the child to read the hanging calls", func() bool {
		return call(t, u, "hung", `{}`) == strconv.Itoa(n)
	})
	if _, err := u.CallTool(ctxT(t, 10*time.Second), "die", nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("die: %v", err)
	}
	for range n {
		err := <-errs
		if !core.Transient(err) || errors.Is(err, core.ErrNotSent) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("call in flight: %v: Transient=%v NotSent=%v", err, core.Transient(err), errors.Is(err, core.ErrNotSent))
		}
	}
	if _, err := u.Connect(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if got := call(t, u, "again", `{}`); got != "again" {
		t.Errorf("after reconnect = %q", got)
	}
}

// IM-2: the stdio reader's one scan of a line finds the id, method and
// result members as the JSON-RPC message holds them.
func TestScanMessage(t *testing.T) {
	type got struct {
		ID, Result, Err string
		Method, OK      bool
	}
	for _, tc := range []struct {
		line string
		want got
	}{
		{`{"jsonrpc":"2.0","id":"tg-1","result":{"content":[{"type":"text","text":"a}\"]"}]}}`,
			got{ID: `"tg-1"`, Result: `{"content":[{"type":"text","text":"a}\"]"}]}`, OK: true}},
		{` { "id" : 7 , "error" : {"code":-1,"message":"m"} } `, got{ID: `7`, Err: `{"code":-1,"message":"m"}`, OK: true}},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":"inner"}}`, got{Method: true, OK: true}},
		{`{"id":"srv-1","method":"sampling/createMessage","params":{}}`, got{ID: `"srv-1"`, Method: true, OK: true}},
		{`{"method":"","id":null,"result":null}`, got{ID: `null`, Result: `null`, OK: true}},
		{`{"\u0069d":"esc","id":"last"}`, got{ID: `"last"`, OK: true}},
		{`{"\u0069d":"esc"}`, got{ID: `"esc"`, OK: true}},
		{`{"result":[1,{"id":2}],"id":3}`, got{ID: `3`, Result: `[1,{"id":2}]`, OK: true}},
		{`[1,2]`, got{}},
		{`not json`, got{}},
		{`{"jsonrpc":"2.0","id":"tg-9","result":{"content":[{"te`, got{ID: `"tg-9"`}},
	} {
		m, ok := jsonrpc.Scan([]byte(tc.line))
		g := got{ID: string(m.ID), Result: string(m.Result), Err: string(m.Err), Method: m.HasMethod, OK: ok}
		if d := cmp.Diff(tc.want, g); d != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.line, d)
		}
	}
}

// IM-2: a stdio line is read whole up to the bound and cut beyond it.
func TestReadLineBounded(t *testing.T) {
	long := strings.Repeat("y", 300)
	input := "short\n" + `{"id":"tg-2",` + long + "\nnext\r\nlast"
	// A buffer smaller than the long line, so that it comes in pieces.
	br := bufio.NewReaderSize(strings.NewReader(input), 64)
	var lines []string
	var overs []bool
	for {
		line, over, err := readLine(br, 100)
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		lines = append(lines, string(line))
		overs = append(overs, over)
	}
	if len(lines) != 4 {
		t.Fatalf("lines = %q", lines)
	}
	// Of the long line, only a head is kept.
	if l := lines[1]; !strings.HasPrefix(`{"id":"tg-2",`+long, l) || len(l) >= len(`{"id":"tg-2",`+long) {
		t.Errorf("long line's head = %q", l)
	}
	if id := headID([]byte(lines[1])); string(id) != `"tg-2"` {
		t.Errorf("headID = %q", id)
	}
	lines[1] = ""
	if d := cmp.Diff([]string{"short", "", "next\r", "last"}, lines); d != "" {
		t.Errorf("lines (-want +got)\n%s", d)
	}
	if d := cmp.Diff([]bool{false, true, false, false}, overs); d != "" {
		t.Errorf("over (-want +got)\n%s", d)
	}
	if id := headID([]byte(`{"method":"x","id":1,"params":{`)); id != nil {
		t.Errorf("headID of a request = %q", id)
	}
}
