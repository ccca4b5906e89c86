// A real OpenID Connect provider (panva's oidc-provider) for Dockyard's sign-in tests, on loopback.
//
// node provider.js CONFIG.json  — prints one JSON line {"issuer": ..., "port": ...} once it listens.
// CONFIG: {"port": 0, "keys": [private JWK...], "clients": [{client_id, client_secret, scope, ttl, email}],
//          "resources": {"<audience>": "<scopes it accepts>"}, "default_resource": "<audience>",
//          "loopback_resources": "<scopes>", "opaque_resources": [...]}: any http://127.0.0.1:PORT/...
// resource is its own audience too; an opaque resource gets opaque tokens, to introspect (RFC 7662).
// Clients use the client-credentials grant; resource indicators (RFC 8707) make each access token a JWT
// whose audience is the resource asked for, signed with the first key.
import fs from 'node:fs';
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const clients = Object.fromEntries(config.clients.map((c) => [c.client_id, c]));
const server = http.createServer();

server.listen(config.port || 0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: config.clients.map((c) => ({
      client_id: c.client_id,
      client_secret: c.client_secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: c.scope,
    })),
    jwks: { keys: config.keys },
    scopes: ['openid', 'tasks:read', 'tasks:write'],
    features: {
      devInteractions: { enabled: false },
      introspection: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, client, oneOf) => oneOf || config.default_resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => {
          const loopback = resource.startsWith('http://127.0.0.1:') ? config.loopback_resources : undefined;
          const scope = config.resources[resource] ?? loopback;
          if (scope === undefined) throw new errors.InvalidTarget();
          return {
            scope,
            audience: resource,
            accessTokenFormat: (config.opaque_resources || []).includes(resource) ? 'opaque' : 'jwt',
            accessTokenTTL: clients[client.clientId].ttl || 600,
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    extraTokenClaims: (ctx, token) => {
      const email = clients[token.clientId]?.email;
      return email ? { email } : undefined;
    },
  });
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer, port })}\n`);
});
