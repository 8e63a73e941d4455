// A real authorization server for toolgate's upstream OAuth tests: panva's
// oidc-provider on loopback, with dynamic registration, PKCE, resource
// indicators (JWT access tokens whose audience is the resource), refresh
// token rotation, revocation, and devInteractions' login form, which the Go
// tests fill in over HTTP (any login name signs in as that subject).
//
// Env: ACCESS_TTL (seconds, default 3600). Prints "LISTENING <issuer>" once
// ready; exits when stdin closes, so it cannot outlive the test.
import http from 'node:http';
import Provider from 'oidc-provider';

const accessTTL = Number(process.env.ACCESS_TTL || 3600);
const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'toolgate-pre',
    client_secret: 'pre-registered-client-secret-0123456789',
    redirect_uris: (process.env.PRE_REDIRECTS || 'http://127.0.0.1:1/cb').split(','),
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  }],
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx) => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => ({
        scope: 'crm.read crm.write',
        audience: resource,
        accessTokenTTL: accessTTL,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  scopes: ['openid', 'offline_access'],
  pkce: { required: () => true },
  rotateRefreshToken: true,
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
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
provider.on("server_error", (ctx, err) => console.error("server_error", err));
provider.on("authorization.error", (ctx, err) => console.error("authorization.error", err.message, err.error_description));
server.on('request', provider.callback());
console.log(`LISTENING ${issuer}`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
