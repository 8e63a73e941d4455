// Package ecma translates ECMA-262 regular expressions, the dialect JSON
// Schema's pattern is written in, into RE2 syntax: for validation with Go's
// regexp where the two agree, and, in a screening mode, into a tree the
// catastrophic-backtracking screen can analyse (lookarounds lifted out,
// backreferences approximated, large counts made unbounded).
package ecma
