// Package auth authenticates requests to toolgate's MCP endpoints and turns
// them into a core.Actor (AU-1 … AU-9 in docs/behaviour.md).
//
// A Strategy verifies one bearer token. APIKeys, OAuth and AnyOf are the
// built-in strategies; anything implementing Strategy plugs in beside them.
// Middleware runs the endpoint's strategy on every request (AU-3), writes the
// RFC 6750 / RFC 9728 challenge on refusal (AU-4) and otherwise hands the
// actor to the next handler through the request context (ActorFrom).
// MetadataHandler serves the RFC 9728 protected-resource document (AU-5).
//
// Decisions where the specification is silent:
//
//   - "Not mine" versus "refused". A token that is not a JWT (with no
//     introspection configured), a JWT whose iss is another issuer, a JWT
//     without iss, an unknown API key and a token the introspection endpoint
//     reports as inactive are all "not mine" (ErrNotMine): RFC 7662 answers
//     active=false for tokens it has never seen too, so inactive cannot prove
//     the token was this issuer's. A JWT that names this issuer but fails any
//     check (signature, algorithm, exp, nbf, aud, missing actor claim) is
//     refused with a 401 invalid_token *Error and stops an AnyOf chain. A
//     standalone strategy's "not mine" still reaches the client as 401
//     invalid_token, because a token was presented.
//   - A custom strategy returning a plain error (neither ErrNotMine nor
//     *Error) is treated as "not mine": its message is never shown to the
//     client, since it might quote the token.
//   - Strategies are only called when the request carries a bearer token;
//     without one the answer is a 401 whose challenge has no error attribute.
//     Tokens are read from "Authorization: Bearer" only (scheme
//     case-insensitive); an access_token query parameter is never read. Two
//     Authorization headers are a 400 invalid_request.
//   - Without a public URL the resource URL uses https only when the request
//     arrived over TLS (r.TLS): X-Forwarded-Proto is not trusted, because any
//     client can send it. Set the public URL behind a TLS-terminating proxy
//     (AU-6). The Host header is the client's to choose, so an internet-facing
//     gateway should always set the public URL.
//   - Resource URLs are compared byte for byte after lower-casing the scheme
//     and host; "https://h/mcp" and "https://h/mcp/" are different resources.
//   - When an AnyOf chain holds several OAuth strategies, the metadata
//     document lists every authorization server and the union of their scopes,
//     in chain order.
//   - An issuer that cannot be reached during introspection answers 503 (still
//     with a challenge): the token may be fine, and a 401 would make clients
//     throw it away.
//   - OAuth discovers the JWKS URL once, when the strategy is built; a failure
//     there is a boot error. The JWKS itself may be unreachable at boot: keys
//     are fetched again when a token with an unknown key id arrives.
package auth
