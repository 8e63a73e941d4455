package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretRendering(t *testing.T) {
	s := Secret("hunter2-SECRET-value")
	type holder struct {
		S Secret
		M map[string]Secret
		P *Secret
	}
	h := holder{S: s, M: map[string]Secret{"k": s}, P: &s}
	js, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("x", "secret", s, "holder", h)
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("x", "secret", s, "holder", h)

	renderings := map[string]string{
		"String":   s.String(),
		"GoString": s.GoString(),
		"%v":       fmt.Sprintf("%v", s),
		"%s":       fmt.Sprintf("%s", s),
		"%q":       fmt.Sprintf("%q", s),
		"%x":       fmt.Sprintf("%x", s),
		"%X":       fmt.Sprintf("%X", s),
		"%d":       fmt.Sprintf("%d", s),
		"%+v":      fmt.Sprintf("%+v", h),
		"%#v":      fmt.Sprintf("%#v", h),
		"%v map":   fmt.Sprintf("%v", h.M),
		"json":     string(js),
		"slog":     logBuf.String(),
		"Errorf":   fmt.Errorf("bad value %v / %s", s, s).Error(),
	}
	for name, got := range renderings {
		assertNoLeak(t, name, got)
		if !strings.Contains(got, Redacted) {
			t.Errorf("%s = %q, want it to show %s", name, got, Redacted)
		}
	}
	if got := s.Reveal(); got != "hunter2-SECRET-value" {
		t.Errorf("Reveal() = %q", got)
	}
	var empty Secret
	if got := fmt.Sprintf("[%v][%s]", empty, empty); got != "[][]" {
		t.Errorf("empty secret renders %q, want it empty", got)
	}
	if b, _ := json.Marshal(empty); string(b) != `""` {
		t.Errorf("empty secret JSON = %s", b)
	}
}

// TestSecretsNeverLeak loads configs whose secrets are distinctive strings,
// triggers the error paths that involve those fields, and renders the
// config every way there is; no rendering may contain a secret (IM-5).
func TestSecretsNeverLeak(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("file-SECRET-value-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mcpJSON := `{"mcpServers": {"m": {"command": "x", "env": {"T": "json-SECRET-env"}}, "h": {"url": "https://h.example.com", "headers": {"X-K": "json-SECRET-header"}}}}`
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(mcpJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	good := `
gateway:
  confirm: {secret: "${TOOLGATE_CONFIRM_SECRET}"}
endpoints:
  - path: /mcp
    auth:
      anyOf:
        - apiKeys:
            - {key: "${GATEWAY_KEY}", actor: {id: a}}
            - {key: literal-SECRET-api-key-2, actor: {id: b}}
        - oauth:
            issuer: https://id.example.com
            clientId: c
            clientSecret: "${file:secret.txt}"
upstreams:
  - name: s
    url: https://s.example.com/mcp
    headers: {X-Key: literal-SECRET-header, X-Env: "${MCP_TOKEN}"}
    authorization: literal-SECRET-authz
    signing: {hmacSha256: {secret: "${SIGNING_KEY}", header: X-Sig}}
  - name: c
    command: x
    env: {A: literal-SECRET-env, B: "${GITHUB_TOKEN}"}
upstreamsFrom: mcp.json
`
	p := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(p, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, warnings, err := Load(p, optionsFor(fixedEnv))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	// The values did arrive: the redaction is not an empty config.
	if cfg.Upstreams[0].Authorization.Reveal() != "literal-SECRET-authz" ||
		cfg.Endpoints[0].Auth.AnyOf[1].OAuth.ClientSecret.Reveal() != "file-SECRET-value-0123456789abcdef" ||
		cfg.Upstreams[2].Env["T"].Reveal() != "json-SECRET-env" {
		t.Fatalf("secrets not loaded: %#v", cfg)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dump, err := Dump(cfg)
	if err != nil {
		t.Fatal(err)
	}
	imported, err := UpstreamsYAML(cfg.Upstreams)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("config", "cfg", cfg)
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("config", "cfg", cfg)
	for name, got := range map[string]string{
		"%v":            fmt.Sprintf("%v", cfg),
		"%+v":           fmt.Sprintf("%+v", cfg),
		"%#v":           fmt.Sprintf("%#v", cfg),
		"%v upstreams":  fmt.Sprintf("%v", cfg.Upstreams),
		"%+v endpoints": fmt.Sprintf("%+v", cfg.Endpoints),
		"json":          string(js),
		"Dump":          string(dump),
		"slog":          logBuf.String(),
		"warnings":      fmt.Sprint(warnings),
	} {
		assertNoLeak(t, name, got)
	}
	// import-config prints literals that neither look secret nor sit under
	// a secret-looking name (OP-2: `X-Tenant: acme` stays itself), so only
	// those may appear in its output.
	for _, secret := range []string{"literal-SECRET-authz", "literal-SECRET-header", "literal-SECRET-api-key-2", "file-SECRET-value"} {
		if strings.Contains(string(imported), secret) {
			t.Errorf("UpstreamsYAML prints %s:\n%s", secret, imported)
		}
	}
	if !strings.Contains(string(dump), "authorization: "+Redacted) {
		t.Errorf("Dump does not show the redacted authorization:\n%s", dump)
	}

	// Error paths that involve secret fields.
	bad := []string{
		// duplicate API key, short key warning, short confirm secret
		`gateway: {confirm: {secret: literal-SECRET-short}}
endpoints:
  - {path: /a, auth: {apiKeys: [{key: literal-SECRET-dup, actor: {id: a}}]}}
  - {path: /b, auth: {apiKeys: [{key: literal-SECRET-dup, actor: {id: b}}]}}`,
		// header value injection, Bearer in authorization, wrong types
		`upstreams:
  - name: s
    url: https://s.example.com
    headers: {X-A: "literal-SECRET-a\r\nX-B: y", X-N: 1.5}
    authorization: Bearer literal-SECRET-tok
    signing: {hmacSha256: {secret: [literal-SECRET-list], header: "bad header"}}`,
		`upstreams:
  - {name: s, url: "https://u:literal-SECRET-pw@s.example.com/?k=literal-SECRET-q", defaultKind: read}`,
		`upstreams:
  - {name: s, command: x, authorization: literal-SECRET-authz, headers: {X: literal-SECRET-h}, env: {"A=B": literal-SECRET-e}}`,
		`gateway: {confirm: {secret: {nested: literal-SECRET-map}}}`,
		`endpoints: [{path: /a, auth: {oauth: {issuer: "https://x:literal-SECRET-pw@id.example.com", clientSecret: literal-SECRET-cs}}}]`,
		`gateway: {publicUrl: "https://x:literal-SECRET-pw@tools.example.com/?t=literal-SECRET-q"}`,
		// malformed YAML on a line holding a secret
		"gateway:\n  confirm:\n    secret: literal-SECRET-a: b\n",
		"upstreams:\n  - authorization: \"literal-SECRET-unterminated\n",
		"endpoints: [{path: /a, auth: {apiKeys: [{key: literal-SECRET-x, actor: {id: a}]}}]\n",
	}
	for i, body := range bad {
		p := writeConfig(t, body)
		_, warnings, err := Load(p, optionsFor(fixedEnv))
		if err == nil {
			t.Errorf("bad[%d] loaded without error", i)
			continue
		}
		assertNoLeak(t, fmt.Sprintf("bad[%d] error", i), err.Error())
		assertNoLeak(t, fmt.Sprintf("bad[%d] warnings", i), fmt.Sprint(warnings))
	}
}
