package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrNoConfig is returned by Load for an empty path: there is no config
// file, and the caller decides what that means (the CLI starts the demo).
var ErrNoConfig = errors.New("config: no config file")

// FieldError is one problem with one key. Path is in the form
// `upstreams[2].url` or `endpoints[0].auth.anyOf[1].oauth.issuer`; it is
// empty for a problem with the file as a whole (an unknown top-level key).
// Message never contains a secret value (IM-5).
type FieldError struct {
	Path    string
	Message string
}

func (e FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// ValidationErrors lists every problem found in a config, in file order.
type ValidationErrors struct {
	Errors []FieldError
}

// Error prints one problem per line as `path: message`.
func (e *ValidationErrors) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each FieldError to errors.As.
func (e *ValidationErrors) Unwrap() []error {
	out := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		out[i] = fe
	}
	return out
}

func (e *ValidationErrors) add(path, format string, args ...any) {
	e.Errors = append(e.Errors, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// err returns e as an error, or nil when it holds no problem.
func (e *ValidationErrors) err() error {
	if len(e.Errors) == 0 {
		return nil
	}
	return e
}

// Warning is a problem that does not stop the gateway but that an operator
// should see (e.g. an endpoint that refuses every request, AU-8).
type Warning struct {
	Path    string
	Message string
}

func (w Warning) String() string {
	if w.Path == "" {
		return w.Message
	}
	return w.Path + ": " + w.Message
}

// SyntaxError is a YAML file that does not parse. It carries the position
// but, unlike the parser's own message, never the offending source line:
// that line may hold a secret.
type SyntaxError struct {
	File    string
	Line    int
	Column  int
	Message string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("config %s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
	}
	return fmt.Sprintf("config %s: %s", e.File, e.Message)
}

// sortFieldErrors orders errors as Validate does: the file as a whole,
// then gateway, endpoints, upstreams, upstreamsFrom; within a section by
// path, comparing runs of digits as numbers so upstreams[10] follows
// upstreams[9].
func sortFieldErrors(errs []FieldError) {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i].Path, errs[j].Path
		if ra, rb := sectionRank(a), sectionRank(b); ra != rb {
			return ra < rb
		}
		return naturalLess(a, b)
	})
}

func sectionRank(path string) int {
	for i, s := range []string{"gateway", "endpoints", "upstreams", "upstreamsFrom"} {
		if path == s || strings.HasPrefix(path, s+".") || strings.HasPrefix(path, s+"[") {
			return i + 1
		}
	}
	if path == "" {
		return 0
	}
	return 5
}

func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da != "" && db != "" {
			if len(da) != len(db) {
				return len(da) < len(db)
			}
			if da != db {
				return da < db
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}
