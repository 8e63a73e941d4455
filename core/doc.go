// Package core is toolgate's vocabulary: tools, actors, calls and results;
// the registry every tool is served from and its gates (roles, allow-lists,
// enabled, review); names; the event bus and the snapshot every view starts
// from; sessions; and the interfaces the rest is built against — Upstream,
// Store, Console. Behaviour lives in packages of its own beside it (importer,
// schema, review, confirm, canonjson) and imports core, never the other way.
// core imports no protocol or transport code, so it is tested with in-memory
// fakes and the console can drive a remote gateway through the same types.
package core
