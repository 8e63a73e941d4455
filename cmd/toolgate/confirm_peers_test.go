//go:build linux

package main

// The confirm gate (CF-1 … CF-4) of `toolgate serve`, driven by the official
// TypeScript SDK client over real HTTP, in front of the reference
// filesystem server from npm: a side effect on disk happens only after a
// preview and a matching, single-use confirmation.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/lab/peers"
)

// API keys of the two actors of the confirm tests.
const (
	confirmKeyAlice = "confirm-SECRET-alice-key-7f3a9c1e5b"
	confirmKeyBob   = "confirm-SECRET-bob-key-2d8e4b6f0a"
)

// confirmFSConfig serves server-filesystem (stdio, prefix fs) on /mcp to
// two API-key actors.
const confirmFSConfig = `gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
endpoints:
  - path: /mcp
    name: toolgate confirm
    auth:
      apiKeys:
        - key: ${KEY_ALICE}
          actor: {id: alice, roles: [MEMBER]}
        - key: ${KEY_BOB}
          actor: {id: bob, roles: [MEMBER]}
upstreams:
  - name: fs
    prefix: fs
    command: %s
    args: [%s, %s]
    cwd: %s
    required: true
`

// confirmSDKRun is what testdata/peers/sdk-confirm.mjs prints.
type confirmSDKRun struct {
	SessionID string         `json:"sessionId"`
	Tools     []serveSDKTool `json:"tools"`
	Results   []struct {
		Result *confirmSDKResult `json:"result"`
		Error  string            `json:"error"`
	} `json:"results"`
	Error string `json:"error"`
}

type confirmSDKResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// text is the result's first text block.
func (r *confirmSDKResult) text() string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// confirmPreview is the structured part of a preview answer (CF-2).
type confirmPreview struct {
	Preview string `json:"preview"`
	Call    struct {
		Tool       string          `json:"tool"`
		Source     string          `json:"source"`
		RemoteName string          `json:"remoteName"`
		Arguments  json.RawMessage `json:"arguments"`
	} `json:"call"`
	ConfirmToken string    `json:"confirmToken"`
	ExpiresAt    time.Time `json:"expiresAt"`
}

// runConfirmSDK runs sdk-confirm.mjs against url as the holder of key; calls
// is its JSON array of calls, written as the wire should carry it (key
// order included). Every call must have answered.
func runConfirmSDK(t *testing.T, url, key, calls string) confirmSDKRun {
	t.Helper()
	dir := peers.Dir(t)
	code, stdout, stderr := runServePeer(t, dir, servePeerRunWait, map[string]string{"SDK_CLIENT_TOKEN": key},
		filepath.Join(dir, "sdk-confirm.mjs"), url, calls)
	var r confirmSDKRun
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("sdk-confirm (exit %d) printed no result: %v\nstdout: %s\nstderr: %s", code, err, stdout, stderr)
	}
	var want []json.RawMessage
	if err := json.Unmarshal([]byte(calls), &want); err != nil {
		t.Fatal(err)
	}
	if code != 0 || r.Error != "" || len(r.Results) != len(want) {
		t.Fatalf("sdk-confirm: exit %d, error %q, %d results for %d calls\nstdout: %s\nstderr: %s", code, r.Error, len(r.Results), len(want), stdout, stderr)
	}
	return r
}

// confirmCall is one call for sdk-confirm.mjs with arguments given as raw
// JSON, so their key order is the test's choice.
func confirmCall(tool, args string) string {
	return fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args)
}

func confirmCalls(calls ...string) string { return "[" + strings.Join(calls, ",") + "]" }

// confirmWriteArgs are write_file's arguments in the given key order, with
// the gate's fields after them when token is not empty.
func confirmWriteArgs(pathFirst bool, path, content, token string) string {
	p, _ := json.Marshal(path)
	c, _ := json.Marshal(content)
	fields := []string{`"path":` + string(p), `"content":` + string(c)}
	if !pathFirst {
		fields[0], fields[1] = fields[1], fields[0]
	}
	if token != "" {
		tok, _ := json.Marshal(token)
		fields = append(fields, `"confirm":true`, `"confirmToken":`+string(tok))
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// checkConfirmRefused asserts call i of r is an isError answer holding want.
func checkConfirmRefused(t *testing.T, r confirmSDKRun, i int, what, want string) {
	t.Helper()
	got := r.Results[i]
	if got.Error != "" || got.Result == nil || !got.Result.IsError || !strings.Contains(got.Result.text(), want) {
		t.Errorf("%s: want an isError result containing %q, got error %q, result %+v", what, want, got.Error, got.Result)
	}
}

// checkConfirmAbsent asserts nothing was written at path.
func checkConfirmAbsent(t *testing.T, path, when string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s: %s exists (stat: %v); nothing should have been written", when, path, err)
	}
}

// CF-1, CF-2, CF-3, CF-4 end to end: `toolgate serve` with API keys, the
// official SDK client, server-filesystem on a temporary root.
//
//   - fs_write_file (destructiveHint) is listed with the gate's optional
//     confirm and confirmToken next to its own path and content;
//   - a call without confirm answers a preview (structuredContent with the
//     preview text, the canonical call, a token and its expiry) and writes
//     nothing;
//   - confirming with other arguments under that token is refused and
//     writes nothing, and does not spend the token;
//   - confirming with the same arguments in another key order writes the
//     file once, with the previewed content;
//   - replaying the token (same or changed arguments) is refused and does
//     not write again: the file the test overwrote in between keeps the
//     test's content and mtime; a forged token is refused;
//   - another actor (second API key) cannot use alice's token, and its
//     refusal does not spend it: alice confirms afterwards.
func TestConfirmFilesystemSDKCF1CF2CF4(t *testing.T) {
	dir := peers.Dir(t)
	node := peers.Node(t)
	js := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(js); err != nil {
		t.Fatalf("server-filesystem is not installed in %s: %v", dir, err)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	cfg := writeServeConfig(t, fmt.Sprintf(confirmFSConfig, quote(node), quote(js), quote(root), quote(t.TempDir())))
	g := startServe(t, cfg, map[string]string{
		"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret, "KEY_ALICE": confirmKeyAlice, "KEY_BOB": confirmKeyBob,
	})
	url := g.base + "/mcp"

	fileA, contentA := filepath.Join(root, "a.txt"), "written once through the gate\n"
	fileB, contentB := filepath.Join(root, "b.txt"), "alice's second file\n"
	fileC := filepath.Join(root, "c.txt")

	// Run 1 (alice): list, preview a.txt, preview b.txt.
	started := time.Now()
	r := runConfirmSDK(t, url, confirmKeyAlice, confirmCalls(
		confirmCall("fs_write_file", confirmWriteArgs(true, fileA, contentA, "")),
		confirmCall("fs_write_file", confirmWriteArgs(true, fileB, contentB, "")),
	))

	// CF-1: the gate's two fields, optional, beside the tool's own.
	var listed bool
	for _, tool := range r.Tools {
		if tool.Name != "fs_write_file" {
			continue
		}
		listed = true
		var schema struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
			t.Fatalf("fs_write_file schema: %v: %s", err, tool.InputSchema)
		}
		for prop, typ := range map[string]string{"path": "string", "content": "string", "confirm": "boolean", "confirmToken": "string"} {
			if got := schema.Properties[prop].Type; got != typ {
				t.Errorf("fs_write_file schema: %s has type %q, want %q: %s", prop, got, typ, tool.InputSchema)
			}
		}
		for _, req := range schema.Required {
			if req == "confirm" || req == "confirmToken" {
				t.Errorf("fs_write_file schema requires %s: %s", req, tool.InputSchema)
			}
		}
	}
	if !listed {
		t.Fatalf("fs_write_file is not listed; tools: %+v", r.Tools)
	}

	// CF-2: previews, a token each, nothing on disk.
	previews := make([]confirmPreview, 2)
	for i, want := range []struct{ path, content string }{{fileA, contentA}, {fileB, contentB}} {
		res := r.Results[i].Result
		if res == nil || res.IsError {
			t.Fatalf("preview %d: error %q, result %+v", i, r.Results[i].Error, res)
		}
		p := &previews[i]
		if err := json.Unmarshal(res.StructuredContent, p); err != nil {
			t.Fatalf("preview %d: structuredContent %s: %v", i, res.StructuredContent, err)
		}
		canon := fmt.Sprintf(`{"content":%s,"path":%s}`, quote(want.content), quote(want.path))
		if p.Preview == "" || !strings.Contains(res.text(), p.Preview) || p.Call.Tool != "fs_write_file" || p.Call.Source != "fs" ||
			p.Call.RemoteName != "write_file" || string(p.Call.Arguments) != canon {
			t.Errorf("preview %d: %s\ntext: %q\nwant the call fs_write_file on fs (write_file) with %s", i, res.StructuredContent, res.text(), canon)
		}
		// CF-3: "<expiresAt>.<store id>.<nonce>.<HMAC-SHA256 hex>", default
		// lifetime 15 min.
		parts := strings.Split(p.ConfirmToken, ".")
		if len(parts) != 4 || parts[0] != fmt.Sprint(p.ExpiresAt.Unix()) || len(parts[1]) != 32 || len(parts[2]) != 32 || len(parts[3]) != 64 {
			t.Errorf("preview %d: token %q does not carry its expiry %v, the store's id, a nonce and a SHA-256 MAC", i, p.ConfirmToken, p.ExpiresAt)
		}
		if lo, hi := started.Add(15*time.Minute-time.Second), time.Now().Add(15*time.Minute); p.ExpiresAt.Before(lo) || p.ExpiresAt.After(hi) {
			t.Errorf("preview %d: expiresAt %v, want about 15 min from now (%v … %v)", i, p.ExpiresAt, lo, hi)
		}
	}
	if previews[0].ConfirmToken == previews[1].ConfirmToken {
		t.Errorf("two previews of different arguments share the token %q", previews[0].ConfirmToken)
	}
	checkConfirmAbsent(t, fileA, "after the previews")
	checkConfirmAbsent(t, fileB, "after the previews")
	if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
		t.Fatalf("the root after the previews: %v (%v), want it empty", ents, err)
	}
	tokA, tokB := previews[0].ConfirmToken, previews[1].ConfirmToken

	// Run 2 (alice): a.txt's token with other arguments (c.txt) is refused;
	// then the previewed arguments, keys in the other order, confirm.
	r = runConfirmSDK(t, url, confirmKeyAlice, confirmCalls(
		confirmCall("fs_write_file", confirmWriteArgs(true, fileC, contentA, tokA)),
		confirmCall("fs_write_file", confirmWriteArgs(false, fileA, contentA, tokA)),
	))
	checkConfirmRefused(t, r, 0, "a.txt's token for c.txt", "arguments differ from the previewed ones")
	checkConfirmAbsent(t, fileC, "after the refused confirmation for c.txt")
	if res := r.Results[1].Result; res == nil || res.IsError || res.text() != "Successfully wrote to "+fileA {
		t.Fatalf("confirming a.txt: error %q, result %+v", r.Results[1].Error, res)
	}
	if b, err := os.ReadFile(fileA); err != nil || string(b) != contentA {
		t.Fatalf("a.txt after the confirmation: %q (%v), want %q", b, err, contentA)
	}

	// The test overwrites a.txt and pins its mtime: a write by any later
	// call would show in either.
	const overwritten = "overwritten by the test, not by toolgate\n"
	if err := os.WriteFile(fileA, []byte(overwritten), 0o644); err != nil {
		t.Fatal(err)
	}
	pinned := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(fileA, pinned, pinned); err != nil {
		t.Fatal(err)
	}

	// Run 3 (bob): alice's token for b.txt, exactly the previewed arguments.
	r = runConfirmSDK(t, url, confirmKeyBob, confirmCalls(
		confirmCall("fs_write_file", confirmWriteArgs(true, fileB, contentB, tokB)),
	))
	checkConfirmRefused(t, r, 0, "bob with alice's token", "issued to another actor")
	checkConfirmAbsent(t, fileB, "after bob's refused confirmation")

	// Run 4 (alice): replays of a.txt's token, unchanged and changed, and a
	// forged token are refused; b.txt's token, untouched by bob's attempt,
	// confirms.
	flip := "0"
	if strings.HasSuffix(tokB, "0") {
		flip = "1"
	}
	forged := tokB[:len(tokB)-1] + flip
	r = runConfirmSDK(t, url, confirmKeyAlice, confirmCalls(
		confirmCall("fs_write_file", confirmWriteArgs(false, fileA, contentA, tokA)),
		confirmCall("fs_write_file", confirmWriteArgs(true, fileA, "changed content under a spent token\n", tokA)),
		confirmCall("fs_write_file", confirmWriteArgs(true, fileB, contentB, forged)),
		confirmCall("fs_write_file", confirmWriteArgs(true, fileB, contentB, tokB)),
	))
	checkConfirmRefused(t, r, 0, "replaying a.txt's token", "already used")
	checkConfirmRefused(t, r, 1, "a.txt's spent token with changed content", "arguments differ from the previewed ones")
	checkConfirmRefused(t, r, 2, "a forged token", "confirm token is not valid")
	if res := r.Results[3].Result; res == nil || res.IsError || res.text() != "Successfully wrote to "+fileB {
		t.Errorf("alice confirming b.txt after bob's attempt: error %q, result %+v", r.Results[3].Error, res)
	}
	if b, err := os.ReadFile(fileB); err != nil || string(b) != contentB {
		t.Errorf("b.txt: %q (%v), want %q", b, err, contentB)
	}
	st, err := os.Stat(fileA)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(fileA); string(b) != overwritten || !st.ModTime().Equal(pinned) {
		t.Errorf("a.txt was written again by a refused call: content %q, mtime %v; want %q, %v", b, st.ModTime(), overwritten, pinned)
	}
	checkConfirmAbsent(t, fileC, "at the end")
	if ents, _ := os.ReadDir(root); len(ents) != 2 {
		t.Errorf("the root holds %d entries, want a.txt and b.txt: %v", len(ents), ents)
	}
}
