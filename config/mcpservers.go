package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
)

// mcpEntry is one server of an mcpServers file. Keys other clients add
// (autoApprove, timeout, description…) are ignored: they have no
// equivalent here and ignoring them keeps the import usable.
type mcpEntry struct {
	Type      string            `json:"type"`
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	Cwd       string            `json:"cwd"`
	URL       string            `json:"url"`
	ServerURL string            `json:"serverUrl"` // Windsurf's spelling of url
	Headers   map[string]string `json:"headers"`
	EnvFile   string            `json:"envFile"`
	Disabled  bool              `json:"disabled"`
}

var nameCharRE = lazyRegexp(`[^a-zA-Z0-9_-]`)

// MCPImport is an mcpServers file converted to upstreams (OP-2).
type MCPImport struct {
	// Upstreams are in the file's order, which decides who keeps a
	// contested tool name (IM-13).
	Upstreams []Upstream
	// Skipped are the servers left out, in the file's order.
	Skipped []SkippedServer
}

// SkippedServer is a server of an mcpServers file that was not imported.
type SkippedServer struct {
	// Path names it in the file: mcpServers.old, servers["my server"].
	Path string
	// Reason says why; it never holds a value from the file.
	Reason string
	// Disabled: the file itself turned the server off ("disabled": true);
	// otherwise the server could not be imported as written.
	Disabled bool
}

func (s SkippedServer) String() string { return s.Path + ": " + s.Reason }

// ParseMCPServers reads an mcpServers file in the Claude Desktop / Cursor /
// Claude Code format (top-level "mcpServers") or the VS Code format
// ("servers", or "mcp": {"servers"} in settings.json) and returns its
// servers as upstreams (OP-2). Comments and trailing commas (VS Code's
// JSONC) are accepted. Values are returned as written: ${…} references are
// not expanded here, so import-config can print them as they are. A
// relative cwd is made relative to baseDir.
//
// Servers keep the file's order. Names are reshaped to the upstream-name
// rule ("My Server" becomes "My_Server"), and made unique with a _2, _3…
// suffix, the first in the file keeping the name. A server that cannot be
// imported (envFile, no command or url, a wrong type) or that says
// "disabled": true is skipped and listed with the reason; only a file that
// is not an mcpServers file at all is an error.
func ParseMCPServers(data []byte, baseDir string) (MCPImport, error) {
	var imp MCPImport
	clean := stripJSONC(data)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(clean, &top); err != nil {
		return imp, jsonError(clean, err)
	}
	if top == nil {
		return imp, errors.New("expected a JSON object")
	}
	var blocks []string
	var raw json.RawMessage
	for _, name := range []string{"mcpServers", "servers"} {
		if r, ok := top[name]; ok {
			blocks, raw = append(blocks, name), r
		}
	}
	if r, ok := top["mcp"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(r, &inner) == nil {
			if s, ok := inner["servers"]; ok {
				blocks, raw = append(blocks, "mcp.servers"), s
			}
		}
	}
	switch len(blocks) {
	case 0:
		return imp, errors.New(`no "mcpServers" or "servers" object (Claude Desktop, Cursor or VS Code format)`)
	case 1:
	default:
		return imp, fmt.Errorf("both %s present; keep one", strings.Join(blocks, " and "))
	}
	block := blocks[0]
	keys, servers, ok := objectInOrder(raw)
	if !ok {
		return imp, fmt.Errorf("%s: expected an object of servers", block)
	}

	for _, key := range keys {
		where := entryPath(block, key)
		skip := func(reason string) { imp.Skipped = append(imp.Skipped, SkippedServer{Path: where, Reason: reason}) }
		var e mcpEntry
		if err := json.Unmarshal(servers[key], &e); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				skip(fmt.Sprintf("%s: expected %s, got a JSON %s", te.Field, jsonKind(te.Type.String()), te.Value))
			} else {
				skip("expected an object")
			}
			continue
		}
		if e.Disabled {
			imp.Skipped = append(imp.Skipped, SkippedServer{Path: where, Reason: `disabled ("disabled": true)`, Disabled: true})
			continue
		}
		u, err := e.upstream(baseDir)
		if err != nil {
			skip(err.Error())
			continue
		}
		u.Name = sanitizeName(key)
		editorVars(&u)
		imp.Upstreams = append(imp.Upstreams, u)
	}
	uniqueNames(imp.Upstreams)
	return imp, nil
}

// objectInOrder decodes a JSON object into its members in document order,
// which encoding/json's maps lose. A repeated key keeps its first position
// and its last value, as JavaScript's JSON.parse does in the clients that
// write these files.
func objectInOrder(raw json.RawMessage) ([]string, map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	var keys []string
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return nil, nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		if _, seen := members[key]; !seen {
			keys = append(keys, key)
		}
		members[key] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, nil, false
	}
	return keys, members, true
}

func (e mcpEntry) upstream(baseDir string) (Upstream, error) {
	u := Upstream{Command: e.Command, Args: e.Args, URL: e.URL}
	if u.URL == "" {
		u.URL = e.ServerURL
	}
	if e.EnvFile != "" {
		// Silently dropping the file would start the server without its
		// credentials.
		return u, errors.New("envFile is not supported; move its variables into env")
	}
	switch strings.ToLower(e.Type) {
	case "":
	case "stdio":
		if u.Command == "" {
			return u, errors.New(`type "stdio" needs command`)
		}
	case "http", "streamable-http", "streamablehttp":
		u.Transport = TransportHTTP
	case "sse":
		u.Transport = TransportSSE
	default:
		return u, fmt.Errorf("unknown type %q (expected stdio, http, streamable-http or sse)", e.Type)
	}
	switch {
	case u.Command != "" && u.URL != "":
		return u, errors.New("has both command and url")
	case u.Command == "" && u.URL == "":
		return u, errors.New("has neither command nor url")
	case u.Transport != "" && u.URL == "":
		return u, fmt.Errorf("type %q needs url", e.Type)
	}
	if u.Command != "" {
		u.Cwd = e.Cwd
		if u.Cwd != "" && !filepath.IsAbs(u.Cwd) && !strings.HasPrefix(u.Cwd, "~") && !strings.Contains(u.Cwd, "${") {
			u.Cwd = filepath.Join(baseDir, u.Cwd)
		}
		if len(e.Env) > 0 {
			u.Env = make(map[string]Secret, len(e.Env))
			for k, v := range e.Env {
				u.Env[k] = Secret(v)
			}
		}
	} else if len(e.Headers) > 0 {
		u.Headers = make(map[string]Secret, len(e.Headers))
		for k, v := range e.Headers {
			u.Headers[k] = Secret(v)
		}
	}
	return u, nil
}

// editorVars rewrites ${userHome} (Cursor, VS Code) as ${HOME}, which
// means the same to a gateway on Unix.
func editorVars(u *Upstream) {
	fix := func(s string) string { return strings.ReplaceAll(s, "${userHome}", "${HOME}") }
	u.Command, u.Cwd, u.URL = fix(u.Command), fix(u.Cwd), fix(u.URL)
	for i := range u.Args {
		u.Args[i] = fix(u.Args[i])
	}
	for k, v := range u.Env {
		u.Env[k] = Secret(fix(string(v)))
	}
	for k, v := range u.Headers {
		u.Headers[k] = Secret(fix(string(v)))
	}
}

func entryPath(block, key string) string {
	if upstreamNameRE().MatchString(key) {
		return block + "." + key
	}
	return fmt.Sprintf("%s[%q]", block, key)
}

func jsonKind(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["):
		return "an object"
	case goType == "bool":
		return "a boolean"
	}
	return goType
}

// sanitizeName reshapes a server key to the upstream-name rule.
func sanitizeName(key string) string {
	n := nameCharRE().ReplaceAllString(key, "_")
	if len(n) > maxPrefixLen {
		n = n[:maxPrefixLen]
	}
	if n == "" {
		n = "server"
	}
	return n
}

// uniqueNames suffixes names that collided after sanitising, in key order.
func uniqueNames(ups []Upstream) {
	seen := map[string]bool{}
	for _, u := range ups {
		seen[u.Name] = false
	}
	used := map[string]bool{}
	for i := range ups {
		n := ups[i].Name
		if !used[n] {
			used[n] = true
			continue
		}
		for k := 2; ; k++ {
			suffix := fmt.Sprintf("_%d", k)
			base := n
			if len(base)+len(suffix) > maxPrefixLen {
				base = base[:maxPrefixLen-len(suffix)]
			}
			cand := base + suffix
			if _, taken := seen[cand]; !taken && !used[cand] {
				ups[i].Name = cand
				used[cand] = true
				break
			}
		}
	}
}

// stripJSONC blanks out // and /* */ comments and trailing commas, keeping
// every other byte where it was so error offsets still point at the input.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			out[i], out[i+1] = ' ', ' '
			for i += 2; i < len(out); i++ {
				if out[i] == '*' && i+1 < len(out) && out[i+1] == '/' {
					out[i], out[i+1] = ' ', ' '
					i++
					break
				}
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
		}
	}
	inString = false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ',':
			j := i + 1
			for j < len(out) && strings.IndexByte(" \t\r\n", out[j]) >= 0 {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}

// jsonError reports a JSON syntax error by line and column.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the failing one included.
		pos := min(max(int(se.Offset)-1, 0), len(data))
		line := 1 + bytes.Count(data[:pos], []byte("\n"))
		col := pos - bytes.LastIndexByte(data[:pos], '\n')
		return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, se.Error())
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return errors.New("expected a JSON object")
	}
	return errors.New("invalid JSON")
}

var envRefRE = lazyRegexp(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// YAML prints the import as `toolgate import-config FILE` does (OP-2): a
// comment line per skipped server, then UpstreamsYAML of the upstreams.
func (imp MCPImport) YAML() ([]byte, error) {
	var b bytes.Buffer
	for _, s := range imp.Skipped {
		// Paths quote odd keys (%q), so a comment cannot span lines.
		fmt.Fprintf(&b, "# skipped %s\n", s)
	}
	out, err := UpstreamsYAML(imp.Upstreams)
	if err != nil {
		return nil, err
	}
	b.Write(out)
	return b.Bytes(), nil
}

// UpstreamsYAML prints ups as the `upstreams:` block of a toolgate config,
// for `toolgate import-config FILE` (OP-2). It prints the fields an
// mcpServers file can set. Secret env and header values are never printed:
// a literal value that looks secret, or sits under a secret-looking name
// (looksSecret), becomes a ${NAME} placeholder with a comment saying which
// variable to set (env values keep their own name, headers get
// <UPSTREAM>_<HEADER>); other literals (`X-Tenant: acme`, a path) are
// printed as they are. A value that already refers to variables keeps its
// references, VS Code's ${env:X} written as ${X}.
func UpstreamsYAML(ups []Upstream) ([]byte, error) {
	var b bytes.Buffer
	if len(ups) == 0 {
		b.WriteString("upstreams: []\n")
		return b.Bytes(), nil
	}
	b.WriteString("upstreams:\n")
	for _, u := range ups {
		fmt.Fprintf(&b, "  - name: %s\n", yamlScalar(u.Name))
		if u.Command != "" {
			fmt.Fprintf(&b, "    command: %s\n", yamlScalar(envRefs(u.Command)))
		}
		if len(u.Args) > 0 {
			b.WriteString("    args:\n")
			for _, a := range u.Args {
				fmt.Fprintf(&b, "      - %s\n", yamlScalar(envRefs(a)))
			}
		}
		if u.Cwd != "" {
			fmt.Fprintf(&b, "    cwd: %s\n", yamlScalar(envRefs(u.Cwd)))
		}
		if len(u.Env) > 0 {
			b.WriteString("    env:\n")
			for _, k := range sortedKeys(u.Env) {
				writeSecret(&b, "      ", k, u.Env[k].Reveal(), placeholderName(k))
			}
		}
		if u.URL != "" {
			fmt.Fprintf(&b, "    url: %s\n", yamlScalar(envRefs(u.URL)))
		}
		if u.Transport != "" && u.Transport != TransportAuto {
			fmt.Fprintf(&b, "    transport: %s\n", yamlScalar(u.Transport))
		}
		if len(u.Headers) > 0 {
			b.WriteString("    headers:\n")
			for _, k := range sortedKeys(u.Headers) {
				writeSecret(&b, "      ", k, u.Headers[k].Reveal(), placeholderName(strings.ToUpper(u.Name+"_"+k)))
			}
		}
		if u.Authorization != "" {
			writeSecret(&b, "    ", "authorization", u.Authorization.Reveal(), placeholderName(strings.ToUpper(u.Name+"_TOKEN")))
		}
	}
	return b.Bytes(), nil
}

// writeSecret prints `key: value` for a secret without printing it.
func writeSecret(b *bytes.Buffer, indent, key, value, placeholder string) {
	var out, comment string
	switch {
	case strings.Contains(value, "${input:"):
		out = "${" + placeholder + "}"
		comment = fmt.Sprintf("set %s in the environment (replaces a VS Code input prompt)", placeholder)
	case strings.Contains(value, "${"):
		out = envRefs(value)
		// A ${VAR:-default} whose default is a secret would print it.
		var dropped []string
		out = defaultRefRE().ReplaceAllStringFunc(out, func(ref string) string {
			m := defaultRefRE().FindStringSubmatch(ref)
			if m[2] == "" || !looksSecret(key, m[2]) {
				return ref
			}
			dropped = append(dropped, m[1])
			return "${" + m[1] + "}"
		})
		if len(dropped) > 0 {
			comment = fmt.Sprintf("set %s in the environment (the imported file had a default inline)", strings.Join(dropped, ", "))
		}
	case !looksSecret(key, value):
		out = value
	default:
		out = "${" + placeholder + "}"
		comment = fmt.Sprintf("set %s in the environment (the imported file had the value inline)", placeholder)
	}
	fmt.Fprintf(b, "%s%s: %s", indent, yamlScalar(key), yamlScalar(out))
	if comment != "" {
		b.WriteString("  # " + comment)
	}
	b.WriteByte('\n')
}

var defaultRefRE = lazyRegexp(`\$\{([A-Za-z_][A-Za-z0-9_]*):-([^}]*)\}`)

func envRefs(s string) string { return envRefRE().ReplaceAllString(s, "$${$1}") }

// placeholderName makes an environment variable name of s: kept when it
// is one, else every character outside [A-Za-z0-9_] becomes _.
func placeholderName(s string) string {
	if varName().MatchString(s) {
		return s
	}
	n := nonVarCharRE().ReplaceAllString(s, "_")
	if n == "" || (n[0] >= '0' && n[0] <= '9') {
		n = "_" + n
	}
	return n
}

var nonVarCharRE = lazyRegexp(`[^A-Za-z0-9_]`)

var plainRE = lazyRegexp(`^[A-Za-z0-9_./@+~-][A-Za-z0-9_./@+~=:-]*$`)

// yamlScalar writes s plain when that reads back as the same string, and
// double-quoted (JSON escapes are valid YAML) otherwise.
func yamlScalar(s string) string {
	if plainRE().MatchString(s) && !strings.HasSuffix(s, ":") {
		var back map[string]any
		if err := yaml.Unmarshal([]byte("k: "+s), &back); err == nil {
			if got, ok := back["k"].(string); ok && got == s {
				return s
			}
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
