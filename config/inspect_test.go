package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// IN-1: per key, an endpoint's setting wins over its upstream's, which
// wins over the top level's; unset keys fall back to off and the defaults.
func TestInspectForNarrowestWins(t *testing.T) {
	cfg, _ := mustLoad(t, writeConfig(t, `
gateway:
  confirm: {secret: "${TOOLGATE_CONFIRM_SECRET}"}
inspect:
  arguments: {secrets: block}
  results: {secrets: redact, pii: flag, injection: flag}
  allowHosts: [docs.example.com]
  pii: {types: [email, card]}
  hooks: [{url: "http://127.0.0.1:9000/inspect"}]
endpoints:
  - path: /mcp
    actor: {id: dev}
    inspect: {results: {pii: block}, maxBytes: 4096}
upstreams:
  - name: crm
    command: mcp-crm
    inspect:
      results: {pii: redact, links: flag}
      allowHosts: []
      hooks: []
`), fixedEnv)
	e, u := &cfg.Endpoints[0], &cfg.Upstreams[0]
	hook := InspectHook{URL: "http://127.0.0.1:9000/inspect", On: []string{"arguments", "results"}, Timeout: 500 * time.Millisecond, Failure: "block"}
	all := []string{"email", "phone", "card", "iban", "ssn"}
	cases := []struct {
		name string
		e    *Endpoint
		u    *Upstream
		want Inspect
	}{
		{"top level", nil, nil, Inspect{
			Arguments:  InspectArguments{Secrets: "block", PII: "off"},
			Results:    InspectResults{Secrets: "redact", PII: "flag", Injection: "flag", Links: "off"},
			AllowHosts: []string{"docs.example.com"}, PII: InspectPII{Types: []string{"email", "card"}},
			MaxBytes: 1 << 20, FlowWindow: time.Hour, Hooks: []InspectHook{hook},
		}},
		{"upstream", nil, u, Inspect{
			Arguments:  InspectArguments{Secrets: "block", PII: "off"},
			Results:    InspectResults{Secrets: "redact", PII: "redact", Injection: "flag", Links: "flag"},
			AllowHosts: []string{}, PII: InspectPII{Types: []string{"email", "card"}},
			MaxBytes: 1 << 20, FlowWindow: time.Hour, Hooks: []InspectHook{},
		}},
		{"endpoint over upstream", e, u, Inspect{
			Arguments:  InspectArguments{Secrets: "block", PII: "off"},
			Results:    InspectResults{Secrets: "redact", PII: "block", Injection: "flag", Links: "flag"},
			AllowHosts: []string{}, PII: InspectPII{Types: []string{"email", "card"}},
			MaxBytes: 4096, FlowWindow: time.Hour, Hooks: []InspectHook{},
		}},
	}
	for _, c := range cases {
		if d := cmp.Diff(c.want, cfg.InspectFor(c.e, c.u)); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
	if got := (&Config{}).InspectFor(nil, nil); !got.Off() || !cmp.Equal(got.PII.Types, all) {
		t.Errorf("empty config: %+v, want off with every pii type", got)
	}
	if cfg.InspectFor(nil, nil).Off() {
		t.Error("a config with actions reads as off")
	}
}

// IN-1, IN-4: each wrong value is named by its path and says what is
// accepted; none is silently read as off.
func TestInspectValidation(t *testing.T) {
	_, _, err := Load(writeConfig(t, `
gateway:
  confirm: {secret: "${TOOLGATE_CONFIRM_SECRET}"}
inspect:
  arguments: {secrets: deny}
  pii: {types: [email, passport]}
  allowHosts: ["https://docs.example.com/"]
  maxBytes: -1
  hooks:
    - {url: "ftp://guard", on: [inputs], failure: retry, timeout: -1s}
endpoints:
  - path: /mcp
    actor: {id: dev}
    inspect: {flowWindow: 2h, results: {links: maybe}}
upstreams:
  - name: crm
    command: mcp-crm
    inspect: {results: {injection: Block}}
`), optionsFor(fixedEnv))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`inspect.arguments.secrets: must be one of off, flag, redact, block, approve, not "deny"`,
		`inspect.pii.types[1]: must be one of email, phone, card, iban, ssn, not "passport"`,
		`inspect.allowHosts[0]: must be a host name such as docs.example.com, not "https://docs.example.com/"`,
		`inspect.maxBytes: must not be negative`,
		`inspect.hooks[0].url: must be an http or https URL, not "ftp://guard"`,
		`inspect.hooks[0].on[0]: must be arguments or results, not "inputs"`,
		`inspect.hooks[0].failure: must be block or allow, not "retry"`,
		`inspect.hooks[0].timeout: must not be negative`,
		`endpoints[0].inspect.flowWindow: is read only at the top level`,
		`endpoints[0].inspect.results.links: must be one of off, flag, redact, block, approve, not "maybe"`,
		`upstreams[0].inspect.results.injection: must be one of off, flag, redact, block, approve, not "Block"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// IN-4: a hook's headers are secrets: a dump never shows them.
func TestInspectHookHeadersNeverDumped(t *testing.T) {
	cfg, _ := mustLoad(t, writeConfig(t, `
gateway:
  confirm: {secret: "${TOOLGATE_CONFIRM_SECRET}"}
inspect:
  hooks: [{url: "http://127.0.0.1:9000/inspect", headers: {authorization: "Bearer hook-marker-7f3a"}}]
`), fixedEnv)
	out, err := Dump(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "hook-marker-7f3a") {
		t.Errorf("dump shows the hook's header:\n%s", out)
	}
}
