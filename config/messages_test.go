package config

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/core/confirm"
)

// messagesYAML is a valid config whose gateway.confirm.messages block is
// body, indented under messages:.
func messagesYAML(body string) string {
	return `gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
    messages:
` + body + `
endpoints:
  - path: /mcp
    actor: {id: dev}
upstreams:
  - {name: github, command: mcp-github}
`
}

// Covers CF-7.
func TestConfirmMessagesLoad(t *testing.T) {
	cfg, _ := mustLoad(t, writeConfig(t, messagesYAML(`      preview: "Nothing has run yet. To {tool} on {upstream}, call again with confirm: true and the token before {expires} ({minutes} minutes)."
      used: "This confirmation was already used; preview again."
      rejected: "{operator} said no: {reason}"
      invalid: "Refused ({reason}) for {tool}"
      waiting: "Waiting for an operator: {tool} on {upstream}"
      shuttingDown: "Gateway stopping"
      timedOut: "Nobody decided"
      expired: "Expired at {expires}"`)), fixedEnv)
	m := cfg.Gateway.Confirm.Messages
	if m.Used == nil || *m.Used != "This confirmation was already used; preview again." || m.Preview == nil || *m.Rejected != "{operator} said no: {reason}" {
		t.Fatalf("messages not decoded: %+v", m)
	}

	// An absent key stays nil: the gate's built-in text.
	cfg, _ = mustLoad(t, writeConfig(t, messagesYAML(`      used: "spent"`)), fixedEnv)
	m = cfg.Gateway.Confirm.Messages
	if m.Preview != nil || m.Invalid != nil || m.Used == nil || *m.Used != "spent" {
		t.Fatalf("absent keys: %+v", m)
	}
}

// Covers CF-7.
func TestConfirmMessagesRefused(t *testing.T) {
	tests := []struct {
		name, body string
		want       []FieldError
	}{
		{"unknown placeholder", `      used: "This confirmation was already used {foo}"`,
			[]FieldError{{"gateway.confirm.messages.used", "unknown placeholder {foo}; this message can use {tool}, {upstream}"}}},
		{"the preview's own {source} is not offered", `      preview: "Run {tool} on {source}"`,
			[]FieldError{{"gateway.confirm.messages.preview", "unknown placeholder {source}; this message can use {tool}, {upstream}, {expires}, {minutes}"}}},
		{"placeholder this message cannot fill", `      used: "Used; {operator} said so"`,
			[]FieldError{{"gateway.confirm.messages.used", "placeholder {operator} has no value in this message; it can use {tool}, {upstream}"}}},
		{"empty message", `      expired: ""`,
			[]FieldError{{"gateway.confirm.messages.expired", "must not be empty; leave the key out to keep the built-in text"}}},
		{"blank message", `      shuttingDown: "   "`,
			[]FieldError{{"gateway.confirm.messages.shuttingDown", "must not be empty; leave the key out to keep the built-in text"}}},
		{"each message its own error", `      waiting: "{reason}"
      rejected: "{bar}"`,
			[]FieldError{
				{"gateway.confirm.messages.rejected", "unknown placeholder {bar}; this message can use {tool}, {upstream}, {operator}, {reason}"},
				{"gateway.confirm.messages.waiting", "placeholder {reason} has no value in this message; it can use {tool}, {upstream}"},
			}},
		{"unknown message key", `      usde: "spent"`,
			[]FieldError{{"gateway.confirm.messages", `unknown key "usde" (did you mean "used"?)`}}},
		{"not a string", `      used: [a, b]`,
			[]FieldError{{"gateway.confirm.messages.used", "expected a string, got a list"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Load(writeConfig(t, messagesYAML(tt.body)), optionsFor(fixedEnv))
			var ve *ValidationErrors
			if !errors.As(err, &ve) {
				t.Fatalf("Load: %v, want validation errors", err)
			}
			if diff := cmp.Diff(tt.want, ve.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// A reload validates the next config with Validate, as Load does: the same
// refusal with the same key path, whoever built the config.
//
// Covers CF-7.
func TestConfirmMessagesValidate(t *testing.T) {
	c := base()
	c.Gateway.Confirm.Messages.Used = ptr("spent {expires}")
	c.Gateway.Confirm.Messages.Preview = ptr("")
	_, err := c.Validate()
	var ve *ValidationErrors
	if !errors.As(err, &ve) {
		t.Fatalf("Validate: %v", err)
	}
	want := []FieldError{
		{"gateway.confirm.messages.preview", "must not be empty; leave the key out to keep the built-in text"},
		{"gateway.confirm.messages.used", "placeholder {expires} has no value in this message; it can use {tool}, {upstream}"},
	}
	if diff := cmp.Diff(want, ve.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// The config's message keys are the gate's.
//
// Covers CF-7.
func TestConfirmMessageKeysMatchTheGate(t *testing.T) {
	var m ConfirmMessages
	var keys []string
	for _, e := range m.Each() {
		keys = append(keys, e.Key)
	}
	if !slices.Equal(keys, confirm.MessageKeys()) {
		t.Errorf("config keys %q, gate keys %q", keys, confirm.MessageKeys())
	}
}
