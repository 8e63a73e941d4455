package main

import (
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp"
)

// newUpstream turns one upstream's config into its connection. This is the
// one place secrets leave their config.Secret wrapper.
func newUpstream(u config.Upstream) (core.Upstream, error) {
	opts := mcp.UpstreamOptions{
		Name:          u.Name,
		Command:       u.Command,
		Args:          u.Args,
		Cwd:           u.Cwd,
		URL:           u.URL,
		Transport:     u.Transport,
		Authorization: u.Authorization.Reveal(),
		// IM-10: the whole process group goes when the gateway dies, even
		// by SIGKILL.
		Supervisor: supervisorArgs(),
	}
	if u.Env != nil { // absent and empty differ (IM-3)
		opts.Env = make(map[string]string, len(u.Env))
		for k, v := range u.Env {
			opts.Env[k] = v.Reveal()
		}
	}
	if len(u.Headers) > 0 {
		opts.Headers = make(map[string]string, len(u.Headers))
		for k, v := range u.Headers {
			opts.Headers[k] = v.Reveal()
		}
	}
	if u.Signing != nil && u.Signing.HMACSHA256 != nil {
		opts.Signing = &mcp.HMACSigning{Secret: []byte(u.Signing.HMACSHA256.Secret.Reveal()), Header: u.Signing.HMACSHA256.Header}
	}
	return mcp.NewUpstream(opts)
}
