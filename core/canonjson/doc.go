// Package canonjson writes JSON in one canonical form — object members
// sorted by key, no insignificant space, numbers and strings in one spelling —
// so that equal values have equal bytes. The confirm gate binds tokens to it,
// review fingerprints hash it and the audit keys argument hashes on it.
package canonjson
