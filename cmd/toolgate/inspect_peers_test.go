//go:build linux

package main

// Inspection (IN-1, IN-2) on a real `toolgate serve` in front of the
// reference servers server-everything and server-filesystem (child
// processes), driven by the official TypeScript SDK client over real HTTP
// on loopback. Each endpoint sets another action; the marker values are
// fresh fake credentials of GitHub's format with a valid checksum.

import (
	"encoding/json"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/mcp/peers"
)

const inspectPeerKey = "inspect-SECRET-dev-key-5d4c3b2a19"

// inspectPeerConfig: one upstream of each reference server, every tool a
// read (no confirm gate in the way); four endpoints differing only in
// what they do with a credential.
const inspectPeerConfig = `gateway:
  review: {mode: off}
inspect:
  results: {pii: flag}
endpoints:
  - path: /flag
    auth: {apiKeys: [{key: "${DEV_KEY}-flag", actor: {id: dev}}]}
    inspect: {results: {secrets: flag}}
  - path: /redact
    auth: {apiKeys: [{key: "${DEV_KEY}-redact", actor: {id: dev}}]}
    inspect: {results: {secrets: redact}}
  - path: /block
    auth: {apiKeys: [{key: "${DEV_KEY}-block", actor: {id: dev}}]}
    inspect: {results: {secrets: block}, arguments: {secrets: block}}
  - path: /off
    auth: {apiKeys: [{key: "${DEV_KEY}-off", actor: {id: dev}}]}
    inspect: {results: {pii: "off"}}
upstreams:
  - name: everything
    command: ${NODE}
    args: ["${EVERYTHING}"]
    defaultKind: read
    timeout: 20s
    required: true
  - name: fs
    command: ${NODE}
    args: ["${FILESYSTEM}", "${ROOT}"]
    reads: ["*"]
    defaultKind: read
    timeout: 20s
    required: true
`

// freshGitHubToken is a token of GitHub's format with a valid checksum,
// made anew for each run.
func freshGitHubToken() string {
	const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 30)
	for i := range b {
		b[i] = alnum[rand.IntN(len(alnum))]
	}
	c := crc32.ChecksumIEEE(b)
	sum := make([]byte, 6)
	for i := 5; i >= 0; i-- {
		sum[i] = alnum[c%62]
		c /= 62
	}
	return "ghp_" + string(b) + string(sum)
}

// inspectResult is one call's result as the SDK client got it, _meta
// included.
type inspectResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
	Meta    struct {
		Findings []struct {
			Type, Detector, Path, Action string
		} `json:"dev.toolgate/findings"`
	} `json:"_meta"`
}

func inspectCall(t *testing.T, d *sdkDriver, tool string, args any) (inspectResult, string) {
	t.Helper()
	d.send(tool, args)
	line := d.next(sdkCallWait)
	var a struct {
		Result *inspectResult `json:"result"`
		Error  string         `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &a); err != nil || a.Result == nil {
		t.Fatalf("%s: %s (%v)", tool, line, err)
	}
	return *a.Result, line
}

// IN-1, IN-2, QB-1: flag passes the result and lists the finding in
// _meta; redact puts [redacted:github-token] in its place; block answers
// isError naming kind, detector and place; a credential in the arguments
// under block never reaches the upstream (server-filesystem writes no
// file); an endpoint that turns a kind off sees nothing of it. No marker
// value reaches an error text or the gateway's log.
func TestInspectServeSDK(t *testing.T) {
	root := t.TempDir()
	cfg := writeServeConfig(t, inspectPeerConfig)
	g := startServe(t, cfg, map[string]string{
		"DEV_KEY": inspectPeerKey, "NODE": peers.Node(t), "EVERYTHING": peers.EverythingJS(t),
		"FILESYSTEM": peers.FilesystemJS(t), "ROOT": root,
	})
	tok := freshGitHubToken()
	msg := "deploy key " + tok + " for jane.roe@example.org"
	want := func(r inspectResult, typ, det, path, action string) {
		t.Helper()
		for _, f := range r.Meta.Findings {
			if f.Type == typ && f.Detector == det && f.Path == path && f.Action == action {
				return
			}
		}
		t.Errorf("no finding %s/%s at %s (%s) in %+v", typ, det, path, action, r.Meta.Findings)
	}

	t.Run("flag", func(t *testing.T) {
		d := startSDKDriver(t, g.base+"/flag", inspectPeerKey+"-flag")
		r, _ := inspectCall(t, d, "everything_echo", map[string]any{"message": msg})
		if r.IsError || len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, tok) {
			t.Fatalf("flag changed the result: %+v", r)
		}
		want(r, "secrets", "github-token", "/content/0/text", "flag")
		want(r, "pii", "email", "/content/0/text", "flag")
	})
	t.Run("redact", func(t *testing.T) {
		d := startSDKDriver(t, g.base+"/redact", inspectPeerKey+"-redact")
		r, line := inspectCall(t, d, "everything_echo", map[string]any{"message": msg})
		if strings.Contains(line, tok) {
			t.Fatalf("the redacted result holds the credential: %s", line)
		}
		if r.IsError || len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, "deploy key [redacted:github-token] for jane.roe@example.org") {
			t.Fatalf("redact: %+v", r)
		}
		want(r, "secrets", "github-token", "/content/0/text", "redact")
	})
	t.Run("block", func(t *testing.T) {
		d := startSDKDriver(t, g.base+"/block", inspectPeerKey+"-block")
		// The credential comes back from the upstream: the result is withheld.
		r, line := inspectCall(t, d, "everything_echo", map[string]any{"message": "x"})
		if r.IsError {
			t.Fatalf("a clean call was blocked: %s", line)
		}
		// The same in the arguments: refused before the upstream is called.
		path := filepath.Join(root, "leak.txt")
		r, line = inspectCall(t, d, "fs_write_file", map[string]any{"path": path, "content": "token=" + tok})
		if !r.IsError || strings.Contains(line, tok) || !strings.Contains(r.Content[0].Text, "a credential (github-token at /content)") {
			t.Fatalf("argument block: %s", line)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("the upstream wrote %s: the call was sent (%v)", path, err)
		}
		// A credential the upstream returns (a file's content read back).
		clean := filepath.Join(root, "notes.txt")
		if err := os.WriteFile(clean, []byte("ci log: GITHUB_TOKEN="+tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r, line = inspectCall(t, d, "fs_read_text_file", map[string]any{"path": clean})
		if !r.IsError || strings.Contains(line, tok) || !strings.Contains(r.Content[0].Text, "Blocked: the result held a credential (github-token at /content/0/text)") {
			t.Fatalf("result block: %s", line)
		}
	})
	t.Run("off", func(t *testing.T) {
		d := startSDKDriver(t, g.base+"/off", inspectPeerKey+"-off")
		r, line := inspectCall(t, d, "everything_echo", map[string]any{"message": msg})
		if r.IsError || len(r.Meta.Findings) != 0 || !strings.Contains(line, tok) {
			t.Fatalf("an endpoint with inspection off changed the result: %s", line)
		}
	})
	if strings.Contains(g.stderr.String(), tok) {
		t.Errorf("the gateway's log holds the credential:\n%s", g.stderr)
	}
}
