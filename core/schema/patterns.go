package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/toolgate/toolgate/core/jsontree"
)

var ErrDangerousPattern = errors.New("pattern can backtrack catastrophically")

// DangerousPatternError names one pattern the screen refused.
//
// It also matches ErrSchemaInvalid under errors.Is, because CompileSchema
// refuses a schema that carries one; test ErrDangerousPattern first to tell
// the two apart.
type DangerousPatternError struct {
	// Pointer is an RFC 6901 JSON pointer into the schema document: to the
	// pattern string, or to the patternProperties member whose key is the
	// pattern.
	Pointer string
	Pattern string
	Reason  string
}

// quotePattern quotes a pattern without doubling its backslashes where it can.
func quotePattern(p string) string {
	if strconv.CanBackquote(p) {
		return "`" + p + "`"
	}
	return strconv.Quote(p)
}

// ScreenSchema screens every pattern in a schema document: each "pattern"
// string and each "patternProperties" key in a schema position, at any depth,
// in document order. The values of const, enum, default and examples are
// data and are not entered, unless a "#/…" reference points into them.
// Duplicate keys are all screened, whichever one a client's parser keeps. A
// document that is not valid JSON yields nothing; CompileSchema reports that,
// and also screens whatever other references the compiler resolved.
func ScreenSchema(raw json.RawMessage) []*DangerousPatternError {
	found, _ := screenDocument(raw)
	return found
}

// ScreenServedSchema screens a schema the gateway serves but does not
// validate against, such as a tool's outputSchema: clients check results
// against it with backtracking engines (IM-19). It returns the first
// dangerous pattern, or nil. A schema that compiles is screened as
// CompileSchema screens, following every reference the compiler resolved;
// one that does not (it is passed on as sent, IM-17) is still walked as a
// document. Nil or empty raw carries nothing.
func ScreenServedSchema(raw json.RawMessage) *DangerousPatternError {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	_, err := compileCached(raw, jsonschema.Draft2020)
	var dpe *DangerousPatternError
	if errors.As(err, &dpe) {
		return dpe
	}
	if err != nil {
		if found := ScreenSchema(raw); len(found) > 0 {
			return found[0]
		}
	}
	return nil
}

// screenDocument is ScreenSchema, also returning each distinct pattern's
// verdict (its reason, "" when safe) so that nothing is screened twice.
func screenDocument(raw json.RawMessage) ([]*DangerousPatternError, map[string]string) {
	verdict := map[string]string{}
	root, err := jsontree.DecodeJSONTree(raw)
	if err != nil {
		return nil, verdict
	}
	w := &schemaWalker{verdict: verdict}
	jsontree.WalkSchemaPatterns(root, func(site jsontree.PatternSite) { w.check(site.Pattern, site.Pointer) })
	return w.found, verdict
}

func (e *DangerousPatternError) Error() string {
	at := ""
	if e.Pointer != "" {
		at = " at " + e.Pointer
	}
	return fmt.Sprintf("pattern %s%s can backtrack catastrophically: %s", quotePattern(e.Pattern), at, e.Reason)
}

// Unwrap returns ErrDangerousPattern.
func (e *DangerousPatternError) Unwrap() error { return ErrDangerousPattern }

// Is reports ErrSchemaInvalid as matching; see the type's doc comment.
func (e *DangerousPatternError) Is(target error) bool { return target == ErrSchemaInvalid }
