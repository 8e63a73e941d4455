// Package idtest finds requirement ids (IM-19, CF-3) in text. Ids belong in
// comments, test names and docs/behaviour.md; tests use this package to
// keep them out of what operators read: flag help, errors, logs, metric
// HELP texts, the console and the user docs.
package idtest

import "regexp"

// Areas are the requirement areas, as docs/behaviour.md heads its sections
// ("## Serving the registry (SV)"), inspection (IN) and discovery (DS)
// included.
var Areas = []string{"IM", "SV", "AU", "CF", "RV", "CO", "OP", "PO", "UI", "IN", "DS", "QB"}

// shape is an id of any area, known or not: two capitals, a dash and a
// number, standing alone (UTF-8 and SHA-256 are not ids).
var shape = regexp.MustCompile(`\b[A-Z]{2}-[0-9]+\b`)

// Find returns the ids in s, in order.
func Find(s string) []string {
	return shape.FindAllString(s, -1)
}
