package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
)

// endpointAuth turns an endpoint's auth config into the auth package's
// terms. OAuth strategies discover their issuer here, so an unreachable
// issuer without jwksUrl fails the boot with its name.
func endpointAuth(ctx context.Context, cfg *config.Config, e config.Endpoint, log *slog.Logger) (auth.EndpointAuth, error) {
	ep := auth.EndpointAuth{Path: e.Path, PublicURL: cfg.Gateway.PublicURL, ResourceName: e.Name}
	if e.Auth == nil {
		if e.Actor != nil {
			a := coreActor(*e.Actor)
			ep.Actor = &a
		}
		return ep, nil // neither: fails closed (AU-8)
	}
	s, err := strategy(ctx, *e.Auth, log)
	if err != nil {
		return ep, err
	}
	ep.Strategy = s
	return ep, nil
}

func strategy(ctx context.Context, a config.Auth, log *slog.Logger) (auth.Strategy, error) {
	switch {
	case len(a.AnyOf) > 0:
		var chain []auth.Strategy
		for i, member := range a.AnyOf {
			s, err := strategy(ctx, member, log)
			if err != nil {
				return nil, fmt.Errorf("anyOf[%d]: %w", i, err)
			}
			chain = append(chain, s)
		}
		return auth.AnyOf(chain...), nil
	case len(a.APIKeys) > 0:
		keys := make([]auth.APIKey, len(a.APIKeys))
		for i, k := range a.APIKeys {
			keys[i] = auth.APIKey{Key: k.Key.Reveal(), Actor: coreActor(k.Actor)}
		}
		return auth.APIKeys(keys), nil
	case a.OAuth != nil:
		o := a.OAuth
		s, err := auth.OAuth(ctx, auth.OAuthConfig{
			Issuer: o.Issuer, JWKSURL: o.JWKSURL,
			Audience:        auth.AudienceRule{Any: o.Audience.Any, Values: o.Audience.Values},
			ScopesSupported: o.ScopesSupported, RolesFromScopes: o.RolesFromScopes,
			ActorClaim: o.ActorClaim, TenantClaim: o.TenantClaim,
			IntrospectionURL: o.IntrospectionURL, ClientID: o.ClientID, ClientSecret: o.ClientSecret.Reveal(),
			Logger: log,
		})
		if err != nil {
			return nil, fmt.Errorf("oauth %s: %w", o.Issuer, err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("auth has no strategy")
}

func coreActor(a config.Actor) core.Actor {
	return core.Actor{ID: a.ID, Roles: slices.Clone(a.Roles), Tenant: a.Tenant, Claims: a.Claims}
}
