import { describe, expect, it } from 'vitest';
import { REDACT_PATHS, redactAddressesInUrl, requestLogFields, responseLogFields } from '../src/index.js';

describe('redaction', () => {
  it('lists the credential headers for pino', () => {
    expect(REDACT_PATHS).toContain('req.headers.authorization');
    expect(REDACT_PATHS).toContain('req.headers["x-api-key"]');
  });

  it('responseLogFields censors a set-cookie and leaves the rest as logged', () => {
    const plain = { statusCode: 200 };
    expect(responseLogFields(plain)).toBe(plain);
    expect(responseLogFields({ statusCode: 200, headers: { 'set-cookie': 'sid=1', etag: 'x' } })).toEqual({
      statusCode: 200,
      headers: { 'set-cookie': '[REDACTED]', etag: 'x' },
    });
    expect(responseLogFields(null)).toBe(null);
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
