// Package upstreams imports third-party tools into the registry (IM-1..36):
// it connects to every configured upstream, lists its tools, reshapes their
// names, compiles and screens their schemas, registers what passes in
// configuration order, records what it drops, and refreshes on request or on
// an upstream's list_changed. It also aggregates the upstreams' resources,
// templates and prompts into one catalog (first claimant wins) and routes
// requests for them to their owner.
package upstreams
