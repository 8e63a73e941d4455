// Package inspect finds what should not pass through a tool call unread:
// credentials (secrets), personal data (pii), text that addresses the model
// with instructions (injection) and links that would carry data to a host
// the operator does not know (links). (IN-1)
//
// A Finding names the kind, the detector, the JSON path and the byte span of
// what was found; it never holds the value, so a finding can be logged,
// audited, traced and shown as it is. Redact replaces the spans.
//
// The package is pure: no mcp-go, no HTTP, no state between calls. An
// Inspector is safe for concurrent use once built.
package inspect
