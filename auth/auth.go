package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/toolgate/toolgate/core"
)

// Strategy verifies one request's credentials. Implementations are called
// concurrently from many requests and must be safe for that.
type Strategy interface {
	// Authenticate verifies token, the bearer token of r (never empty), and
	// returns the actor it stands for. It returns ErrNotMine when the token is
	// not one this strategy knows, so the next strategy of an AnyOf chain may
	// try, and an *Error when it recognised the token and refuses it, which
	// ends the chain (AU-2). Any other error counts as ErrNotMine.
	//
	// The endpoint's resource URL is in r's context (ResourceFrom) when
	// called through Middleware.
	Authenticate(r *http.Request, token string) (core.Actor, error)
}

// ErrNotMine is returned by a Strategy for a token it does not recognise.
var ErrNotMine = errors.New("auth: token not recognised")

// notMine is ErrNotMine with a reason the client may read.
type notMine struct{ reason string }

func (e notMine) Error() string        { return "auth: " + e.reason }
func (e notMine) Is(target error) bool { return target == ErrNotMine }

// Error is a refusal of a recognised token (AU-2): it stops an AnyOf chain
// and becomes the HTTP answer. Description and Scope are shown to clients;
// they must never contain the token.
type Error struct {
	// Status is 401 (the token is not good), 403 (good, but not enough) or
	// 503 (it could not be verified right now). Anything else is sent as 401.
	Status int
	// Code is the RFC 6750 error code: "invalid_token", "insufficient_scope"
	// or "". Middleware derives it from Status when empty.
	Code string
	// Description is a short human-readable reason, safe for clients.
	Description string
	// Scope lists, space-separated, the scopes that would have been enough;
	// sent with insufficient_scope when set.
	Scope string
}

func (e *Error) Error() string {
	if e.Description == "" {
		return "auth: " + http.StatusText(e.status())
	}
	return "auth: " + e.Description
}

// status is Status narrowed to what Middleware sends.
func (e *Error) status() int {
	switch e.Status {
	case http.StatusForbidden, http.StatusServiceUnavailable:
		return e.Status
	default:
		return http.StatusUnauthorized
	}
}

// code is Code, or the RFC 6750 code that goes with the status.
func (e *Error) code() string {
	if e.Code != "" {
		return e.Code
	}
	switch e.status() {
	case http.StatusUnauthorized:
		return codeInvalidToken
	case http.StatusForbidden:
		return codeInsufficientScope
	}
	return ""
}

const (
	codeInvalidToken      = "invalid_token"
	codeInsufficientScope = "insufficient_scope"
	codeInvalidRequest    = "invalid_request"
	codeUnauthorized      = "unauthorized"
	codeUnavailable       = "temporarily_unavailable"
)

// invalidToken is the common 401 refusal.
func invalidToken(description string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: codeInvalidToken, Description: description}
}

// MetadataProvider is implemented by strategies that stand for an OAuth
// authorization server, whose endpoints then advertise RFC 9728 metadata and
// point clients at it from every challenge (AU-4, AU-5).
type MetadataProvider interface {
	Metadata() ProtectedResourceMetadata
}

// ProtectedResourceMetadata is what a strategy contributes to the RFC 9728
// document; the resource itself comes from the endpoint.
type ProtectedResourceMetadata struct {
	AuthorizationServers []string
	ScopesSupported      []string
	ResourceName         string
}

// MetadataOf returns s's OAuth metadata, and false when s exposes none.
func MetadataOf(s Strategy) (ProtectedResourceMetadata, bool) {
	if s == nil {
		return ProtectedResourceMetadata{}, false
	}
	mp, ok := s.(MetadataProvider)
	if !ok {
		return ProtectedResourceMetadata{}, false
	}
	return mp.Metadata(), true
}

// AnyOf tries strategies in order (AU-2): the first to verify the token wins;
// "not mine" lets the next one try; an *Error stops the chain and is the
// answer. When no strategy recognises the token the last "not mine" is
// returned. The result exposes OAuth metadata when any member does.
func AnyOf(strategies ...Strategy) Strategy {
	a := anyOf{strategies: slices.DeleteFunc(slices.Clone(strategies), func(s Strategy) bool { return s == nil })}
	for _, s := range a.strategies {
		if _, ok := s.(MetadataProvider); ok {
			return anyOfWithMetadata{a}
		}
	}
	return a
}

var (
	_ Strategy         = anyOf{}
	_ MetadataProvider = anyOfWithMetadata{}
)

type anyOf struct{ strategies []Strategy }

func (a anyOf) Authenticate(r *http.Request, token string) (core.Actor, error) {
	var last error = ErrNotMine
	for _, s := range a.strategies {
		actor, err := s.Authenticate(r, token)
		if err == nil {
			return actor, nil
		}
		if refusal, ok := errors.AsType[*Error](err); ok {
			return core.Actor{}, refusal
		}
		if !errors.Is(err, ErrNotMine) {
			err = ErrNotMine
		}
		last = err
	}
	return core.Actor{}, last
}

// anyOfWithMetadata is an anyOf with at least one member exposing metadata;
// a separate type so that a type assertion tells the truth.
type anyOfWithMetadata struct{ anyOf }

// Metadata merges the members' metadata in chain order.
func (a anyOfWithMetadata) Metadata() ProtectedResourceMetadata {
	var out ProtectedResourceMetadata
	for _, s := range a.strategies {
		md, ok := MetadataOf(s)
		if !ok {
			continue
		}
		out.AuthorizationServers = appendNew(out.AuthorizationServers, md.AuthorizationServers...)
		out.ScopesSupported = appendNew(out.ScopesSupported, md.ScopesSupported...)
		if out.ResourceName == "" {
			out.ResourceName = md.ResourceName
		}
	}
	return out
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}

type ctxKey int

const (
	actorKey ctxKey = iota
	resourceKey
	subjectKey
)

// WithActor returns ctx carrying actor, as Middleware does for each request.
func WithActor(ctx context.Context, actor core.Actor) context.Context {
	actor.Roles = slices.Clone(actor.Roles)
	return context.WithValue(ctx, actorKey, actor)
}

// ActorFrom returns the actor Middleware authenticated for this request.
func ActorFrom(ctx context.Context) (core.Actor, bool) {
	a, ok := ctx.Value(actorKey).(core.Actor)
	if ok {
		a.Roles = slices.Clone(a.Roles)
	}
	return a, ok
}

// WithResource returns ctx carrying the endpoint's resource URL, the value
// audience checks compare against (RFC 8707).
func WithResource(ctx context.Context, resource string) context.Context {
	return context.WithValue(ctx, resourceKey, resource)
}

// ResourceFrom returns the resource URL Middleware computed for this request.
func ResourceFrom(ctx context.Context) (string, bool) {
	s, ok := ctx.Value(resourceKey).(string)
	return s, ok && s != ""
}
