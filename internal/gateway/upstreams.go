package gateway

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// specOf is what the importer needs of one upstream's config, with its
// connection built.
func (g *Gateway) specOf(u config.Upstream, hub *serve.Hub) (upstreams.UpstreamSpec, error) {
	up, err := g.upstreamOf(u, hub)
	if err != nil {
		return upstreams.UpstreamSpec{}, fmt.Errorf("upstream %q: %w", u.Name, err)
	}
	return upstreams.UpstreamSpec{
		Name:        u.Name,
		Prefix:      u.EffectivePrefix(),
		Transport:   transportOf(u),
		Include:     u.Include,
		Exclude:     u.Exclude,
		Reads:       u.Reads,
		Actions:     u.Actions,
		DefaultKind: core.Kind(u.DefaultKind),
		Roles:       u.Roles,
		Required:    u.Required,
		Timeout:     u.Timeout,
		Health:      upstreams.HealthCheck{Disabled: !u.Health.On(), Interval: u.Health.Interval, Timeout: u.Health.Timeout},
		Reconnect:   upstreams.Reconnect{Disabled: !u.Reconnect.On(), InitialDelay: u.Reconnect.InitialDelay, MaxDelay: u.Reconnect.MaxDelay},
		Upstream:    up,
	}, nil
}

// upstreamOf builds one upstream's connection: through the OAuth manager
// when it has oauth (UI-1).
func (g *Gateway) upstreamOf(u config.Upstream, hub *serve.Hub) (core.Upstream, error) {
	if u.OAuth != nil {
		return g.oauthUpstreamOf(u, hub)
	}
	return newUpstreamOn(u, hub)
}

// NewUpstream turns one upstream's config into its connection, with no hub
// for resource updates (the bench calls upstreams directly with it).
func NewUpstream(u config.Upstream) (core.Upstream, error) { return newUpstreamOn(u, nil) }

// newUpstreamOn turns one upstream's config into its connection, passing
// its resource updates to hub. This is the one place secrets leave their
// config.Secret wrapper.
func newUpstreamOn(u config.Upstream, hub *serve.Hub) (core.Upstream, error) {
	opts, err := upstreamOptions(u, hub)
	if err != nil {
		return nil, err
	}
	return upstream.New(opts)
}

// upstreamOptions is one upstream's config as the mcp package takes it.
func upstreamOptions(u config.Upstream, hub *serve.Hub) (upstream.Options, error) {
	opts := upstream.Options{
		Name:          u.Name,
		Command:       u.Command,
		Args:          u.Args,
		Cwd:           u.Cwd,
		URL:           u.URL,
		Transport:     u.Transport,
		Authorization: u.Authorization.Reveal(),
		// IM-10: the whole process group goes when the gateway dies, even
		// by SIGKILL.
		Supervisor: SupervisorArgs(),
		Roots:      rootURIs(u.Roots),
		Hub:        hub,
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
		opts.Signing = &upstream.HMACSigning{Secret: []byte(u.Signing.HMACSHA256.Secret.Reveal()), Header: u.Signing.HMACSHA256.Header}
	}
	return opts, nil
}

// rootURIs turns configured roots into the file:// URIs roots/list answers
// with; config validation has made sure each is one or an absolute path.
func rootURIs(roots []string) []string {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if strings.HasPrefix(r, "file://") {
			out = append(out, r)
			continue
		}
		out = append(out, (&url.URL{Scheme: "file", Path: r}).String())
	}
	return out
}

// SupervisorArgs is the upstream.Options.Supervisor of stdio upstreams:
// this binary running its hidden _supervise command, to which the adapter
// appends the upstream's command and args. nil (no supervisor) if the
// binary cannot be found.
func SupervisorArgs() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, "_supervise", "--"}
}

// SelfEnv names the running toolgate binary for ${…} in configs that spawn
// the built-in demo upstreams (`command: ${TOOLGATE_SELF}`).
const SelfEnv = "TOOLGATE_SELF"

// LookupEnv resolves ${VAR} for configs: the process environment, plus
// TOOLGATE_SELF when the environment does not set it.
func LookupEnv(name string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok {
		return v, true
	}
	if name == SelfEnv {
		if exe, err := os.Executable(); err == nil {
			return exe, true
		}
	}
	return "", false
}

func transportOf(u config.Upstream) string {
	if u.Command != "" {
		return "stdio"
	}
	return u.Transport
}
