// Package confirm is the confirm gate for tools with side effects (CF-1..7):
// a first call answers with a preview and a single-use token bound to the
// tool, actor, tenant and canonical arguments; only a second call carrying
// that token runs the action. It also holds the queue of confirmations that
// wait for an operator's decision (CF-5).
package confirm
