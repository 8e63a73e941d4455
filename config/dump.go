package config

import "github.com/goccy/go-yaml"

// Dump renders the effective config as YAML with every secret shown as
// ••• (IM-5), for `toolgate check` and debugging.
func Dump(c *Config) ([]byte, error) {
	return yaml.MarshalWithOptions(c, yaml.IndentSequence(true))
}
