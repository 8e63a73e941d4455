package serve_test

// The importer against the real reference servers of testdata/peers (QB-1),
// over stdio and Streamable HTTP. Each test spawns its own servers, each in
// a working directory of its own, so the processes a test started can be
// told apart from everything else running.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/upstream"
)

const (
	// peerTimeout is UpstreamSpec.Timeout: initialize alone takes 1–2.5 s on
	// two loaded cores.
	peerTimeout = 30 * time.Second
	// peerStart bounds Start (connect attempts and listing included).
	peerStart = 2 * time.Minute
)

func peerCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// minimalEnv is what a peer spawned by the tests gets: no secrets of the
// test's environment (server-everything's get-env prints all of it).
func minimalEnv(extra ...string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

// rawTool is one entry of tools/list as the server wrote it.
type rawTool struct {
	InputSchema  json.RawMessage
	Annotations  json.RawMessage
	OutputSchema json.RawMessage
	// Members is the whole tool object as the server wrote it.
	Members map[string]json.RawMessage
}

// rawTools spawns `node args...` and speaks JSON-RPC over its stdio by hand:
// initialize, notifications/initialized, tools/list. It returns each tool's
// inputSchema and annotations as the exact bytes the server sent, by name,
// with the names in listing order. It declares the client capabilities
// toolgate declares (roots, sampling, elicitation), so the server offers the
// same tools.
func rawTools(t *testing.T, args ...string) (map[string]rawTool, []string) {
	t.Helper()
	return rawToolsOf(t, peers.Node(t), args...)
}

// rawToolsOf is rawTools for any stdio server: command with args.
func rawToolsOf(t *testing.T, command string, args ...string) (map[string]rawTool, []string) {
	t.Helper()
	cmd := exec.Command(command, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = minimalEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	p := peers.Start(t, cmd)

	lines := make(chan []byte)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-p.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	deadline := time.After(peerTimeout)
	send := func(msg string) {
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatalf("raw %v: write: %v\nstderr: %s", args, err, stderr.String())
		}
	}
	// await returns the result of the response with the given id, skipping
	// the server's notifications and requests.
	await := func(id int) json.RawMessage {
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("raw %v: stdout ended before response %d", args, id)
				}
				var msg struct {
					ID     *int            `json:"id"`
					Method string          `json:"method"`
					Result json.RawMessage `json:"result"`
					Error  json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal(line, &msg); err != nil {
					t.Fatalf("raw %v: %v in %s", args, err, line)
				}
				if msg.ID == nil || *msg.ID != id || msg.Method != "" {
					continue
				}
				if msg.Error != nil {
					t.Fatalf("raw %v: error %s", args, msg.Error)
				}
				return msg.Result
			case <-deadline:
				t.Fatalf("raw %v: no response %d in %v\nstderr: %s", args, id, peerTimeout, stderr.String())
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + upstream.ProtocolVersion +
		`","capabilities":{"roots":{},"sampling":{},"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	await(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var page struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			Annotations  json.RawMessage `json:"annotations"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	listing := await(2)
	if err := json.Unmarshal(listing, &page); err != nil {
		t.Fatal(err)
	}
	var members struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(listing, &members); err != nil {
		t.Fatal(err)
	}
	if page.NextCursor != "" {
		t.Fatalf("raw %v: the listing is paginated; this helper reads one page", args)
	}
	_ = stdin.Close()
	out := make(map[string]rawTool, len(page.Tools))
	var names []string
	for i, tl := range page.Tools {
		out[tl.Name] = rawTool{tl.InputSchema, tl.Annotations, tl.OutputSchema, members.Tools[i]}
		names = append(names, tl.Name)
	}
	return out, names
}

// importPeer imports one upstream through the real importer and requires it.
func importPeer(t *testing.T, opts upstream.Options, prefix string) (*core.Registry, *upstreams.Importer) {
	t.Helper()
	up, err := upstream.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	transport := opts.Transport
	if opts.Command != "" {
		transport = "stdio"
	}
	reg := core.NewRegistry(nil)
	im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{
		Name: opts.Name, Prefix: prefix, Transport: transport, Required: true,
		Timeout: peerTimeout, Upstream: up,
	}}, nil)
	t.Cleanup(func() { _ = im.Close() })
	if err := im.Start(peerCtx(t, peerStart)); err != nil {
		msg := err.Error()
		if sr, ok := up.(upstream.StderrReporter); ok {
			msg += "\nstderr: " + sr.Stderr()
		}
		t.Fatalf("Start: %s", msg)
	}
	return reg, im
}

// imported returns the registry's tools from source, by remote name.
func imported(reg *core.Registry, source string) map[string]core.ToolInfo {
	out := map[string]core.ToolInfo{}
	for _, ti := range reg.Bus().Snapshot().Tools {
		if ti.Source == source {
			out[ti.RemoteName] = ti
		}
	}
	return out
}

// checkVerbatim checks that the registry holds exactly the listed tools,
// named <prefix>_<remote> (IM-11), with each inputSchema (IM-17) and
// annotations byte-for-byte what the server sent: the exact bytes are
// compared, not a re-encoding, so nothing may be lost, reordered or
// reformatted on the way. The server may add tools after initialized and
// announce them with list_changed (IM-25), so the set is awaited, bounded.
func checkVerbatim(t *testing.T, reg *core.Registry, source, prefix string, raw map[string]rawTool, names []string) {
	t.Helper()
	var got map[string]core.ToolInfo
	waittest.Poll(15*time.Second, func() bool {
		got = imported(reg, source)
		return len(got) == len(raw)
	})
	var gotNames []string
	for n := range got {
		gotNames = append(gotNames, n)
	}
	slices.Sort(gotNames)
	outputs := 0
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(gotNames, want) {
		t.Fatalf("imported remote names = %v\nserver listed         %v", gotNames, want)
	}
	for _, name := range names {
		ti, r := got[name], raw[name]
		if want := core.ToolName(prefix, name); ti.Name != want {
			t.Errorf("%s imported as %q, want %q", name, ti.Name, want)
		}
		if !bytes.Equal(ti.InputSchema, r.InputSchema) {
			t.Errorf("%s: inputSchema differs from what the server sent\n got: %s\nsent: %s", name, ti.InputSchema, r.InputSchema)
		}
		if !bytes.Equal(ti.Annotations, r.Annotations) {
			t.Errorf("%s: annotations differ from what the server sent\n got: %s\nsent: %s", name, ti.Annotations, r.Annotations)
		}
		if !bytes.Equal(ti.OutputSchema, r.OutputSchema) {
			t.Errorf("%s: outputSchema differs from what the server sent\n got: %s\nsent: %s", name, ti.OutputSchema, r.OutputSchema)
		}
		if len(r.OutputSchema) > 0 {
			outputs++
		}
	}
	if source == "everything" && outputs == 0 {
		t.Error("server-everything declared no outputSchema: the check above compared nothing")
	}
}

func invoke(t *testing.T, reg *core.Registry, name, args string) core.Result {
	t.Helper()
	res, err := reg.Invoke(peerCtx(t, peerTimeout+10*time.Second), core.Actor{ID: "peer-test"}, name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Invoke %s: %v", name, err)
	}
	return res
}

// textOf returns the text of a result made of text blocks.
func textOf(t *testing.T, r core.Result) string {
	t.Helper()
	var v struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(r.JSON, &v); err != nil || len(v.Content) == 0 {
		t.Fatalf("result has no content blocks: %s (%v)", r.JSON, err)
	}
	var b strings.Builder
	for _, c := range v.Content {
		if c.Type != "text" {
			t.Fatalf("result has a %s block: %s", c.Type, r.JSON)
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

// checkChildrenGone checks that the processes running in dir, there before
// Close, are all gone once Close returns (IM-10).
func checkChildrenGone(t *testing.T, im *upstreams.Importer, dir string) {
	t.Helper()
	before, ok := peers.ProcsIn(dir)
	if !ok {
		t.Log("process check skipped: no /proc")
		_ = im.Close()
		return
	}
	if len(before) == 0 {
		t.Fatalf("no process runs in %s before Close: the check would prove nothing", dir)
	}
	if err := im.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if left, _ := peers.ProcsIn(dir); len(left) > 0 {
		t.Errorf("processes %v (of %v) outlived Close", left, before)
	}
}

// checkStatus checks the upstream's visible state (IM-9). A refresh that
// brought late tools publishes its count just after registering them, so
// the count is awaited, bounded.
func checkStatus(t *testing.T, im *upstreams.Importer, server string, tools int) {
	t.Helper()
	waittest.Succeeds(t, 5*time.Second, "the upstream's status", func() error {
		st := im.Statuses()
		if len(st) != 1 {
			t.Fatalf("statuses = %+v", st)
		}
		if s := st[0]; s.State != core.StateConnected || s.Server.Name != server || s.Server.Protocol != upstream.ProtocolVersion || s.Tools != tools {
			return fmt.Errorf("status = %+v, want connected to %s at %s with %d tools", s, server, upstream.ProtocolVersion, tools)
		}
		return nil
	})
}

// checkEverythingCalls runs server-everything's echo (a read) and its error
// path through the registry.
func checkEverythingCalls(t *testing.T, reg *core.Registry) {
	t.Helper()
	if got := textOf(t, invoke(t, reg, "everything_echo", `{"message":"hello through toolgate"}`)); got != "Echo: hello through toolgate" {
		t.Errorf("everything_echo = %q", got)
	}
	if ti, _ := reg.Get("everything_echo"); ti.Kind != core.KindRead {
		t.Errorf("everything_echo kind = %s, want read (readOnlyHint)", ti.Kind)
	}
	// resourceId 0 passes the schema ("type":"number") and fails in the
	// tool: the server's isError result passes through, not as an error
	// (IM-30, IM-32).
	res := invoke(t, reg, "everything_get-resource-reference", `{"resourceId":0}`)
	if !res.IsError || !strings.Contains(textOf(t, res), "Invalid resourceId") {
		t.Errorf("get-resource-reference with id 0 = %s, want an isError result", res.JSON)
	}
	if !bytes.Contains(res.JSON, []byte(`"isError":true`)) {
		t.Errorf("isError missing from the passed-through result %s", res.JSON)
	}
}

// TestPeerEverythingStdio imports @modelcontextprotocol/server-everything over
// stdio (IM-3): prefixed names (IM-11), schemas and annotations verbatim
// (IM-17), kinds from readOnlyHint (IM-15), echo and an isError result
// through the registry (IM-32), status (IM-9), no child left after Close
// (IM-10).
func TestPeerEverythingStdio(t *testing.T) {
	t.Parallel()
	js := peers.EverythingJS(t)
	raw, names := rawTools(t, js)
	if _, ok := raw["echo"]; !ok {
		t.Fatalf("server-everything lists no echo tool: %v", names)
	}
	dir := t.TempDir()
	reg, im := importPeer(t, upstream.Options{
		Name: "everything", Command: peers.Node(t), Args: []string{js}, Cwd: dir,
	}, "everything")
	checkVerbatim(t, reg, "everything", "everything", raw, names)
	checkStatus(t, im, "mcp-servers/everything", len(raw))
	checkEverythingCalls(t, reg)
	if ti, _ := reg.Get("everything_toggle-simulated-logging"); ti.Kind != core.KindAction {
		t.Errorf("toggle-simulated-logging kind = %s, want action (no readOnlyHint, defaultKind)", ti.Kind)
	}
	checkChildrenGone(t, im, dir)
}

// TestPeerEverythingStreamableHTTP imports server-everything over Streamable
// HTTP (IM-2): the same tools with the same bytes as over stdio, and calls.
func TestPeerEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	js := peers.EverythingJS(t)
	raw, names := rawTools(t, js)
	url := startEverythingHTTP(t, js)
	reg, im := importPeer(t, upstream.Options{Name: "everything", URL: url, Transport: "http"}, "everything")
	checkVerbatim(t, reg, "everything", "everything", raw, names)
	checkStatus(t, im, "mcp-servers/everything", len(raw))
	checkEverythingCalls(t, reg)
	if err := im.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// startEverythingHTTP serves server-everything's Streamable HTTP on a free
// port and returns its loopback URL. It binds every interface; the tests
// only ever connect to 127.0.0.1. A port taken between FreePort and the
// server's bind makes it exit, and another port is tried.
func startEverythingHTTP(t *testing.T, js string) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := peers.FreePort(t)
		cmd := exec.Command(peers.Node(t), js, "streamableHttp")
		cmd.Dir = t.TempDir()
		cmd.Env = minimalEnv("PORT=" + strconv.Itoa(port))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		p := peers.Start(t, cmd)
		if waitListening(port, 20*time.Second, p) {
			return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		}
		if !p.Exited() || attempt == 3 {
			p.Kill()
			<-p.Done()
			t.Fatalf("server-everything streamableHttp not listening on %d (attempt %d):\n%s", port, attempt, out.String())
		}
	}
}

// waitListening waits, at most d, for 127.0.0.1:port to accept; false if the
// process exited first or time ran out.
func waitListening(port int, d time.Duration, p *peers.Process) bool {
	listening := false
	waittest.Poll(d, func() bool {
		if p.Exited() {
			return true
		}
		listening = peers.Listening(port)
		return listening
	})
	return listening
}

// TestPeerFilesystemStdio imports @modelcontextprotocol/server-filesystem on
// a temporary root: kinds from the annotations (IM-15: readOnlyHint ⇒ read,
// destructiveHint or no hint ⇒ action), schemas verbatim (IM-17), a write
// that lands on disk and reads back, an isError refusal passed through
// (IM-32), and the allowed directory left alone (toolgate declares no roots),
// no child left after Close (IM-10).
func TestPeerFilesystemStdio(t *testing.T) {
	t.Parallel()
	js := peers.FilesystemJS(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	raw, names := rawTools(t, js, root)
	dir := t.TempDir()
	reg, im := importPeer(t, upstream.Options{
		Name: "filesystem", Command: peers.Node(t), Args: []string{js, root}, Cwd: dir,
	}, "filesystem")
	checkVerbatim(t, reg, "filesystem", "filesystem", raw, names)
	checkStatus(t, im, "secure-filesystem-server", len(raw))

	wantKind := map[string]core.Kind{
		"read_file": core.KindRead, "read_text_file": core.KindRead, "read_media_file": core.KindRead,
		"read_multiple_files": core.KindRead, "list_directory": core.KindRead,
		"list_directory_with_sizes": core.KindRead, "directory_tree": core.KindRead,
		"search_files": core.KindRead, "get_file_info": core.KindRead,
		"list_allowed_directories": core.KindRead,
		// destructiveHint: true
		"write_file": core.KindAction, "edit_file": core.KindAction, "move_file": core.KindAction,
		// readOnlyHint: false, destructiveHint: false: defaultKind
		"create_directory": core.KindAction,
	}
	for remote, ti := range imported(reg, "filesystem") {
		want, ok := wantKind[remote]
		if !ok {
			t.Errorf("unexpected tool %s (annotations %s): add it to this table", remote, ti.Annotations)
			continue
		}
		if ti.Kind != want {
			t.Errorf("%s kind = %s, want %s (annotations %s)", remote, ti.Kind, want, ti.Annotations)
		}
	}

	// Declaring roots would make the server replace its allowed directories.
	if got := textOf(t, invoke(t, reg, "filesystem_list_allowed_directories", `{}`)); !strings.Contains(got, root) {
		t.Errorf("allowed directories = %q, want %s", got, root)
	}
	file := filepath.Join(root, "note.txt")
	content := "written through toolgate\nsecond line\n"
	args, _ := json.Marshal(map[string]string{"path": file, "content": content})
	if res := invoke(t, reg, "filesystem_write_file", string(args)); res.IsError {
		t.Fatalf("write_file: %s", res.JSON)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != content {
		t.Fatalf("on disk after write_file: %q, %v", b, err)
	}
	args, _ = json.Marshal(map[string]string{"path": file})
	if got := textOf(t, invoke(t, reg, "filesystem_read_text_file", string(args))); got != content {
		t.Errorf("read_text_file = %q, want %q", got, content)
	}
	outside, _ := json.Marshal(map[string]string{"path": filepath.Join(filepath.Dir(root), "elsewhere.txt")})
	if res := invoke(t, reg, "filesystem_read_text_file", string(outside)); !res.IsError || !strings.Contains(textOf(t, res), "Access denied") {
		t.Errorf("read outside the root = %s, want an isError refusal", res.JSON)
	}
	checkChildrenGone(t, im, dir)
}

// IM-17, IM-16: server-everything's tools/list, read directly and through a
// gateway endpoint, member by member: every member the server sent comes
// out as it sent it — description, inputSchema (an action's with the
// gate's two fields added, CF-1), outputSchema (read tools), annotations,
// title, icons, execution — with the name prefixed, _meta carrying the
// source beside the server's own members, and nothing added that the server
// did not send.
func TestPeerEverythingListedMemberByMember(t *testing.T) {
	t.Parallel()
	js := peers.EverythingJS(t)
	raw, names := rawTools(t, js)
	reg, _ := importPeer(t, upstream.Options{Name: "everything", Command: peers.Node(t), Args: []string{js}, Cwd: t.TempDir()}, "everything")
	checkVerbatim(t, reg, "everything", "everything", raw, names)
	checkListedMemberByMember(t, reg, "everything", raw, names)
}

// The same, for the official Go SDK's everything example server: built
// from the module this project already requires, run over stdio.
func TestPeerGoSDKEverythingListedMemberByMember(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the Go SDK's everything example")
	}
	bin := filepath.Join(t.TempDir(), "everything")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/examples/server/everything").CombinedOutput(); err != nil {
		t.Fatalf("building the Go SDK's everything example: %v\n%s", err, out)
	}
	raw, names := rawToolsOf(t, bin)
	if len(names) == 0 {
		t.Fatal("the Go SDK's everything example lists no tools")
	}
	reg, _ := importPeer(t, upstream.Options{Name: "goeverything", Command: bin, Cwd: t.TempDir()}, "goeverything")
	checkVerbatim(t, reg, "goeverything", "goeverything", raw, names)
	checkListedMemberByMember(t, reg, "goeverything", raw, names)
}

// checkListedMemberByMember serves reg on an endpoint with a confirm gate
// and compares its tools/list with what the server listed, member by
// member (see TestPeerEverythingListedMemberByMember).
func checkListedMemberByMember(t *testing.T, reg *core.Registry, prefix string, raw map[string]rawTool, names []string) {
	t.Helper()
	gate, err := confirm.NewGate(confirm.GateOptions{Secret: []byte("a-confirm-secret-of-at-least-32-bytes!"), Ledger: memory.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	base := asActorWith(t, reg, prefix+"-reader", gate)
	c := mcptest.New(base+"/mcp", nil)
	if _, err := c.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, rpcErr, err := c.Call(t.Context(), "tools/list", map[string]any{})
	if err != nil || rpcErr != nil {
		t.Fatalf("tools/list: %v %v", err, rpcErr)
	}
	var listed struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(res, &listed); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]json.RawMessage{}
	for _, tl := range listed.Tools {
		var name string
		_ = json.Unmarshal(tl["name"], &name)
		byName[name] = tl
	}
	served := map[string]map[string]json.RawMessage{}
	for _, name := range names {
		if tl, ok := byName[core.ToolName(prefix, name)]; ok {
			served[name] = tl
		}
	}
	if len(served) != len(raw) {
		t.Fatalf("served %d tools, the server lists %d", len(served), len(raw))
	}
	for _, name := range names {
		direct, via := raw[name].Members, served[name]
		ti, _ := reg.Get(core.ToolName(prefix, name))
		for key, val := range direct {
			got, ok := via[key]
			switch {
			case key == "name":
			case key == "_meta":
				var m map[string]json.RawMessage
				_ = json.Unmarshal(got, &m)
				var d map[string]json.RawMessage
				_ = json.Unmarshal(val, &d)
				for k, v := range d {
					if string(m[k]) != string(v) {
						t.Errorf("%s: _meta.%s = %s, want %s", name, k, m[k], v)
					}
				}
			case key == "inputSchema" && ti.Kind == core.KindAction:
				if !bytes.Contains(got, []byte(`"confirmToken"`)) {
					t.Errorf("%s: an action's schema without the gate's fields: %s", name, got)
				}
			case key == "outputSchema" && ti.Kind == core.KindAction:
				if ok {
					t.Errorf("%s: an action is listed with an output schema", name)
				}
			case !ok:
				t.Errorf("%s: %s dropped", name, key)
			case string(got) != string(val):
				t.Errorf("%s: %s = %s, want %s", name, key, got, val)
			}
		}
		for key := range via {
			if key == "description" && string(via[key]) == `"MCP tool: `+name+`"` {
				continue // IM-36: a tool sent without a description gets one
			}
			if _, ok := direct[key]; !ok && key != "_meta" {
				t.Errorf("%s: %s added (%s); the server sent none", name, key, via[key])
			}
		}
		if !strings.Contains(string(via["_meta"]), `"dev.toolgate/source":"`+prefix+`"`) {
			t.Errorf("%s: _meta %s lacks the source", name, via["_meta"])
		}
	}
}
