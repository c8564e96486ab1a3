import { createHmac, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { type Algorithm, createSigner } from 'fast-jwt';
import { describe, expect, it } from 'vitest';
import { AuthError, createJwtVerifier, signDashboardToken } from '../src/index.js';
import { b64url, hs256Raw, NOW, now, pem, privatePem, reasonOf, SECRET } from './jwt-support.js';

const nowSec = Math.floor(NOW / 1000);

function hs256(payload: Record<string, unknown>, secret = SECRET): string {
  return createSigner({ key: secret, algorithm: 'HS256', noTimestamp: true })(payload);
}

describe('HS256 secret', () => {
  const verifier = createJwtVerifier({ secret: SECRET, now });

  it('accepts a good token and returns its claims', async () => {
    const token = signDashboardToken({
      secret: SECRET,
      tenantId: 'acme',
      role: 'admin',
      sub: 'user-1',
      expiresInSeconds: 3600,
      now,
    });
    await expect(verifier.verify(token)).resolves.toEqual({
      tenantId: 'acme',
      sub: 'user-1',
      role: 'admin',
      exp: nowSec + 3600,
    });
  });

  it('defaults the role to member and omits an absent sub', async () => {
    const claims = await verifier.verify(hs256({ tenantId: 'acme', exp: nowSec + 60 }));
    expect(claims).toEqual({ tenantId: 'acme', role: 'member', exp: nowSec + 60 });
    expect('sub' in claims).toBe(false);
  });

  it('refuses a bad signature', async () => {
    const token = hs256({ tenantId: 'acme', exp: nowSec + 60 }, 'another-secret');
    expect(await reasonOf(verifier.verify(token))).toBe('invalid_signature');
  });

  it('refuses a tampered payload', async () => {
    const [header, , signature] = hs256({ tenantId: 'acme', exp: nowSec + 60 }).split('.');
    const forged = `${header}.${b64url({ tenantId: 'other', exp: nowSec + 60 })}.${signature}`;
    expect(await reasonOf(verifier.verify(forged))).toBe('invalid_signature');
  });

  it('refuses an expired token, and one expiring exactly now', async () => {
    expect(await reasonOf(verifier.verify(hs256({ tenantId: 'acme', exp: nowSec - 1 })))).toBe('expired');
    expect(await reasonOf(verifier.verify(hs256({ tenantId: 'acme', exp: nowSec })))).toBe('expired');
  });

  it('checks the clock again on every use of a token it verified before', async () => {
    let at = NOW;
    const clocked = createJwtVerifier({ secret: SECRET, now: () => at });
    const token = hs256({ tenantId: 'acme', exp: nowSec + 60, nbf: nowSec + 10 });
    expect(await reasonOf(clocked.verify(token))).toBe('not_yet_valid');
    at = NOW + 10_000;
    await expect(clocked.verify(token)).resolves.toMatchObject({ tenantId: 'acme' });
    await expect(clocked.verify(token)).resolves.toMatchObject({ tenantId: 'acme' });
    at = NOW + 60_000;
    expect(await reasonOf(clocked.verify(token))).toBe('expired');
    // A forged twin of a verified token is another string: verified afresh, refused.
    const [header, payload] = token.split('.');
    expect(await reasonOf(clocked.verify(`${header}.${payload}.${'A'.repeat(43)}`))).toBe(
      'invalid_signature',
    );
  });

  it('honours clockTolerance (milliseconds) on exp', async () => {
    const lenient = createJwtVerifier({ secret: SECRET, now, clockTolerance: 5_000 });
    const token = hs256({ tenantId: 'acme', exp: nowSec - 2 });
    await expect(lenient.verify(token)).resolves.toMatchObject({ tenantId: 'acme' });
    expect(await reasonOf(lenient.verify(hs256({ tenantId: 'acme', exp: nowSec - 10 })))).toBe('expired');
  });

  it('reads the injected clock at every call', async () => {
    let t = NOW;
    const moving = createJwtVerifier({ secret: SECRET, now: () => t });
    const token = hs256({ tenantId: 'acme', exp: nowSec + 10 });
    await expect(moving.verify(token)).resolves.toMatchObject({ tenantId: 'acme' });
    t = NOW + 11_000;
    expect(await reasonOf(moving.verify(token))).toBe('expired');
  });

  it('refuses a token not yet valid (nbf)', async () => {
    const token = hs256({ tenantId: 'acme', exp: nowSec + 600, nbf: nowSec + 60 });
    expect(await reasonOf(verifier.verify(token))).toBe('not_yet_valid');
  });

  it('refuses a token without tenantId', async () => {
    expect(await reasonOf(verifier.verify(hs256({ sub: 'u', exp: nowSec + 60 })))).toBe('missing_tenant');
  });

  it('refuses a tenantId outside the id shape', async () => {
    const token = hs256({ tenantId: 'has space', exp: nowSec + 60 });
    expect(await reasonOf(verifier.verify(token))).toBe('invalid_claims');
    expect(await reasonOf(verifier.verify(hs256({ tenantId: 42, exp: nowSec + 60 })))).toBe('invalid_claims');
  });

  it('refuses a token without exp', async () => {
    expect(await reasonOf(verifier.verify(hs256({ tenantId: 'acme' })))).toBe('missing_exp');
  });

  it('refuses a non-numeric exp', async () => {
    const token = hs256Raw({ tenantId: 'acme', exp: String(nowSec + 60) });
    expect(await reasonOf(verifier.verify(token))).toBe('invalid_claims');
  });

  it('refuses an unknown role', async () => {
    const token = hs256({ tenantId: 'acme', role: 'superuser', exp: nowSec + 60 });
    const error = await verifier.verify(token).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect((error as AuthError).reason).toBe('invalid_claims');
    expect((error as AuthError).message).toContain('role');
  });

  it('refuses an alg:none token, with or without a signature segment', async () => {
    const body = b64url({ tenantId: 'acme', role: 'owner', exp: nowSec + 60 });
    const unsigned = `${b64url({ alg: 'none', typ: 'JWT' })}.${body}.`;
    expect(await reasonOf(verifier.verify(unsigned))).toBe('invalid_algorithm');
    const withJunk = `${b64url({ alg: 'none' })}.${body}.c2lnbmF0dXJl`;
    expect(await reasonOf(verifier.verify(withJunk))).toBe('invalid_algorithm');
    // An HS256 header with the signature stripped must not pass either.
    const stripped = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${body}.`;
    expect(await reasonOf(verifier.verify(stripped))).toBe('invalid_signature');
  });

  it('refuses HS384/HS512 tokens signed with the same secret (HS256 only)', async () => {
    const token = createSigner({ key: SECRET, algorithm: 'HS512', noTimestamp: true })({
      tenantId: 'acme',
      exp: nowSec + 60,
    });
    expect(await reasonOf(verifier.verify(token))).toBe('invalid_algorithm');
  });

  it('refuses garbage, empty and oversized input', async () => {
    for (const bad of ['', 'not-a-token', 'a.b', 'a.b.c', '!!!.???.***', `${'a'.repeat(9000)}.b.c`]) {
      expect(await reasonOf(verifier.verify(bad))).toBe('invalid_token');
    }
  });

  it('refuses a validly signed token longer than 8192 characters, accepts one of exactly 8192', async () => {
    const padded = (length: number) => {
      for (let pad = 0; pad < 8192; pad += 1) {
        const token = hs256({ tenantId: 'acme', exp: nowSec + 60, pad: 'x'.repeat(pad) });
        if (token.length >= length) return token;
      }
      throw new Error('unreachable');
    };
    const longest = padded(8192);
    expect(longest).toHaveLength(8192);
    await expect(verifier.verify(longest)).resolves.toEqual({
      tenantId: 'acme',
      role: 'member',
      exp: nowSec + 60,
    });
    const over = padded(8193);
    expect(over.length).toBeGreaterThan(8192);
    expect(await reasonOf(verifier.verify(over))).toBe('invalid_token');
  });

  it('refuses a missing or non-string token as invalid_token, not with a crash', async () => {
    for (const missing of [undefined, null, 42, {}]) {
      expect(await reasonOf(verifier.verify(missing as unknown as string))).toBe('invalid_token');
    }
  });

  it('refuses a PEM in the secret slot at creation', () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(() => createJwtVerifier({ secret: pem(publicKey) })).toThrow(/PEM/);
  });

  it('requires exactly one key source', () => {
    expect(() => createJwtVerifier({})).toThrow(/exactly one/);
    expect(() => createJwtVerifier({ secret: SECRET, jwksUrl: 'http://127.0.0.1/jwks' })).toThrow(
      /exactly one/,
    );
  });
});

describe('public keys', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const ed = generateKeyPairSync('ed25519');
  const claims = { tenantId: 'acme', role: 'owner', exp: nowSec + 60 };
  const sign = (key: KeyObject, algorithm: Algorithm) =>
    createSigner({ key: privatePem(key), algorithm, noTimestamp: true })(claims);

  it.each([
    ['verifies RS256 with a PEM public key', rsa, 'RS256'],
    ['verifies PS256 with an RSA key', rsa, 'PS256'],
    ['verifies ES256 with a P-256 public key', ec, 'ES256'],
    ['verifies EdDSA with an Ed25519 public key', ed, 'EdDSA'],
  ] as const)('%s', async (_what, pair, algorithm) => {
    const verifier = createJwtVerifier({ publicKey: pem(pair.publicKey), now });
    await expect(verifier.verify(sign(pair.privateKey, algorithm))).resolves.toEqual(claims);
  });

  it('refuses a token signed by another key pair', async () => {
    const verifier = createJwtVerifier({ publicKey: pem(ec.publicKey), now });
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(await reasonOf(verifier.verify(sign(other.privateKey, 'ES256')))).toBe('invalid_signature');
  });

  it('refuses an HS256 token, even one using the public key PEM as its secret', async () => {
    const publicPem = pem(rsa.publicKey);
    const verifier = createJwtVerifier({ publicKey: publicPem, now });
    expect(await reasonOf(verifier.verify(hs256(claims)))).toBe('invalid_algorithm');
    // The classic algorithm-confusion forgery: HMAC keyed with the (public) PEM text.
    const header = b64url({ alg: 'HS256', typ: 'JWT' });
    const body = b64url(claims);
    const mac = createHmac('sha256', publicPem).update(`${header}.${body}`).digest('base64url');
    expect(await reasonOf(verifier.verify(`${header}.${body}.${mac}`))).toBe('invalid_algorithm');
  });

  it('refuses an algorithm of another key family', async () => {
    const verifier = createJwtVerifier({ publicKey: pem(rsa.publicKey), now });
    expect(await reasonOf(verifier.verify(sign(ec.privateKey, 'ES256')))).toBe('invalid_algorithm');
  });

  it('still checks claims on a validly signed token', async () => {
    const verifier = createJwtVerifier({ publicKey: pem(ec.publicKey), now });
    const token = createSigner({ key: privatePem(ec.privateKey), algorithm: 'ES256', noTimestamp: true })({
      exp: nowSec + 60,
    });
    expect(await reasonOf(verifier.verify(token))).toBe('missing_tenant');
  });

  it('refuses an unreadable public key at creation, saying why', () => {
    expect(() => createJwtVerifier({ publicKey: 'not a pem' })).toThrow(/public key/);
    const error = (() => {
      try {
        createJwtVerifier({ publicKey: 'not a pem' });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error?.cause).toBeInstanceOf(Error);
  });
});

describe('lifetime cap (issue 9, item 6)', () => {
  it('refuses a token whose exp is more than 30 days ahead by default, accepts one at 30 days', async () => {
    const verifier = createJwtVerifier({ secret: SECRET, now });
    const day = 24 * 3600;
    expect(await reasonOf(verifier.verify(hs256({ tenantId: 'acme', exp: nowSec + 30 * day + 1 })))).toBe(
      'lifetime_too_long',
    );
    expect(await reasonOf(verifier.verify(hs256({ tenantId: 'acme', exp: nowSec + 100 * 365 * day })))).toBe(
      'lifetime_too_long',
    );
    await expect(verifier.verify(hs256({ tenantId: 'acme', exp: nowSec + 30 * day }))).resolves.toMatchObject(
      {
        tenantId: 'acme',
      },
    );
  });

  it('takes a configured cap', async () => {
    const strict = createJwtVerifier({ secret: SECRET, now, maxLifetimeMs: 3600_000 });
    expect(await reasonOf(strict.verify(hs256({ tenantId: 'acme', exp: nowSec + 3601 })))).toBe(
      'lifetime_too_long',
    );
    await expect(strict.verify(hs256({ tenantId: 'acme', exp: nowSec + 3600 }))).resolves.toMatchObject({
      tenantId: 'acme',
    });
  });
});
