package config

import "github.com/goccy/go-yaml"

// Dump renders the effective config as YAML with every secret shown as
// ••• (IM-5), for `toolgate check` and debugging.
func Dump(c *Config) ([]byte, error) {
	shown := *c
	// The store is a plain string, as paths are; only a URL's password
	// is secret.
	shown.Gateway.Store = RedactStore(c.Gateway.Store)
	return yaml.MarshalWithOptions(&shown, yaml.IndentSequence(true))
}
