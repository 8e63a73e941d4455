package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Redacted is how every secret renders (IM-5).
const Redacted = "•••"

// Secret is a configuration value that must never be printed: API keys,
// header values, authorization tokens, signing and confirm secrets, client
// secrets and env values (IM-5). Every rendering path (fmt verbs, JSON, YAML,
// slog) shows Redacted; an empty secret stays empty so a dump still shows
// what is unset. Reveal is the one way to the value.
type Secret string

// Reveal returns the secret's value, for the code that must use it.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) redacted() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// String implements fmt.Stringer.
func (s Secret) String() string { return s.redacted() }

// GoString implements fmt.GoStringer, so %#v is covered too.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.redacted()) }

// Format implements fmt.Formatter; it wins over String for every verb,
// including %x and %q, which would otherwise print the bytes.
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprintf(f, "%q", s.redacted())
	case 'v':
		if f.Flag('#') {
			_, _ = f.Write([]byte(s.GoString()))
			return
		}
		_, _ = f.Write([]byte(s.redacted()))
	default:
		_, _ = f.Write([]byte(s.redacted()))
	}
}

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.redacted()) }

// MarshalYAML implements the YAML marshaler interface shared by
// goccy/go-yaml and yaml.v3.
func (s Secret) MarshalYAML() (any, error) { return s.redacted(), nil }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.redacted()) }

// Audience is the OAuth `audience` setting (AU-1): "default" (the zero
// value: the endpoint's resource URL), "any", or an explicit list.
type Audience struct {
	// Any accepts a token whatever its aud.
	Any bool
	// Values, when non-nil, lists the accepted audiences.
	Values []string
}

// Audience forms as written in the file.
const (
	AudienceDefault = "default"
	AudienceAny     = "any"
)

var errAudienceForm = errors.New(`must be "default", "any" or a list of audiences`)

// UnmarshalMapstructure decodes the three YAML forms.
func (a *Audience) UnmarshalMapstructure(v any) error {
	switch v := v.(type) {
	case nil:
		*a = Audience{}
	case string, expanded:
		switch s := fmt.Sprint(v); s {
		case AudienceDefault:
			*a = Audience{}
		case AudienceAny:
			*a = Audience{Any: true}
		default:
			return fmt.Errorf(`must be "default", "any" or a list of audiences; write [%s] for a single audience`, s)
		}
	case []any:
		vals := make([]string, 0, len(v))
		for i, e := range v {
			var s string
			switch e := e.(type) {
			case string:
				s = e
			case expanded:
				s = string(e)
			default:
				return &subError{path: fmt.Sprintf("[%d]", i), msg: "expected a string, got " + describeValue(e)}
			}
			vals = append(vals, s)
		}
		*a = Audience{Values: vals}
	default:
		return errAudienceForm
	}
	return nil
}

// IsDefault reports whether the endpoint's resource URL is the audience.
func (a Audience) IsDefault() bool { return !a.Any && a.Values == nil }

// String renders the audience as it would be written in the file.
func (a Audience) String() string {
	switch {
	case a.Any:
		return AudienceAny
	case a.Values == nil:
		return AudienceDefault
	default:
		return "[" + strings.Join(a.Values, ", ") + "]"
	}
}

func (a Audience) marshalValue() any {
	switch {
	case a.Any:
		return AudienceAny
	case a.Values == nil:
		return AudienceDefault
	default:
		return a.Values
	}
}

// MarshalJSON implements json.Marshaler.
func (a Audience) MarshalJSON() ([]byte, error) { return json.Marshal(a.marshalValue()) }

// MarshalYAML implements the YAML marshaler interface.
func (a Audience) MarshalYAML() (any, error) { return a.marshalValue(), nil }
