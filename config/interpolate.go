package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// expanded marks a string that had a ${…} reference substituted. The decode
// hook lets such a value fill a number or boolean field
// (`maxRequestBytes: ${MAX_BODY}`), while a literal string there stays a
// type error.
type expanded string

var varName = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)

// editorOnlyVars are VS Code and Cursor variables that mcpServers files use
// and that have no meaning outside the editor.
var editorOnlyVars = map[string]bool{
	"workspaceFolder": true, "workspaceFolderBasename": true, "workspaceRoot": true,
	"file": true, "fileDirname": true, "cwd": true, "pathSeparator": true,
}

// expander substitutes references in string values. It works on parsed
// values, never on the raw text, so a substituted value cannot inject YAML
// structure. Supported forms:
//
//	${VAR}        the environment variable VAR (an unset one is an error)
//	${VAR:-DEF}   VAR, or DEF taken literally when VAR is unset (Claude
//	              Code's form; a VAR set but empty stays empty)
//	${env:VAR}    the same as ${VAR}, in the form VS Code's mcp.json uses
//	${file:PATH}  the content of PATH, one trailing newline removed, for
//	              secrets mounted as files (OP-1); relative to baseDir
//	$${           a literal "${"
type expander struct {
	lookup  func(string) (string, bool)
	baseDir string
	errs    []FieldError
}

// expand returns s with its references substituted and whether any were.
func (x *expander) expand(path, s string) (string, bool) {
	if !strings.Contains(s, "${") {
		return s, false
	}
	var b strings.Builder
	subst := false
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				x.fail(path, `unterminated "${" (write "$${" for a literal "${")`)
				return s, false
			}
			ref := s[i+2 : i+2+end]
			val, ok := x.resolve(path, ref)
			if !ok {
				return s, false
			}
			b.WriteString(val)
			subst = true
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), subst
}

func (x *expander) resolve(path, ref string) (string, bool) {
	if name, def, ok := strings.Cut(ref, ":-"); ok && varName().MatchString(name) {
		if strings.Contains(def, "${") {
			// The reference ends at the first "}", so a nested one would
			// be cut in half.
			x.fail(path, fmt.Sprintf("the default of ${%s:-…} cannot hold a reference", name))
			return "", false
		}
		if v, set := x.lookup(name); set {
			return v, true
		}
		return def, true
	}
	kind, arg, hasKind := strings.Cut(ref, ":")
	if !hasKind {
		kind, arg = "", ref
	}
	switch kind {
	case "", "env":
		if !varName().MatchString(arg) {
			x.fail(path, fmt.Sprintf("%s is not a valid variable reference (use ${NAME} with letters, digits and _)", strconv.Quote("${"+ref+"}")))
			return "", false
		}
		v, ok := x.lookup(arg)
		if !ok {
			msg := fmt.Sprintf("environment variable %s is not set", arg)
			if editorOnlyVars[arg] {
				msg += fmt.Sprintf(" (${%s} is an editor variable: write the path itself)", arg)
			}
			x.fail(path, msg)
			return "", false
		}
		return v, true
	case "file":
		if arg == "" {
			x.fail(path, "${file:} needs a path")
			return "", false
		}
		p := arg
		if !filepath.IsAbs(p) {
			p = filepath.Join(x.baseDir, p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			// The path is the user's own text; the OS error never holds the content.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			x.fail(path, fmt.Sprintf("cannot read secret file %s: %v", arg, err))
			return "", false
		}
		s := strings.TrimSuffix(string(data), "\n")
		return strings.TrimSuffix(s, "\r"), true
	case "input":
		x.fail(path, fmt.Sprintf("${input:%s} is not supported (VS Code prompts for inputs; toolgate cannot): use ${NAME} and set NAME in the environment", arg))
		return "", false
	default:
		x.fail(path, fmt.Sprintf("${%s:…} is not supported (use ${NAME}, ${NAME:-default}, ${env:NAME} or ${file:PATH})", kind))
		return "", false
	}
}

func (x *expander) fail(path, msg string) {
	x.errs = append(x.errs, FieldError{Path: path, Message: msg})
}

// walk returns v with every string value expanded. Map keys are left alone:
// they name things (env variables, headers, scopes) and never hold secrets.
func (x *expander) walk(path string, v any) any {
	switch v := v.(type) {
	case string:
		if s, ok := x.expand(path, v); ok {
			return expanded(s)
		} else if s != v {
			return s
		}
		return v
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys) // errors in a stable order
		for _, k := range keys {
			v[k] = x.walk(joinKey(path, k), v[k])
		}
		return v
	case []any:
		for i := range v {
			v[i] = x.walk(fmt.Sprintf("%s[%d]", path, i), v[i])
		}
		return v
	default:
		return v
	}
}

func (x *expander) str(path string, s *string) {
	*s, _ = x.expand(path, *s)
}

func (x *expander) secret(path string, s *Secret) {
	v, _ := x.expand(path, string(*s))
	*s = Secret(v)
}

// upstream expands the string fields an mcpServers file can set.
func (x *expander) upstream(path string, u *Upstream) {
	x.str(path+".command", &u.Command)
	for i := range u.Args {
		x.str(fmt.Sprintf("%s.args[%d]", path, i), &u.Args[i])
	}
	x.str(path+".cwd", &u.Cwd)
	x.str(path+".url", &u.URL)
	for _, k := range sortedKeys(u.Env) {
		v := u.Env[k]
		x.secret(path+".env."+k, &v)
		u.Env[k] = v
	}
	for _, k := range sortedKeys(u.Headers) {
		v := u.Headers[k]
		x.secret(path+".headers."+k, &v)
		u.Headers[k] = v
	}
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// expandHome replaces a leading "~" with home.
func expandHome(p, home string) string {
	if home == "" {
		return p
	}
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`) {
		return filepath.Join(home, p[2:])
	}
	return p
}
