// Package memory is an in-memory core.Store: approvals, the spent-token
// ledger and the audit log, gone when the process ends. It serves check and
// tools, which must not create a store file, and tests.
package memory
