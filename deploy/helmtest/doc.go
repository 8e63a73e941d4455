// Package helmtest checks the Helm chart in deploy/helm/toolgate without a
// cluster (OP-11): it renders the chart with the Helm SDK for several value
// sets, decodes every object strictly into the Kubernetes API types, lints
// it, checks what a reviewer would, and runs the rendered pod contract as
// real `toolgate serve` processes on one PostgreSQL behind a round-robin
// proxy. It lives in a module of its own so the product's module takes none
// of Kubernetes' dependencies; the package has tests only.
package helmtest
