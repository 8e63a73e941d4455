// Package coretest holds test doubles of core's interfaces — an in-memory
// upstream whose tools, answers and failures a test sets — and small helpers
// the tests of several packages share. Nothing in it is used outside tests.
package coretest
