import { SCOPES } from '@tern/contracts';
import { describe, expect, it } from 'vitest';
import {
  generateApiKey,
  hasScope,
  isScope,
  missingScopes,
  REDACT_PATHS,
  redactAddressesInUrl,
  redactSecrets,
  requestLogFields,
  signDashboardToken,
} from '../src/index.js';

describe('scopes', () => {
  it('grants exactly the named scopes, with no implication', () => {
    expect(hasScope(['email:read'], 'email:read')).toBe(true);
    expect(hasScope(['email:send'], 'email:read')).toBe(false);
    expect(hasScope([], 'email:read')).toBe(false);
    expect(hasScope(['email:*'], 'email:read')).toBe(false);
  });

  it('lists the missing scopes', () => {
    expect(missingScopes(['email:read'], ['email:read', 'templates:read'])).toEqual(['templates:read']);
    expect(missingScopes([...SCOPES], [...SCOPES])).toEqual([]);
  });

  it('knows the 14 scopes and nothing else', () => {
    expect(SCOPES.every(isScope)).toBe(true);
    expect(isScope('email:write')).toBe(false);
  });
});

describe('redaction', () => {
  it('lists the credential headers for pino', () => {
    expect(REDACT_PATHS).toContain('req.headers.authorization');
    expect(REDACT_PATHS).toContain('req.headers["x-api-key"]');
  });

  it('masks API keys in free text but keeps their listable prefix', () => {
    const { key, prefix } = generateApiKey();
    const out = redactSecrets(`lookup failed for key=${key} (tenant acme)`);
    expect(out).not.toContain(key);
    expect(out).toBe(`lookup failed for key=${prefix}[REDACTED] (tenant acme)`);
  });

  it('masks JWTs and bearer credentials', () => {
    const jwt = signDashboardToken({ secret: 's3cret', tenantId: 'acme', expiresInSeconds: 60 });
    const out = redactSecrets(`token ${jwt} refused; header was "Bearer some-ingest-token"`);
    expect(out).not.toContain(jwt);
    expect(out).not.toContain('some-ingest-token');
    expect(out).toBe('token [REDACTED] refused; header was "Bearer [REDACTED]"');
  });

  it('leaves ordinary text alone', () => {
    const text = 'connect ECONNREFUSED 127.0.0.1:5432 at db.internal.example.com; tern_ is the key prefix';
    expect(redactSecrets(text)).toBe(text);
  });
});

describe('redactAddressesInUrl', () => {
  it.each([
    ['/suppressions/a%40b.test', '/suppressions/[address]'],
    ['/suppressions/A@B.test', '/suppressions/[address]'],
    ['/suppressions/a%40b.test/', '/suppressions/[address]/'],
    ['/contacts?email=a%40b.test&limit=5', '/contacts?email=[address]&limit=5'],
    ['/contacts?q=a@b&x', '/contacts?q=[address]&x'],
    ['/x?a%40b', '/x?[address]'],
    ['/emails/em_1?limit=5', '/emails/em_1?limit=5'],
    ['/', '/'],
  ])('%s → %s', (url, logged) => {
    expect(redactAddressesInUrl(url)).toBe(logged);
  });

  it('requestLogFields keeps Fastify’s fields, the URL masked', () => {
    expect(
      requestLogFields({ method: 'DELETE', url: '/suppressions/a%40b.test', host: 'h', ip: '127.0.0.1' }),
    ).toEqual({ method: 'DELETE', url: '/suppressions/[address]', host: 'h', remoteAddress: '127.0.0.1' });
  });
});
