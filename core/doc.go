// Package core is toolgate's domain: the tool registry, names, schemas, the
// event bus and (later) the importer, confirm gate and review. It imports no
// protocol or transport code, so everything here is testable with in-memory
// fakes and the console can drive a remote gateway through the same types.
package core
