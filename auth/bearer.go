package auth

import (
	"context"
	"encoding/json"
	"log/slog"
)

// SubjectToken is the bearer token an actor authenticated with, verified by
// the OAuth strategy, and the issuer that verified it: what a token
// exchange (RFC 8693) trades for a token meant for an upstream (UI-2). It
// is carried in the request's context only: never in the actor, its JSON,
// logs or audit. Its String hides the token.
type SubjectToken struct {
	Token  string
	Issuer string
}

// String never prints the token.
func (t SubjectToken) String() string { return "subject token of " + t.Issuer + " (hidden)" }

// GoString never prints the token.
func (t SubjectToken) GoString() string { return t.String() }

// LogValue never logs the token.
func (t SubjectToken) LogValue() slog.Value { return slog.StringValue(t.String()) }

// MarshalJSON never encodes the token.
func (t SubjectToken) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// subjectSlot is put in the request's context before a strategy runs; only
// the OAuth strategy fills it, and only once a token has been verified.
type subjectSlot struct{ t SubjectToken }

// withSubjectSlot returns ctx carrying an empty slot for the verified token.
func withSubjectSlot(ctx context.Context) context.Context {
	return context.WithValue(ctx, subjectKey, &subjectSlot{})
}

// setSubject records token as verified by issuer for this request.
func setSubject(ctx context.Context, token, issuer string) {
	if s, ok := ctx.Value(subjectKey).(*subjectSlot); ok {
		s.t = SubjectToken{Token: token, Issuer: issuer}
	}
}

// SubjectTokenFrom returns the bearer token the OAuth strategy verified for
// this request; ok is false for an actor authenticated otherwise (an API
// key, an open endpoint).
func SubjectTokenFrom(ctx context.Context) (SubjectToken, bool) {
	s, ok := ctx.Value(subjectKey).(*subjectSlot)
	if !ok || s.t.Token == "" {
		return SubjectToken{}, false
	}
	return s.t, true
}
