package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const goodSecret = Secret("0123456789abcdef0123456789abcdef")

// base is a valid config to which each case applies one change.
func base() *Config {
	c := &Config{
		Gateway:   Gateway{Confirm: Confirm{Secret: goodSecret}},
		Endpoints: []Endpoint{{Path: "/mcp", Actor: &Actor{ID: "dev"}}},
		Upstreams: []Upstream{{Name: "github", Command: "mcp-github"}},
	}
	c.SetDefaults("test")
	return c
}

func TestValidateRules(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   []FieldError // nil: valid
	}{
		{"base is valid", func(c *Config) {}, nil},
		{"IM-1 neither", func(c *Config) { c.Upstreams[0].Command = "" },
			[]FieldError{{"upstreams[0]", `upstream "github" needs command (stdio) or url (network)`}}},
		{"IM-1 both", func(c *Config) { c.Upstreams[0].URL = "https://x.example.com" },
			[]FieldError{{"upstreams[0]", `upstream "github" sets both command and url; set exactly one`}}},
		{"IM-2 transport with url ok", func(c *Config) {
			c.Upstreams[0] = Upstream{Name: "s", URL: "http://127.0.0.1:9/mcp", Transport: "sse", DefaultKind: "read", Approval: "client", Timeout: 1,
				Health: Health{Interval: time.Second, Timeout: 1}, Reconnect: Reconnect{InitialDelay: time.Second, MaxDelay: time.Second}}
		}, nil},
		{"IM-11 prefix empty ok", func(c *Config) { c.Upstreams[0].Prefix = ptr("") }, nil},
		{"IM-11 prefix 40 ok", func(c *Config) { c.Upstreams[0].Prefix = ptr(strings.Repeat("p", 40)) }, nil},
		{"IM-11 prefix 41", func(c *Config) { c.Upstreams[0].Prefix = ptr(strings.Repeat("p", 41)) },
			[]FieldError{{"upstreams[0].prefix", `must match ^[a-zA-Z0-9_-]{1,40}$, or be "" for no prefix`}}},
		{"long name ok with explicit prefix", func(c *Config) {
			c.Upstreams[0].Name = strings.Repeat("n", 50)
			c.Upstreams[0].Prefix = ptr("short")
		}, nil},
		{"IM-14 glob", func(c *Config) { c.Upstreams[0].Include = []string{"ok_*", "bad["} },
			[]FieldError{{"upstreams[0].include[1]", `bad glob "bad[": syntax error in pattern`}}},
		{"IM-6 timeout", func(c *Config) { c.Upstreams[0].Timeout = -1 },
			[]FieldError{{"upstreams[0].timeout", "must not be negative (0 or leaving it out means the default, 30s)"}}},
		{"IM-37 health off keeps its defaults valid", func(c *Config) { c.Upstreams[0].Health.Enabled = ptr(false) }, nil},
		{"IM-37 health interval too short", func(c *Config) { c.Upstreams[0].Health.Interval = 500 * time.Millisecond },
			[]FieldError{{"upstreams[0].health.interval", "must be at least 1s"}}},
		{"IM-37 health timeout longer than the interval", func(c *Config) { c.Upstreams[0].Health.Timeout = time.Minute },
			[]FieldError{{"upstreams[0].health.timeout", "must not be longer than health.interval (30s)"}}},
		{"IM-37 reconnect delay too short", func(c *Config) { c.Upstreams[0].Reconnect.InitialDelay = time.Millisecond },
			[]FieldError{{"upstreams[0].reconnect.initialDelay", "must be at least 100ms"}}},
		{"IM-37 reconnect cap below the delay", func(c *Config) { c.Upstreams[0].Reconnect.InitialDelay = time.Minute },
			[]FieldError{{"upstreams[0].reconnect.maxDelay", "must not be shorter than reconnect.initialDelay (1m0s)"}}},
		{"CF-3 no secret, read-only upstream", func(c *Config) {
			c.Gateway.Confirm.Secret = ""
			c.Upstreams[0].DefaultKind = KindRead
		}, nil},
		{"CF-3 no secret, action upstream", func(c *Config) { c.Gateway.Confirm.Secret = "" },
			[]FieldError{{"gateway.confirm.secret", `required because upstream "github" may serve action tools (confirm tokens are signed with it); set it to 32 or more random bytes, e.g. in the environment as TOOLGATE_GATEWAY_CONFIRM_SECRET`}}},
		{"CF-3 secret 31 bytes", func(c *Config) { c.Gateway.Confirm.Secret = goodSecret[:31] },
			[]FieldError{{"gateway.confirm.secret", "must be at least 32 bytes long"}}},
		{"AU-6 origin with port ok", func(c *Config) { c.Gateway.PublicURL = "https://tools.example.com:8443" }, nil},
		{"AU-6 path", func(c *Config) { c.Gateway.PublicURL = "https://tools.example.com/x" },
			[]FieldError{{"gateway.publicUrl", `must be an origin only: remove the path "/x"`}}},
		{"AU-6 empty query", func(c *Config) { c.Gateway.PublicURL = "https://tools.example.com?" },
			[]FieldError{{"gateway.publicUrl", "must be an origin only: remove the query"}}},
		{"AU-6 empty fragment", func(c *Config) { c.Gateway.PublicURL = "https://tools.example.com#" },
			[]FieldError{{"gateway.publicUrl", "must be an origin only: remove the fragment"}}},
		{"listen ipv6 ok", func(c *Config) { c.Gateway.Listen = "[::1]:7331" }, nil},
		// 0 means the default, in Validate as in the endpoint (OP-1).
		{"SV-8 zero bytes is the default", func(c *Config) { c.Gateway.MaxRequestBytes = 0 }, nil},
		{"SV-8 negative bytes", func(c *Config) { c.Gateway.MaxRequestBytes = -1 },
			[]FieldError{{"gateway.maxRequestBytes", "must not be negative (0 or leaving it out means the default, 4194304)"}}},
		{"SV-2 negative park means never", func(c *Config) { c.Gateway.SessionParkAfter = -time.Second }, nil},
		{"AU-1 oauth http loopback ok", func(c *Config) {
			c.Endpoints[0] = Endpoint{Path: "/mcp", Auth: &Auth{OAuth: &OAuth{Issuer: "http://localhost:9000", JWKSURL: "http://[::1]:9000/jwks"}}}
		}, nil},
		{"AU-1 oauth http remote", func(c *Config) {
			c.Endpoints[0] = Endpoint{Path: "/mcp", Auth: &Auth{OAuth: &OAuth{Issuer: "http://id.example.com"}}}
		}, []FieldError{{"endpoints[0].auth.oauth.issuer", "must be an https URL (http only for loopback hosts)"}}},
		{"AU-2 anyOf", func(c *Config) {
			c.Endpoints[0] = Endpoint{Path: "/mcp", Auth: &Auth{AnyOf: []Auth{
				{APIKeys: []APIKey{{Key: goodSecret, Actor: Actor{ID: "k"}}}},
				{OAuth: &OAuth{Issuer: "https://id.example.com"}},
				{},
			}}}
		}, []FieldError{{"endpoints[0].auth.anyOf[2]", "needs one of apiKeys, oauth or anyOf"}}},
		{"SV-3 duplicate key across endpoints", func(c *Config) {
			c.Endpoints = []Endpoint{
				{Path: "/a", Auth: &Auth{APIKeys: []APIKey{{Key: goodSecret, Actor: Actor{ID: "a"}}}}},
				{Path: "/b", Auth: &Auth{AnyOf: []Auth{{APIKeys: []APIKey{{Key: goodSecret, Actor: Actor{ID: "b"}}}}}}},
			}
		}, []FieldError{{"endpoints[1].auth.anyOf[0].apiKeys[0].key", "same key as endpoints[0].auth.apiKeys[0].key: a key must identify one actor on one endpoint"}}},
		{"SV-3 same path after cleaning", func(c *Config) {
			c.Endpoints = append(c.Endpoints, Endpoint{Path: "//mcp/", Actor: &Actor{ID: "x"}})
		}, []FieldError{{"endpoints[1].path", `"//mcp/" is the same path as endpoints[0].path`}}},
		{"reserved subpath", func(c *Config) { c.Endpoints[0].Path = "/healthz/x" },
			[]FieldError{{"endpoints[0].path", `"/healthz/x" is reserved for the gateway (/healthz, /readyz, /metrics, /.well-known)`}}},
		{"root path ok", func(c *Config) { c.Endpoints[0].Path = "/" }, nil},
		{"DS-1 search with alwaysList ok", func(c *Config) {
			c.Endpoints[0].Discovery = &Discovery{Mode: DiscoverySearch, AlwaysList: []string{"notes_search", "github_get_me"}}
		}, nil},
		{"DS-1 off ok", func(c *Config) { c.Endpoints[0].Discovery = &Discovery{Mode: DiscoveryOff} }, nil},
		{"DS-1 bad mode", func(c *Config) { c.Endpoints[0].Discovery = &Discovery{Mode: "Search"} },
			[]FieldError{{"endpoints[0].discovery.mode", `must be off or search, not "Search"`}}},
		{"DS-1 alwaysList names", func(c *Config) {
			c.Endpoints[0].Discovery = &Discovery{Mode: DiscoverySearch, AlwaysList: []string{"a", "", "call_tool", "a", "no spaces"}}
		}, []FieldError{
			{"endpoints[0].discovery.alwaysList[1]", "empty tool name"},
			{"endpoints[0].discovery.alwaysList[2]", `"call_tool" is one of the two tools discovery lists itself`},
			{"endpoints[0].discovery.alwaysList[3]", `"a" is already alwaysList[0]`},
			{"endpoints[0].discovery.alwaysList[4]", `"no spaces" is not a tool name (letters, digits, _ and -, at most 64)`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.change(c)
			_, err := c.Validate()
			var got []FieldError
			if err != nil {
				var ve *ValidationErrors
				if !errors.As(err, &ve) {
					t.Fatalf("err is %T, want *ValidationErrors", err)
				}
				got = ve.Errors
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidationErrorsFormat(t *testing.T) {
	c := base()
	c.Gateway.MaxRequestBytes = -1
	c.Upstreams[0].Timeout = -1
	_, err := c.Validate()
	want := "gateway.maxRequestBytes: must not be negative (0 or leaving it out means the default, 4194304)\nupstreams[0].timeout: must not be negative (0 or leaving it out means the default, 30s)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
	var fe FieldError
	if !errors.As(err, &fe) || fe.Path != "gateway.maxRequestBytes" {
		t.Errorf("errors.As FieldError = %+v", fe)
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   []Warning
	}{
		{"none", func(c *Config) {}, nil},
		{"AU-8 neither auth nor actor", func(c *Config) { c.Endpoints[0].Actor = nil },
			[]Warning{{"endpoints[0]", "no auth and no actor: every request is refused with 401"}}},
		{"AU-7 open mode on all interfaces", func(c *Config) { c.Gateway.Listen = ":7331" },
			[]Warning{{"endpoints[0]", `open mode (actor without auth) on non-loopback listen address ":7331": serve refuses it unless --insecure-open (see docs/security.md#open-mode)`}}},
		{"AU-7 open mode on loopback is fine", func(c *Config) { c.Gateway.Listen = "localhost:1" }, nil},
		{"empty allow-list", func(c *Config) { c.Endpoints[0].Tools = []string{} },
			[]Warning{{"endpoints[0].tools", "empty: this endpoint serves no tools (omit tools to serve all)"}}},
		{"CO-9 admin on loopback is fine", func(c *Config) {
			c.Gateway.Admin = &Admin{Listen: "127.0.0.1:7332", Keys: []AdminKey{{Key: goodSecret, Operator: "alice"}}}
		}, nil},
		{"CO-9 admin on a unix socket is fine", func(c *Config) {
			c.Gateway.Admin = &Admin{Listen: "unix:/run/toolgate/admin.sock", Keys: []AdminKey{{Key: goodSecret, Operator: "alice"}}}
		}, nil},
		{"CO-9 admin on every interface", func(c *Config) {
			c.Gateway.Admin = &Admin{Listen: ":7332", Keys: []AdminKey{{Key: goodSecret, Operator: "alice"}}}
		}, []Warning{{"gateway.admin.listen", `":7332" is reachable from other machines: anyone with an admin key can approve calls and end sessions; prefer 127.0.0.1 or a unix socket behind an authenticated proxy`}}},
		{"short api key", func(c *Config) {
			c.Endpoints[0] = Endpoint{Path: "/mcp", Tools: []string{"*"}, Auth: &Auth{APIKeys: []APIKey{{Key: "short", Actor: Actor{ID: "a"}}}}}
		}, []Warning{{"endpoints[0].auth.apiKeys[0].key", "shorter than 16 bytes: use a long random key"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.change(c)
			got, err := c.Validate()
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMayServeActions(t *testing.T) {
	tests := []struct {
		name string
		ups  []Upstream
		want bool
	}{
		{"no upstreams", nil, false},
		{"read only", []Upstream{{DefaultKind: KindRead}, {DefaultKind: KindRead, Reads: []string{"*"}}}, false},
		{"default kind unset means action", []Upstream{{}}, true},
		{"action", []Upstream{{DefaultKind: KindRead}, {DefaultKind: KindAction}}, true},
		{"read with actions list", []Upstream{{DefaultKind: KindRead, Actions: []string{"create_*"}}}, true},
	}
	for _, tt := range tests {
		c := &Config{Upstreams: tt.ups}
		if got := c.MayServeActions(); got != tt.want {
			t.Errorf("%s: MayServeActions() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestOpenEndpoints(t *testing.T) {
	c := &Config{Endpoints: []Endpoint{
		{Path: "/auth", Auth: &Auth{OAuth: &OAuth{}}},
		{Path: "/open", Actor: &Actor{ID: "dev"}},
		{Path: "/closed"},
		{Path: "/open2", Actor: &Actor{ID: "dev2"}},
	}}
	if diff := cmp.Diff([]string{"/open", "/open2"}, c.OpenEndpoints()); diff != "" {
		t.Errorf("OpenEndpoints (-want +got):\n%s", diff)
	}
}

// CO-9: gateway.admin's listen defaults to AdminDefaultListen when the
// section is present; absent, there is no admin API.
func TestAdminDefaults(t *testing.T) {
	c := base()
	if c.Gateway.Admin != nil {
		t.Fatalf("no admin section, yet Admin = %+v", c.Gateway.Admin)
	}
	c.Gateway.Admin = &Admin{Keys: []AdminKey{{Key: goodSecret, Operator: "alice"}}}
	c.SetDefaults("test")
	if c.Gateway.Admin.Listen != "127.0.0.1:7332" || !c.Gateway.Admin.IsLoopback() || c.Gateway.Admin.UnixSocket() != "" {
		t.Errorf("admin defaults: %+v", c.Gateway.Admin)
	}
	if _, err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	c.Gateway.Admin.Listen = "unix:/run/a.sock"
	if c.Gateway.Admin.UnixSocket() != "/run/a.sock" || !c.Gateway.Admin.IsLoopback() {
		t.Errorf("unix socket: %q", c.Gateway.Admin.UnixSocket())
	}
}

func TestListenIsLoopback(t *testing.T) {
	for listen, want := range map[string]bool{
		"127.0.0.1:7331": true, "localhost:1": true, "[::1]:80": true, "127.8.9.1:1": true,
		":7331": false, "0.0.0.0:7331": false, "10.0.0.1:1": false, "example.com:80": false, "garbage": false,
	} {
		c := &Config{Gateway: Gateway{Listen: listen}}
		if got := c.ListenIsLoopback(); got != want {
			t.Errorf("ListenIsLoopback(%q) = %v, want %v", listen, got, want)
		}
	}
}
