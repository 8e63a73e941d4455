// Package schema compiles tool input schemas (JSON Schema 2020-12 by
// default, draft-07 when a schema says so) and validates arguments against
// them (IM-17, IM-18). Remote and file references are refused, patterns are
// ECMA-262, and every pattern in a document is screened for catastrophic
// backtracking before the schema is accepted (IM-19). Compiled schemas and
// verdicts are cached by their exact bytes.
package schema
