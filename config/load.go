package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

// keyDelim separates levels in koanf's flattened key paths. Keys such as
// rolesFromScopes' `tools.admin` contain dots, and `tools` is both a key and
// a prefix of it there, so the usual "." would split them; NUL cannot occur
// in a YAML key anyone writes.
const keyDelim = "\x00"

// LoadOptions configures Load. The zero value reads the process environment.
type LoadOptions struct {
	// LookupEnv resolves ${VAR} references. Default: derived from Environ
	// when that is set, else os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Environ lists KEY=VALUE pairs scanned for TOOLGATE_… overrides.
	// Default: os.Environ.
	Environ func() []string
	// HomeDir replaces a leading "~" in paths. Default: os.UserHomeDir.
	HomeDir string
	// Version is the default endpoint version. Default: the module version
	// of the running binary, or "dev".
	Version string
}

func (o LoadOptions) withDefaults() LoadOptions {
	if o.Environ == nil {
		o.Environ = os.Environ
		if o.LookupEnv == nil {
			o.LookupEnv = os.LookupEnv
		}
	}
	if o.LookupEnv == nil {
		vars := map[string]string{}
		for _, kv := range o.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
		o.LookupEnv = func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	if o.HomeDir == "" {
		o.HomeDir, _ = os.UserHomeDir()
	}
	if o.Version == "" {
		o.Version = BuildVersion()
	}
	return o
}

// BuildVersion is the running binary's module version, or "dev" for a
// build from a work tree.
func BuildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// DefaultPath is the config file used when none is named (OP-1):
// ./toolgate.yaml, else toolgate/toolgate.yaml in the user config dir, else
// "" (no config: the CLI starts the demo).
func DefaultPath() string {
	candidates := []string{"./toolgate.yaml"}
	if dir, err := os.UserConfigDir(); err == nil {
		candidates = append(candidates, filepath.Join(dir, "toolgate", "toolgate.yaml"))
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Load reads, interpolates, overrides, decodes, completes and validates the
// config file at path (OP-1):
//
//  1. parse the YAML (a syntax error is a *SyntaxError with line and column);
//  2. substitute ${VAR} in string values (see expander);
//  3. apply the environment overrides of the key table (Keys), which win
//     over the file;
//  4. decode strictly: unknown keys and wrong types are errors naming the key;
//  5. append the upstreams of upstreamsFrom (OP-2);
//  6. fill defaults (SetDefaults) and Validate.
//
// Problems of steps 2–6 come back as a *ValidationErrors listing all of
// them. When only validation fails, the decoded Config is returned with the
// error, so `toolgate check` can still report on it. An empty path returns
// ErrNoConfig.
func Load(path string, opts LoadOptions) (*Config, []Warning, error) {
	if path == "" {
		return nil, nil, ErrNoConfig
	}
	o := opts.withDefaults()
	baseDir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}

	k := koanf.New(keyDelim)
	if err := k.Load(file.Provider(path), yamlParser{}); err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			se.File = path
			return nil, nil, se
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in the message
		}
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}

	var problems ValidationErrors
	x := &expander{lookup: o.LookupEnv, baseDir: baseDir}
	raw := x.walk("", k.Raw()).(map[string]any)
	problems.Errors = append(problems.Errors, x.errs...)
	// Merging the expanded tree over the parsed one replaces every leaf.
	if err := k.Load(confmap.Provider(raw, ""), nil); err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}

	ov := newOverrides(o.Environ(), func(path string) bool { return k.Exists(strings.ReplaceAll(path, ".", keyDelim)) })
	ov.notMapping = func(path string) bool {
		v := k.Get(strings.ReplaceAll(path, ".", keyDelim))
		_, isMap := v.(map[string]any)
		return v != nil && !isMap
	}
	if err := k.Load(env.Provider(keyDelim, env.Opt{
		Prefix:        "", // matched case-insensitively in the transform
		TransformFunc: ov.transform,
		EnvironFunc:   o.Environ,
	}), nil); err != nil {
		return nil, nil, fmt.Errorf("config %s: environment overrides: %w", path, err)
	}
	problems.Errors = append(problems.Errors, ov.errs...)

	cfg := &Config{}
	if err := k.UnmarshalWithConf("", cfg, koanf.UnmarshalConf{DecoderConfig: decoderConfig()}); err != nil {
		problems.Errors = append(problems.Errors, decodeErrors(err)...)
	}
	if len(problems.Errors) > 0 {
		sortFieldErrors(problems.Errors)
		return nil, nil, &problems
	}

	cfg.resolvePaths(baseDir, o.HomeDir)
	var skipped []Warning
	if cfg.UpstreamsFrom != "" {
		var ups []Upstream
		var errs []FieldError
		ups, skipped, errs = loadUpstreamsFrom(cfg.UpstreamsFrom, baseDir, o)
		if len(errs) > 0 {
			return nil, nil, &ValidationErrors{Errors: errs}
		}
		cfg.Upstreams = append(cfg.Upstreams, ups...)
	}

	warnings := append(append(ov.warnings, skipped...), cfg.SetDefaults(o.Version)...)
	more, err := cfg.Validate()
	return cfg, append(warnings, more...), err
}

// resolvePaths makes file paths absolute: "~" is the home directory and a
// relative path is relative to the config file, not to wherever the gateway
// happens to be started.
func (c *Config) resolvePaths(baseDir, home string) {
	abs := func(p string) string {
		if p == "" {
			return p
		}
		p = expandHome(p, home)
		if !filepath.IsAbs(p) {
			p = filepath.Join(baseDir, p)
		}
		return p
	}
	c.UpstreamsFrom = abs(c.UpstreamsFrom)
	if s := c.Gateway.Store; s != "" && !strings.Contains(s, "://") {
		c.Gateway.Store = abs(s)
	}
	for i := range c.Upstreams {
		c.Upstreams[i].Cwd = abs(c.Upstreams[i].Cwd)
		if o := c.Upstreams[i].OAuth; o != nil {
			o.ClientKeyFile = abs(o.ClientKeyFile)
		}
	}
	if c.Audit.Export.Path != "-" {
		c.Audit.Export.Path = abs(c.Audit.Export.Path)
	}
}

// loadUpstreamsFrom reads an mcpServers file and expands its references.
// Its upstreams are named `upstreamsFrom[<name>]` in error paths. A server
// the file disables is a warning; one that cannot be imported is an error,
// like any invalid value of a config (OP-1): import-config is the lenient
// path.
func loadUpstreamsFrom(p, configDir string, o LoadOptions) ([]Upstream, []Warning, []FieldError) {
	data, err := os.ReadFile(p)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, []FieldError{{Path: "upstreamsFrom", Message: fmt.Sprintf("cannot read %s: %v", relTo(configDir, p), err)}}
	}
	imp, err := ParseMCPServers(data, filepath.Dir(p))
	if err != nil {
		return nil, nil, []FieldError{{Path: "upstreamsFrom", Message: fmt.Sprintf("%s: %v", relTo(configDir, p), err)}}
	}
	var warnings []Warning
	var errs []FieldError
	for _, s := range imp.Skipped {
		if s.Disabled {
			warnings = append(warnings, Warning{Path: "upstreamsFrom", Message: fmt.Sprintf("%s: skipped %s", relTo(configDir, p), s)})
		} else {
			errs = append(errs, FieldError{Path: "upstreamsFrom", Message: fmt.Sprintf("%s: %s", relTo(configDir, p), s)})
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	ups := imp.Upstreams
	x := &expander{lookup: o.LookupEnv, baseDir: filepath.Dir(p)}
	for i := range ups {
		u := &ups[i]
		u.From = "upstreamsFrom[" + u.Name + "]"
		x.upstream(u.From, u)
		u.Cwd = expandHome(u.Cwd, o.HomeDir)
	}
	return ups, warnings, x.errs
}

// relTo shows p relative to dir when it lies below it, so messages stay
// short and do not depend on where the tree is checked out.
func relTo(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// yamlParser is a koanf.Parser on goccy/go-yaml, which reports the column
// of a syntax error as well as the line.
type yamlParser struct{}

func (yamlParser) Unmarshal(b []byte) (map[string]any, error) {
	f, err := parser.ParseBytes(b, 0)
	if err != nil {
		// Configs copied from older docs write
		// `env: {GITHUB_TOKEN: ${GITHUB_TOKEN}}`, which YAML refuses ("{" and "}" are flow indicators). Operators copy that
		// example, so a whole-scalar ${VAR} in a flow collection is quoted and
		// the file parsed again; only if that fails too is the error shown.
		quoted := b
		// Adjacent matches share a "," so one pass can miss every other one.
		for range 8 {
			next := unquotedFlowVar().ReplaceAll(quoted, []byte(`$1"$2"$3`))
			if string(next) == string(quoted) {
				break
			}
			quoted = next
		}
		if string(quoted) == string(b) {
			return nil, syntaxError(err)
		}
		if f, err = parser.ParseBytes(quoted, 0); err != nil {
			return nil, syntaxError(err)
		}
		b = quoted
	}
	// A second document would otherwise be dropped without a word.
	for _, doc := range f.Docs[min(1, len(f.Docs)):] {
		if doc.Body == nil {
			continue
		}
		se := &SyntaxError{Message: "more than one YAML document; toolgate reads one"}
		if tk := doc.Start; tk != nil && tk.Position != nil {
			se.Line, se.Column = tk.Position.Line, tk.Position.Column
		}
		return nil, se
	}
	var m map[string]any
	if err := yaml.UnmarshalWithOptions(b, &m); err != nil {
		return nil, syntaxError(err)
	}
	if m == nil {
		m = map[string]any{} // an empty file is a valid, empty config
	}
	return m, nil
}

func (yamlParser) Marshal(m map[string]any) ([]byte, error) {
	return yaml.Marshal(m)
}

// unquotedFlowVar finds a ${VAR} that is a whole plain scalar inside a flow
// mapping or sequence: after "{", "[", "," or ":" and before ",", "}" or "]".
var unquotedFlowVar = lazyRegexp(`([{\[,:][ \t]*)(\$\{[A-Za-z_][A-Za-z0-9_]*(?::[^{}"'\s,\]]+)?\})([ \t]*[,}\]])`)

// syntaxError keeps the parser's position and message but drops the source
// excerpt that goccy's Error() appends.
func syntaxError(err error) *SyntaxError {
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return &SyntaxError{Message: "invalid YAML"}
	}
	// A literal tab in the message would be invisible.
	se := &SyntaxError{Message: strings.ReplaceAll(ye.GetMessage(), "\t", `\t`)}
	var nt *yaml.UnexpectedNodeTypeError
	if errors.As(err, &nt) {
		se.Message = "the top level must be a mapping (gateway:, endpoints:, upstreams:)"
	}
	if tk := ye.GetToken(); tk != nil && tk.Position != nil {
		se.Line, se.Column = tk.Position.Line, tk.Position.Column
	}
	return se
}

// overrides applies the TOOLGATE_… variables of the key table (Keys) over
// the file. Anything else named TOOLGATE_… is ignored; such variables
// usually feed ${VAR} references (TOOLGATE_ADMIN_KEY).
type overrides struct {
	byName map[string]EnvOverride // by upper-case name
	// set holds the upper-case names of the variables that are set and not
	// empty; fileHas reports whether the file sets a key.
	set     map[string]bool
	fileHas func(path string) bool
	// notMapping reports whether the file gives path a value that is not
	// a mapping (`gateway: 8080`).
	notMapping func(path string) bool
	errs       []FieldError
	warnings   []Warning
}

func newOverrides(environ []string, fileHas func(string) bool) *overrides {
	ov := &overrides{byName: map[string]EnvOverride{}, set: map[string]bool{}, fileHas: fileHas}
	for _, o := range EnvOverrides() {
		ov.byName[o.Name] = o
	}
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok && value != "" {
			ov.set[strings.ToUpper(name)] = true
		}
	}
	return ov
}

// transform maps an environment variable to a koanf key and typed value, or
// to "" to skip it. Variable names match case-insensitively. An empty value
// is skipped: `TOOLGATE_GATEWAY_LISTEN= toolgate serve` should not blank out
// the file's setting. A deprecated name applies only where its successor
// would not: neither that variable nor the file sets the key (a file that
// names the old variable in ${…} already has its value).
func (ov *overrides) transform(name, value string) (string, any) {
	o, ok := ov.byName[strings.ToUpper(name)]
	if !ok || value == "" {
		return "", nil
	}
	path := o.Key.Path
	// Under a parent the file wrote as something else than a mapping, an
	// override would replace that value with a mapping of its own and the
	// error about it would be lost.
	for i := strings.LastIndexByte(path, '.'); i > 0; i = strings.LastIndexByte(path[:i], '.') {
		if ov.notMapping(path[:i]) {
			return "", nil
		}
	}
	if o.Deprecated {
		if ov.set[o.Key.Env] || ov.fileHas(path) {
			return "", nil
		}
		ov.warnings = append(ov.warnings, Warning{Path: path, Message: fmt.Sprintf("%s is an old name that will stop working: set %s instead", o.Name, o.Key.Env)})
	}
	v, msg := envValue(typeAt(reflect.TypeFor[Config](), path), value)
	if msg != "" {
		ov.errs = append(ov.errs, FieldError{Path: path, Message: strings.ToUpper(name) + " " + msg})
		return "", nil
	}
	return strings.ReplaceAll(path, ".", keyDelim), v
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	secretType   = reflect.TypeFor[Secret]()
)

func decoderConfig() *mapstructure.DecoderConfig {
	return &mapstructure.DecoderConfig{
		DecodeHook:  mapstructure.DecodeHookFuncValue(strictHook),
		ErrorUnused: true,
		TagName:     "koanf",
		// Keys are case-sensitive: `publicURL` is a typo, not an alias.
		MatchName: func(mapKey, fieldName string) bool { return mapKey == fieldName },
	}
}

// strictHook converts what a YAML author means without guessing: integers
// and booleans are accepted where text is expected (`X-Tenant: 42`),
// durations must be Go duration strings (a bare 30 would be 30ns), floats
// must be whole to fill an integer, and a ${VAR} substitution may fill a
// number or boolean field. Anything else is left for mapstructure to refuse.
func strictHook(from, to reflect.Value) (any, error) {
	data := from.Interface()
	tt := to.Type()
	switch {
	case tt == durationType:
		s, ok := asString(data)
		if !ok {
			return nil, fmt.Errorf("expected a duration such as 30s or 15m, got %s", describeValue(data))
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("invalid duration %q (use Go syntax such as 30s or 15m)", s)
		}
		return d, nil
	case tt.Kind() == reflect.String:
		switch d := data.(type) {
		case expanded:
			return string(d), nil
		case int64, uint64, int:
			return fmt.Sprint(d), nil
		case bool:
			return strconv.FormatBool(d), nil
		case float64:
			// Not echoed: 1.0 would print as 1, and the field may be secret.
			return nil, errors.New("expected a string, got a number (quote the value)")
		}
	case tt.Kind() == reflect.Int64:
		switch d := data.(type) {
		case expanded:
			n, err := strconv.ParseInt(string(d), 10, 64)
			if err != nil {
				return nil, errors.New("expected an integer, got a substituted value that is not one")
			}
			return n, nil
		case uint64:
			if d > 1<<63-1 {
				return nil, errors.New("integer out of range")
			}
		case float64:
			if d != float64(int64(d)) {
				return nil, fmt.Errorf("expected an integer, got %v", d)
			}
			return int64(d), nil
		}
	case tt.Kind() == reflect.Bool:
		if d, ok := data.(expanded); ok {
			b, err := strconv.ParseBool(string(d))
			if err != nil {
				return nil, errors.New("expected a boolean (true or false), got a substituted value that is not one")
			}
			return b, nil
		}
	}
	return data, nil
}

func asString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case expanded:
		return string(v), true
	}
	return "", false
}

// describeValue names a decoded YAML value's type, never its content.
func describeValue(v any) string {
	switch v.(type) {
	case nil:
		return "nothing (null)"
	case string, expanded:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64:
		return "an integer"
	case float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}

// describeType names what a Go field expects, in YAML terms.
func describeType(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration such as 30s"
	case t == secretType:
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "an integer"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Pointer:
		return describeType(t.Elem())
	}
	return t.String()
}

// decodeErrors turns mapstructure's joined errors into key-path errors.
func decodeErrors(err error) []FieldError {
	var out []FieldError
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, c := range j.Unwrap() {
				walk(c)
			}
			return
		}
		if de, ok := e.(*mapstructure.DecodeError); ok {
			out = append(out, fieldErrors(keyPath(de.Name()), de.Unwrap())...)
			return
		}
		if u := errors.Unwrap(e); u != nil {
			walk(u)
			return
		}
		out = append(out, FieldError{Message: e.Error()})
	}
	walk(err)
	return out
}

func fieldErrors(path string, err error) []FieldError {
	var ute *mapstructure.UnconvertibleTypeError
	var pe *mapstructure.ParseError
	var sub *subError
	switch {
	case errors.As(err, &ute):
		return []FieldError{{Path: path, Message: fmt.Sprintf("expected %s, got %s", describeType(ute.Expected.Type()), describeValue(ute.Value))}}
	case errors.As(err, &pe):
		return []FieldError{{Path: path, Message: fmt.Sprintf("expected %s", describeType(pe.Expected.Type()))}}
	case errors.As(err, &sub):
		return []FieldError{{Path: path + sub.path, Message: sub.msg}}
	}
	msg := err.Error()
	if keys, ok := strings.CutPrefix(msg, "has invalid keys: "); ok {
		var out []FieldError
		for _, k := range strings.Split(keys, ", ") {
			m := fmt.Sprintf("unknown key %q", k)
			if s := suggestKey(path, k); s != "" {
				m += fmt.Sprintf(" (did you mean %q?)", s)
			}
			out = append(out, FieldError{Path: path, Message: m})
		}
		return out
	}
	if kind, ok := strings.CutPrefix(msg, "source data must be an array or slice, got "); ok {
		return []FieldError{{Path: path, Message: "expected a list, got " + kindWord(kind)}}
	}
	if kind, ok := strings.CutPrefix(msg, "expected a map or struct, got "); ok {
		return []FieldError{{Path: path, Message: "expected a mapping, got " + kindWord(strings.Trim(kind, `"`))}}
	}
	return []FieldError{{Path: path, Message: msg}}
}

// kindWord names a reflect.Kind the way describeValue names values.
func kindWord(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "a boolean"
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "slice", kind == "array":
		return "a list"
	case kind == "map", kind == "struct":
		return "a mapping"
	}
	return kind
}

// suggestKey finds the key the author probably meant: one that differs in
// case only or by at most two edits, among the keys valid at path.
func suggestKey(path, key string) string {
	t := typeAt(reflect.TypeFor[Config](), path)
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	best, bestDist := "", 3
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("koanf"), ",")
		if name == "" || name == "-" {
			continue
		}
		if strings.EqualFold(name, key) {
			return name
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(key)); d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

// typeAt follows a key path through the config's types.
func typeAt(t reflect.Type, path string) reflect.Type {
	for path != "" {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if strings.HasPrefix(path, "[") {
			end := strings.IndexByte(path, ']')
			if end < 0 || (t.Kind() != reflect.Slice && t.Kind() != reflect.Map) {
				return nil
			}
			t, path = t.Elem(), strings.TrimPrefix(path[end+1:], ".")
			continue
		}
		seg := path
		if i := strings.IndexAny(path, ".["); i >= 0 {
			seg, path = path[:i], strings.TrimPrefix(path[i:], ".")
		} else {
			path = ""
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			f, ok := fieldByKey(t, seg)
			if !ok {
				return nil
			}
			t = f
		default:
			return nil
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func fieldByKey(t reflect.Type, key string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("koanf"), ","); name == key {
			return t.Field(i).Type, true
		}
	}
	return nil, false
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// subError is a decode error about a part of a value (an audience list
// item), so the path can point at it.
type subError struct {
	path, msg string
}

func (e *subError) Error() string { return e.path + ": " + e.msg }

// keyPath turns mapstructure's field names into config key paths: the root
// struct's type name becomes "", and map keys written `env[GITHUB_TOKEN]`
// become `env.GITHUB_TOKEN`, leaving list indexes as `[2]`.
func keyPath(name string) string {
	if name == reflect.TypeFor[Config]().String() {
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '[' {
			b.WriteByte(name[i])
			continue
		}
		end := strings.IndexByte(name[i:], ']')
		if end < 0 {
			b.WriteString(name[i:])
			break
		}
		inner := name[i+1 : i+end]
		if inner != "" && digitPrefix(inner) == inner {
			b.WriteString(name[i : i+end+1])
		} else {
			b.WriteString("." + inner)
		}
		i += end
	}
	return b.String()
}
