// A real third-party authorization server (panva's `oidc-provider`, pinned in
// ../package-lock.json) and a small MCP resource server that trusts it, in one
// process, each on its own 127.0.0.1 port (two origins, as deployed), for
// tests/interop_oidc_provider.rs.
//
//   node interop/oidc/provider.mjs <as-port> <rs-port> [access-token-ttl-seconds]
//
// The resource server listens first, so once <as-port> accepts, both do.
// Issuer: http://127.0.0.1:<as-port>. oidc-provider serves discovery
// (/.well-known/openid-configuration), /auth, /token, /reg (open dynamic
// registration), /token/introspection, /token/revocation, with DPoP (nonces
// required), resource indicators (opaque access tokens for the MCP resource),
// refresh tokens with rotation (issued by the provider's default rule: the client
// may use the refresh_token grant and offline_access was granted, which it keeps
// only when the request prompts for consent), client credentials, and PKCE S256
// (its default).
// /interaction/<uid> approves every login (account `tester`) and consent at once,
// so a client that follows redirects with cookies completes the flow headlessly.
//
// The MCP resource (http://127.0.0.1:<rs-port>/mcp) accepts `Authorization:
// Bearer|DPoP <token>`, checks the token with the provider's introspection
// endpoint (active, audience, scope, token type), checks the DPoP proof of a
// DPoP-bound token (signature with the embedded key, typ, htm, htu, iat, ath, jti
// replay, the key's thumbprint equal to cnf.jkt, and its own nonce, replaced
// every few proofs), and answers initialize, notifications/initialized,
// tools/list and tools/call (`whoami`; `admin`, which needs mcp:admin, else a
// 403 insufficient_scope naming it). Without a token, or with an inactive Bearer
// token, it answers 401 with `WWW-Authenticate: Bearer resource_metadata="..."`
// (an inactive DPoP token: `DPoP error="invalid_token"`), and it serves
// /.well-known/oauth-protected-resource/mcp naming the issuer and both scopes.
// Its log has one line per authorization-server request (`AS <method> <path>
// <status> [error]`) and per DPoP or scope decision (`RS ...`), never a token.
//
// Pre-registered clients (test fixtures, loopback only): `resource-server` (the
// introspecting client, RS_SECRET) and `mcp-machine` (client credentials grant,
// MACHINE_SECRET).
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';

import * as jose from 'jose';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.argv[2]);
const rsPort = Number(process.argv[3]);
const ttl = Number(process.argv[4] ?? 3600);
if (![port, rsPort].every((p) => Number.isInteger(p) && p > 0)) {
  console.error('usage: provider.mjs <as-port> <rs-port> [access-token-ttl-seconds]');
  process.exit(2);
}
const ISSUER = `http://127.0.0.1:${port}`;
const RS_ORIGIN = `http://127.0.0.1:${rsPort}`;
const RESOURCE = `${RS_ORIGIN}/mcp`;
const SCOPE = 'mcp:tools';
// Needed by the `admin` tool only (step-up: a 403 insufficient_scope names it).
const ADMIN_SCOPE = 'mcp:admin';
const RS_ID = 'resource-server';
const RS_SECRET = 'resource-server-fixture-secret';
const MACHINE_ID = 'mcp-machine';
const MACHINE_SECRET = 'machine-fixture-secret';

const provider = new Provider(ISSUER, {
  clients: [
    {
      client_id: RS_ID,
      client_secret: RS_SECRET,
      redirect_uris: [],
      response_types: [],
      grant_types: [],
    },
    {
      client_id: MACHINE_ID,
      client_secret: MACHINE_SECRET,
      redirect_uris: [],
      response_types: [],
      grant_types: ['client_credentials'],
    },
  ],
  async findAccount(_ctx, id) {
    return { accountId: id, async claims() { return { sub: id }; } };
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  scopes: ['openid', 'offline_access', SCOPE, ADMIN_SCOPE],
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    clientCredentials: { enabled: true },
    dPoP: {
      enabled: true,
      nonceSecret: randomBytes(32),
      requireNonce: () => true,
    },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => RESOURCE,
      useGrantedResource: () => true,
      getResourceServerInfo(_ctx, indicator) {
        if (indicator !== RESOURCE) throw new errors.InvalidTarget();
        return {
          scope: `${SCOPE} ${ADMIN_SCOPE}`,
          audience: RESOURCE,
          accessTokenTTL: ttl,
          accessTokenFormat: 'opaque',
        };
      },
    },
  },
  rotateRefreshToken: true,
});
provider.on('server_error', (_ctx, err) => console.error('server_error', err));
// One line per authorization-server request: method, path, status and the OAuth
// error code (never a token), for the test to read in the peer's log.
provider.use(async (ctx, next) => {
  await next();
  if (ctx.path.startsWith('/.well-known/')) return;
  const error = ctx.body && typeof ctx.body === 'object' && ctx.body.error;
  console.log(`AS ${ctx.method} ${ctx.path} ${ctx.status}${error ? ` ${error}` : ''}`);
});

// Approves the pending prompt (login, then consent) and redirects back.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: 'tester' } };
  } else if (prompt.name === 'consent') {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  } else {
    result = { error: 'access_denied' };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

function send(res, status, body, headers = {}) {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function challenge(res, error) {
  const metadata = `${RS_ORIGIN}/.well-known/oauth-protected-resource/mcp`;
  const parts = [`resource_metadata="${metadata}"`, `scope="${SCOPE}"`];
  if (error) parts.push(`error="${error}"`);
  send(res, 401, { error: error ?? 'unauthorized' }, {
    'www-authenticate': `Bearer ${parts.join(', ')}`,
  });
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function introspect(token) {
  const response = await fetch(`${ISSUER}/token/introspection`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${RS_ID}:${RS_SECRET}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ token }).toString(),
  });
  return response.json();
}

const seenJti = new Set();
// The resource server's DPoP nonce, replaced after every NONCE_USES accepted
// proofs: a proof without the current one is answered `use_dpop_nonce`.
const NONCE_USES = 3;
let rsNonce = randomBytes(16).toString('base64url');
let rsNonceUses = 0;

// Why the DPoP proof of `req` for a token bound to `jkt` is refused, or null.
async function dpopRefusal(req, token, jkt) {
  const proof = req.headers.dpop;
  if (typeof proof !== 'string') return 'no DPoP proof';
  let verified;
  try {
    verified = await jose.jwtVerify(proof, jose.EmbeddedJWK, {
      typ: 'dpop+jwt',
      algorithms: ['ES256', 'EdDSA', 'PS256', 'RS256'],
    });
  } catch (e) {
    return `proof signature: ${e.code ?? e.message}`;
  }
  const { payload, protectedHeader } = verified;
  if (payload.htm !== req.method) return 'htm';
  if (payload.htu !== RESOURCE) return 'htu';
  if (typeof payload.iat !== 'number' || Math.abs(Date.now() / 1000 - payload.iat) > 60) return 'iat';
  const ath = createHash('sha256').update(token).digest('base64url');
  if (payload.ath !== ath) return 'ath';
  if (typeof payload.jti !== 'string' || seenJti.has(payload.jti)) return 'jti';
  seenJti.add(payload.jti);
  if (await jose.calculateJwkThumbprint(protectedHeader.jwk) !== jkt) return 'jkt';
  if (payload.nonce !== rsNonce) return 'nonce';
  rsNonceUses += 1;
  if (rsNonceUses >= NONCE_USES) {
    rsNonce = randomBytes(16).toString('base64url');
    rsNonceUses = 0;
  }
  return null;
}

async function mcp(req, res) {
  if (req.method !== 'POST') return send(res, 405, { error: 'method not allowed' });
  const authorization = req.headers.authorization ?? '';
  const match = /^(Bearer|DPoP) (\S+)$/i.exec(authorization);
  if (!match) return challenge(res);
  const [, scheme, token] = match;
  const info = await introspect(token);
  if (!info.active) {
    console.log(`RS inactive ${scheme} token`);
    if (scheme.toLowerCase() === 'dpop') {
      return send(res, 401, { error: 'invalid_token' }, {
        'www-authenticate': 'DPoP error="invalid_token", algs="ES256"',
      });
    }
    return challenge(res, 'invalid_token');
  }
  const audience = Array.isArray(info.aud) ? info.aud : [info.aud];
  if (!audience.includes(RESOURCE)) return challenge(res, 'invalid_token');
  const granted = String(info.scope ?? '').split(' ');
  if (!granted.includes(SCOPE)) {
    return send(res, 403, { error: 'insufficient_scope' }, {
      'www-authenticate': `Bearer error="insufficient_scope", scope="${SCOPE}"`,
    });
  }
  if (info.cnf?.jkt) {
    if (scheme.toLowerCase() !== 'dpop' || info.token_type !== 'DPoP') {
      console.error('refused: a DPoP-bound token sent as', scheme);
      return challenge(res, 'invalid_token');
    }
    const refusal = await dpopRefusal(req, token, info.cnf.jkt);
    if (refusal === 'nonce') {
      console.log('RS use_dpop_nonce');
      return send(res, 401, { error: 'use_dpop_nonce' }, {
        'www-authenticate': 'DPoP error="use_dpop_nonce", algs="ES256"',
        'dpop-nonce': rsNonce,
      });
    }
    if (refusal) {
      console.error('refused DPoP proof:', refusal);
      return send(res, 401, { error: 'invalid_dpop_proof' }, {
        'www-authenticate': 'DPoP error="invalid_dpop_proof", algs="ES256"',
      });
    }
    console.log('RS DPoP proof accepted');
  } else if (scheme.toLowerCase() !== 'bearer') {
    return challenge(res, 'invalid_token');
  }
  const message = JSON.parse(await readBody(req));
  if (message.id === undefined) return send(res, 202);
  const reply = (result) => send(res, 200, { jsonrpc: '2.0', id: message.id, result });
  switch (message.method) {
    case 'initialize':
      return reply({
        protocolVersion: '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'oidc-provider-resource', version: '1.0.0' },
      });
    case 'ping':
      return reply({});
    case 'tools/list':
      return reply({
        tools: [{
          name: 'whoami',
          description: 'The subject and client of the access token.',
          inputSchema: { type: 'object', properties: {} },
        }, {
          name: 'admin',
          description: 'Like whoami, with the mcp:admin scope.',
          inputSchema: { type: 'object', properties: {} },
        }],
      });
    case 'tools/call':
      if (message.params?.name === 'admin' && !granted.includes(ADMIN_SCOPE)) {
        console.log('RS insufficient_scope');
        const metadata = `${RS_ORIGIN}/.well-known/oauth-protected-resource/mcp`;
        return send(res, 403, { error: 'insufficient_scope' }, {
          'www-authenticate': `Bearer error="insufficient_scope", scope="${SCOPE} ${ADMIN_SCOPE}", resource_metadata="${metadata}"`,
        });
      }
      if (!['whoami', 'admin'].includes(message.params?.name)) {
        return send(res, 200, {
          jsonrpc: '2.0', id: message.id, error: { code: -32602, message: 'unknown tool' },
        });
      }
      return reply({
        content: [{
          type: 'text',
          text: `${info.sub ?? '-'} ${info.client_id} ${info.token_type}`,
        }],
        structuredContent: {
          sub: info.sub ?? null,
          client_id: info.client_id,
          token_type: info.token_type,
          scope: info.scope,
        },
      });
    default:
      return send(res, 200, {
        jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'method not found' },
      });
  }
}

function settle(handled, res) {
  handled.catch((e) => {
    console.error('resource/interaction error', e);
    if (!res.headersSent) send(res, 500, { error: 'server_error' });
  });
}

const callback = provider.callback();
const asServer = http.createServer((req, res) => {
  const path = new URL(req.url, ISSUER).pathname;
  if (path.startsWith('/interaction/') && req.method === 'GET') {
    return settle(interaction(req, res), res);
  }
  return callback(req, res);
});
const rsServer = http.createServer((req, res) => {
  const path = new URL(req.url, RS_ORIGIN).pathname;
  let handled;
  if (path === '/mcp') {
    handled = mcp(req, res);
  } else if (path === '/.well-known/oauth-protected-resource/mcp'
    || path === '/.well-known/oauth-protected-resource') {
    handled = Promise.resolve(send(res, 200, {
      resource: RESOURCE,
      authorization_servers: [ISSUER],
      scopes_supported: [SCOPE, ADMIN_SCOPE],
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: ['ES256'],
    }));
  } else {
    handled = Promise.resolve(send(res, 404, { error: 'not found' }));
  }
  settle(handled, res);
});
rsServer.listen(rsPort, '127.0.0.1', () => {
  asServer.listen(port, '127.0.0.1', () => {
    console.log(`listening: issuer ${ISSUER}, resource ${RESOURCE}`);
  });
});
