package schema

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/toolgate/toolgate/core/jsontree"
	"github.com/toolgate/toolgate/core/schema/ecma"
	"github.com/toolgate/toolgate/core/schema/redos"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ErrSchemaInvalid is wrapped by every error CompileSchema returns (IM-18).
// A schema refused by the pattern screen matches it too, and also matches
// ErrDangerousPattern (IM-19).
var ErrSchemaInvalid = errors.New("schema does not compile")

// Schema is a compiled JSON Schema with its raw bytes kept verbatim (IM-17).
// It is immutable and safe for concurrent use.
type Schema struct {
	raw      json.RawMessage
	compiled *jsonschema.Schema
}

// defaultInputSchema stands in for a tool that advertises no input schema.
var defaultInputSchema = json.RawMessage(`{"type":"object"}`)

// schemaLocation names the document inside the compiler. A relative "$ref"
// resolves against it and is then refused by refuseLoader.
const schemaLocation = "toolgate:///inputSchema.json"

// CompileSchema compiles a tool's input schema. Draft 2020-12 is assumed
// unless "$schema" names another draft the library knows (draft-07 among
// them). The document must be a JSON object, must not reach outside itself
// ("$ref" to a URL or a file, or an unknown "$schema"), every pattern must
// compile on Go's regexp after ECMA-262 escapes are translated, and no
// pattern may fail the backtracking screen; otherwise the error wraps
// ErrSchemaInvalid, and for the screen it is a *DangerousPatternError.
//
// Nil or empty raw stands for {"type":"object"}.
//
// Results are cached by the exact bytes (and the default draft), within a
// bound on entries and estimated memory, least recently used out first:
// upstreams list many tools with one schema, and a refresh lists the same
// schemas again. A refusal is cached like a success, since it depends on the
// bytes alone; the same error value is returned again, so it must not be
// changed.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = defaultInputSchema
	}
	return compileCached(raw, jsonschema.Draft2020)
}

// schemaKey identifies one compilation: the bytes' SHA-256, the draft
// assumed when "$schema" names none, and the pattern screen's budget.
type schemaKey struct {
	sum    [sha256.Size]byte
	draft  string
	budget int
}

// compiled is one cached compilation; raw is compared on a hit, so a hash
// collision can never hand out another document's schema.
type compiled struct {
	raw    []byte
	schema *Schema
	err    error
}

// Bounds of the caches: entries, and an estimate of the memory they keep.
// A compiled schema keeps 10 to 30 times its text (measured on
// testdata/schemas), a compiled pattern less. A value estimated above a
// tenth of the bound is computed but not cached.
const (
	schemaCacheEntries  = 2048
	schemaCacheBytes    = 16 << 20
	patternCacheEntries = 4096
	patternCacheBytes   = 4 << 20
	verdictCacheBytes   = 1 << 20
)

func schemaCost(raw []byte) int { return 4<<10 + 24*len(raw) }

func patternCost(pattern string) int { return 1<<10 + 16*len(pattern) }

func verdictCost(pattern string) int { return 64 + 2*len(pattern) }

var schemaCache = newLRU[schemaKey, compiled](schemaCacheEntries, schemaCacheBytes)

func compileCached(raw []byte, draft *jsonschema.Draft) (*Schema, error) {
	key := schemaKey{sum: sha256.Sum256(raw), draft: draft.String(), budget: redos.ScreenWorkBudget}
	c := schemaCache.do(key, schemaCost(raw), func() compiled {
		s, err := compileSchema(raw, draft)
		if err != nil {
			return compiled{raw: bytes.Clone(raw), err: err}
		}
		return compiled{raw: s.raw, schema: s}
	})
	if !bytes.Equal(c.raw, raw) {
		return compileSchema(raw, draft) // a SHA-256 collision: never seen, but never wrong
	}
	return c.schema, c.err
}

// compileSchema is CompileSchema without the cache.
func compileSchema(raw json.RawMessage, draft *jsonschema.Draft) (*Schema, error) {
	raw = bytes.Clone(raw)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %v", ErrSchemaInvalid, err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, fmt.Errorf("%w: an input schema must be a JSON object, not %s", ErrSchemaInvalid, jsonKind(doc))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(draft)
	c.UseLoader(refuseLoader{})
	c.UseRegexpEngine(ecmaRegexpEngine)
	if err := c.AddResource(schemaLocation, doc); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSchemaInvalid, oneLine(err))
	}
	compiled, err := c.Compile(schemaLocation)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSchemaInvalid, compileErrorText(err))
	}
	found, verdict := screenDocument(raw)
	found = append(found, screenCompiled(compiled, found, verdict)...)
	if len(found) > 0 {
		return nil, found[0]
	}
	return &Schema{raw: raw, compiled: compiled}, nil
}

// screenCompiled screens the patterns of every schema the compiled one can
// reach, skipping places already reported and reusing verdicts already
// reached. The document walk cannot follow every reference on its own
// ("$id"-relative ones, say); the compiler has.
func screenCompiled(root *jsonschema.Schema, reported []*DangerousPatternError, verdict map[string]string) []*DangerousPatternError {
	done := map[string]bool{}
	for _, d := range reported {
		done[d.Pointer] = true
	}
	var found []*DangerousPatternError
	check := func(pattern, ptr string) {
		if done[ptr] {
			return
		}
		done[ptr] = true
		reason, seen := verdict[pattern]
		if !seen {
			reason = screenCached(pattern)
			verdict[pattern] = reason
		}
		if reason != "" {
			found = append(found, &DangerousPatternError{Pointer: ptr, Pattern: pattern, Reason: reason})
		}
	}
	visited := map[*jsonschema.Schema]bool{}
	var walk func(s *jsonschema.Schema)
	walkAny := func(v any) {
		switch v := v.(type) {
		case *jsonschema.Schema:
			walk(v)
		case []*jsonschema.Schema:
			for _, s := range v {
				walk(s)
			}
		}
	}
	walk = func(s *jsonschema.Schema) {
		if s == nil || visited[s] {
			return
		}
		visited[s] = true
		if s.Pattern != nil {
			check(s.Pattern.String(), locationPointer(s.Location)+"/pattern")
		}
		for re, sub := range s.PatternProperties {
			check(re.String(), locationPointer(sub.Location))
			walk(sub)
		}
		for _, sub := range []*jsonschema.Schema{
			s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames,
			s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema,
		} {
			walk(sub)
		}
		if s.DynamicRef != nil {
			walk(s.DynamicRef.Ref)
		}
		for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
			walkAny(list)
		}
		for _, m := range []map[string]*jsonschema.Schema{s.Properties, s.DependentSchemas} {
			for _, sub := range m {
				walk(sub)
			}
		}
		for _, dep := range s.Dependencies {
			walkAny(dep)
		}
		walkAny(s.AdditionalProperties)
		walkAny(s.Items)
		walkAny(s.AdditionalItems)
	}
	walk(root)
	// Maps were visited in random order.
	slices.SortFunc(found, func(a, b *DangerousPatternError) int { return strings.Compare(a.Pointer, b.Pointer) })
	return found
}

// locationPointer turns a compiled schema's location into a JSON pointer
// into the document.
func locationPointer(loc string) string {
	_, frag, _ := strings.Cut(loc, "#")
	if f, err := url.PathUnescape(frag); err == nil {
		return f
	}
	return frag
}

// FieldError is one reason arguments were refused.
type FieldError struct {
	// Pointer is an RFC 6901 JSON pointer into the arguments; "" is the
	// whole document.
	Pointer string
	Message string
}

// ValidationError lists why arguments do not match a schema, ordered by
// pointer.
type ValidationError struct {
	Errors []FieldError
}

var englishPrinter = message.NewPrinter(language.English)

// leafErrors flattens the library's error tree to its leaves: the groups
// above them (anyOf, $ref, properties) only say that something below failed.
func leafErrors(root *jsonschema.ValidationError) []FieldError {
	var out []FieldError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, FieldError{
				Pointer: jsonPointer(e.InstanceLocation),
				Message: e.ErrorKind.LocalizedString(englishPrinter),
			})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(root)
	slices.SortFunc(out, func(a, b FieldError) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out)
}

func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(jsontree.PointerEscaper.Replace(t))
	}
	return b.String()
}

// compileErrorText renders a compile error on one line; a schema that fails
// its metaschema lists the failing places.
func compileErrorText(err error) string {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		var parts []string
		for _, fe := range leafErrors(ve) {
			p := fe.Pointer
			if p == "" {
				p = "/"
			}
			parts = append(parts, p+": "+fe.Message)
		}
		return "not a valid schema: " + strings.Join(parts, "; ")
	}
	return oneLine(err)
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "a number"
	}
}

// refuseLoader keeps compilation inside the document: the library's default
// would read local files, and an upstream must not make the gateway do that.
type refuseLoader struct{}

// ecmaRegexpEngine compiles schema patterns, which are ECMA-262 (IM-17):
// on Go's regexp where the translation is exact, on regexp2 in ECMAScript
// mode with a match timeout for lookarounds and backreferences. A pattern
// neither compiles drops the tool (IM-18). Compiled patterns are cached by
// their source: both are safe for concurrent use, and many schemas share
// their patterns.
func ecmaRegexpEngine(pattern string) (jsonschema.Regexp, error) {
	c := regexpCache.do(pattern, patternCost(pattern), func() compiledPattern {
		re, err := ecma.Compile(pattern)
		return compiledPattern{re: re, err: err}
	})
	if c.err != nil {
		return nil, c.err
	}
	return c.re, nil
}

type compiledPattern struct {
	re  ecma.Regexp
	err error
}

var regexpCache = newLRU[string, compiledPattern](patternCacheEntries, patternCacheBytes)

// screenKey is one screen verdict: the pattern and the work budget it was
// screened under.
type screenKey struct {
	pattern string
	budget  int
}

var screenCache = newLRU[screenKey, string](patternCacheEntries, verdictCacheBytes)

// screenCached is ScreenPattern's reason ("" when safe), cached: the screen
// of one pattern can cost up to its whole work budget.
func screenCached(pattern string) string {
	return screenCache.do(screenKey{pattern, redos.ScreenWorkBudget}, verdictCost(pattern), func() string {
		reason, _ := redos.ScreenPattern(pattern)
		return reason
	})
}

// lru is a bounded, concurrency-safe cache of computed values: at most
// maxEntries values and maxCost total cost, least recently used evicted
// first. Concurrent misses on one key compute it once.
type lru[K comparable, V any] struct {
	maxEntries, maxCost int

	mu      sync.Mutex
	cost    int
	order   list.List // of *lruItem[K, V], most recently used first
	items   map[K]*list.Element
	pending map[K]*lruFlight[V]
}

type lruItem[K comparable, V any] struct {
	key  K
	val  V
	cost int
}

type lruFlight[V any] struct {
	done chan struct{}
	val  V
	ok   bool // false: the computation panicked; a waiter computes itself
}

func newLRU[K comparable, V any](maxEntries, maxCost int) *lru[K, V] {
	return &lru[K, V]{maxEntries: maxEntries, maxCost: maxCost, items: map[K]*list.Element{}, pending: map[K]*lruFlight[V]{}}
}

// Raw returns the schema exactly as given to CompileSchema, or the default
// when none was given. The slice is a copy.
func (s *Schema) Raw() json.RawMessage { return bytes.Clone(s.raw) }

// Validate checks tool-call arguments against the schema. Empty args stand
// for {}. The error is nil or a *ValidationError.
func (s *Schema) Validate(args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := decodeInstance(args)
	if err != nil {
		return &ValidationError{Errors: []FieldError{{Message: "arguments are not valid JSON: " + err.Error()}}}
	}
	err = s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Errors: []FieldError{{Message: err.Error()}}}
	}
	return &ValidationError{Errors: leafErrors(ve)}
}

func (e *ValidationError) Error() string {
	if len(e.Errors) == 0 {
		return "arguments do not match the input schema"
	}
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		p := fe.Pointer
		if p == "" {
			p = "/"
		}
		parts[i] = p + ": " + fe.Message
	}
	return strings.Join(parts, "; ")
}

func (refuseLoader) Load(string) (any, error) {
	return nil, errors.New("references outside the schema document are not followed")
}

// do returns the value cached under k, or computes it with f and caches it
// if cost fits.
func (c *lru[K, V]) do(k K, cost int, f func() V) V {
	c.mu.Lock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		v := e.Value.(*lruItem[K, V]).val
		c.mu.Unlock()
		return v
	}
	if fl, ok := c.pending[k]; ok {
		c.mu.Unlock()
		<-fl.done
		if fl.ok {
			return fl.val
		}
		return f()
	}
	fl := &lruFlight[V]{done: make(chan struct{})}
	c.pending[k] = fl
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, k)
		if fl.ok {
			c.addLocked(k, fl.val, cost)
		}
		c.mu.Unlock()
		close(fl.done)
	}()
	fl.val = f()
	fl.ok = true
	return fl.val
}

func (c *lru[K, V]) addLocked(k K, v V, cost int) {
	if cost > c.maxCost/10 {
		return
	}
	c.items[k] = c.order.PushFront(&lruItem[K, V]{key: k, val: v, cost: cost})
	c.cost += cost
	for c.order.Len() > c.maxEntries || c.cost > c.maxCost {
		e := c.order.Back()
		it := e.Value.(*lruItem[K, V])
		c.order.Remove(e)
		delete(c.items, it.key)
		c.cost -= it.cost
	}
}

// len returns the number of cached values and their total cost.
func (c *lru[K, V]) len() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len(), c.cost
}

// ErrNotObjectSchema: a tool's arguments are a JSON object, so an input
// schema whose root has another type describes a tool no MCP client can
// call (IM-36).
var ErrNotObjectSchema = errors.New(`input schema's root is not an object schema ("type" must be "object" or absent)`)

// CheckObjectRoot accepts an input schema whose root is an object schema or
// says nothing of its type (`{}`, `true`, no "type"): those are served with
// "type":"object" added. Anything else is ErrNotObjectSchema.
func CheckObjectRoot(raw json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "true" {
		return nil
	}
	var root map[string]json.RawMessage
	if t[0] != '{' || json.Unmarshal(t, &root) != nil {
		return ErrNotObjectSchema
	}
	typ, ok := root["type"]
	if !ok {
		return nil
	}
	var s string
	if json.Unmarshal(typ, &s) != nil || s != "object" {
		return ErrNotObjectSchema
	}
	return nil
}
