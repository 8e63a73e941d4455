// A real authorization server for toolgate's upstream OAuth tests: panva's
// oidc-provider on loopback, with dynamic registration, PKCE, resource
// indicators (JWT access tokens whose audience is the resource), refresh
// token rotation, revocation, and devInteractions' login form, which the Go
// tests fill in over HTTP (any login name signs in as that subject).
//
// oidc-provider has no token exchange (RFC 8693) built in: the grant is
// added below with provider.registerGrantType, a small handler that checks
// the subject token with the provider itself (its signature against the
// provider's own keys, its issuer, type and expiry, and its subject) and
// issues an access token for the same subject
// whose audience is the requested resource. Only the client
// toolgate-exchange may use it.
//
// Env: ACCESS_TTL (seconds, default 3600); PKJWT_JWKS, a JSON Web Key Set of
// public keys, registers toolgate-pkjwt, a client that authenticates with
// private_key_jwt (RFC 7523) under those keys, with PRE_REDIRECTS' redirect
// URIs, for code, refresh and token exchange. CIMD=1 makes it a server that
// knows clients only by their Client ID Metadata Document (https client id
// URLs it fetches; draft-02, experimental in oidc-provider 9.13.3) and takes
// no dynamic registration. Prints "LISTENING <issuer>" once
// ready; exits when stdin closes, so it cannot outlive the test.
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';
import * as jose from 'jose';

const accessTTL = Number(process.env.ACCESS_TTL || 3600);
const cimd = process.env.CIMD === '1';
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
// Every resource gets JWT access tokens whose audience is the resource.
const resourceInfo = (resource) => ({
  scope: 'crm.read crm.write',
  audience: resource,
  accessTokenTTL: accessTTL,
  accessTokenFormat: 'jwt',
  jwt: { sign: { alg: 'RS256' } },
});
// Any login name is an account.
const findAccount = async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) });
const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const clients = [{
  client_id: 'toolgate-pre',
  client_secret: 'pre-registered-client-secret-0123456789',
  redirect_uris: (process.env.PRE_REDIRECTS || 'http://127.0.0.1:1/cb').split(','),
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
}, {
  client_id: 'toolgate-exchange',
  client_secret: 'exchange-client-secret-0123456789abcdef',
  redirect_uris: [],
  grant_types: [TOKEN_EXCHANGE],
  response_types: [],
}];
if (process.env.PKJWT_JWKS) {
  clients.push({
    client_id: 'toolgate-pkjwt',
    token_endpoint_auth_method: 'private_key_jwt',
    jwks: JSON.parse(process.env.PKJWT_JWKS),
    redirect_uris: (process.env.PRE_REDIRECTS || 'http://127.0.0.1:1/cb').split(','),
    grant_types: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE],
    response_types: ['code'],
  });
}

const provider = new Provider(issuer, {
  clients,
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: !cimd },
    ...(cimd && { clientIdMetadataDocument: { enabled: true, ack: 'draft-02' } }),
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx) => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => resourceInfo(resource),
    },
  },
  scopes: ['openid', 'offline_access'],
  pkce: { required: () => true },
  rotateRefreshToken: true,
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  findAccount,
  // The provider refuses to fetch from special-use addresses (its SSRF
  // guard, a dispatcher it hands to fetch); the client's metadata document
  // is on loopback in tests, so the CIMD server fetches without it. The
  // CA the test's https server uses comes in NODE_EXTRA_CA_CERTS.
  ...(cimd && { fetch: (url, { dispatcher, ...options }) => fetch(url, options) }),
  // Consent is granted as asked: the tests drive the login, not a consent page.
  loadExistingGrant: async (ctx) => {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) {
      const found = await ctx.oidc.provider.Grant.find(grantId);
      if (found) return found;
    }
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid offline_access');
    const resource = ctx.oidc.params.resource;
    if (resource) grant.addResourceScope(resource, ctx.oidc.params.scope || 'crm.read crm.write');
    await grant.save();
    return grant;
  },
});
// The token exchange grant (RFC 8693), as the header says.
let jwks;
provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
  const { subject_token: subject, subject_token_type: subjectType, resource, scope } = ctx.oidc.params;
  if (!subject) throw new errors.InvalidRequest('subject_token is required');
  if (subjectType !== ACCESS_TOKEN_TYPE) throw new errors.InvalidRequest('subject_token_type must be ' + ACCESS_TOKEN_TYPE);
  if (!resource || Array.isArray(resource)) throw new errors.InvalidTarget('exactly one resource is required');
  jwks ??= jose.createLocalJWKSet(await (await fetch(new URL('/jwks', issuer))).json());
  let claims;
  try {
    ({ payload: claims } = await jose.jwtVerify(subject, jwks, { issuer, typ: 'at+jwt' }));
  } catch {
    throw new errors.InvalidGrant('the subject token is not a valid access token of this issuer');
  }
  // The provider keeps no record of a JWT-format token: its signature,
  // issuer and expiry (checked above) and the subject are what it has.
  if (!claims.sub || !(await findAccount(ctx, claims.sub))) {
    throw new errors.InvalidGrant('the subject token names no account');
  }
  const token = new provider.AccessToken({
    accountId: claims.sub,
    client: ctx.oidc.client,
    gty: 'token-exchange',
    scope: scope || claims.scope,
  });
  token.resourceServer = new provider.ResourceServer(resource, resourceInfo(resource));
  const value = await token.save();
  ctx.body = {
    access_token: value,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: 'Bearer',
    expires_in: token.expiration,
    scope: token.scope,
  };
}, ['subject_token', 'subject_token_type', 'requested_token_type', 'resource', 'scope', 'audience'], ['resource']);
provider.on("server_error", (ctx, err) => console.error("server_error", err));
provider.on("authorization.error", (ctx, err) => console.error("authorization.error", err.message, err.error_description));
server.on('request', provider.callback());
console.log(`LISTENING ${issuer}`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
