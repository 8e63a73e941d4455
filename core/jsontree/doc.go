// Package jsontree decodes JSON into a tree that keeps object members in
// document order and knows each node's JSON pointer, for the walkers that
// must report where in a schema they found something (the pattern screen and
// the review scanner).
package jsontree
