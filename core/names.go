package core

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxToolNameLen is the strictest tool-name length among the major model
// providers; together with the character set below it is the rule every
// served name satisfies (IM-12).
const MaxToolNameLen = 64

// nameHashLen is how many hex digits of the original name's hash a truncated
// name keeps: 8 digits (32 bits) make an accidental clash between two long
// names of one upstream unlikely, and the registry still reports one if it
// happens.
const nameHashLen = 8

// ToolName builds the registry name of an imported tool: "<prefix>_<remote>"
// (IM-11), reshaped to ^[a-zA-Z0-9_-]{1,64}$ (IM-12). An empty prefix opts out
// of prefixing.
func ToolName(prefix, remoteName string) string {
	full := remoteName
	if prefix != "" {
		full = prefix + "_" + remoteName
	}
	return ReshapeName(full)
}

// ReshapeName maps any string onto ^[a-zA-Z0-9_-]{1,64}$. Every other rune
// becomes one '_'. A result longer than 64 bytes is cut and ends in '_' plus a
// short hash of the whole original, so the same input always gives the same
// name across restarts (a stored tool call refers to a tool by this name) and
// two long names sharing a 55-byte head still differ.
func ReshapeName(original string) string {
	var b strings.Builder
	b.Grow(len(original))
	for _, r := range original {
		if validNameRune(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	switch {
	case name == "":
		return "_" + nameHash(original)
	case len(name) > MaxToolNameLen:
		keep := MaxToolNameLen - 1 - nameHashLen
		return name[:keep] + "_" + nameHash(original)
	}
	return name
}

// ValidToolName reports whether name already satisfies IM-12.
func ValidToolName(name string) bool {
	if name == "" || len(name) > MaxToolNameLen {
		return false
	}
	for _, r := range name {
		if !validNameRune(r) {
			return false
		}
	}
	return true
}

func validNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

func nameHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:nameHashLen]
}
