import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { type Algorithm, createSigner } from 'fast-jwt';
import { describe, expect, it } from 'vitest';
import {
  AuthError,
  algorithmsForPublicKey,
  createJwtVerifier,
  DEFAULT_JWT_MAX_LIFETIME_MS,
} from '../src/index.js';
import { hs256Raw as hs256, NOW, now, pem, privatePem, reasonOf, SECRET } from './jwt-support.js';

// Every algorithm the docs list for JWT_PUBLIC_KEY (RS*, PS*, ES*, EdDSA) verified end to end,
// the arithmetic of the clock checks at their edges, and the constructor's refusals (issue 33).

const nowSec = NOW / 1000;
const claims = { tenantId: 'acme', role: 'owner', exp: nowSec + 60 };

const sign = (key: KeyObject, algorithm: Algorithm, payload: object = claims) =>
  createSigner({ key: privatePem(key), algorithm, noTimestamp: true })(payload);

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pss = generateKeyPairSync('rsa-pss', { modulusLength: 2048 });
const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
const p521 = generateKeyPairSync('ec', { namedCurve: 'P-521' });
const ed25519 = generateKeyPairSync('ed25519');
const ed448 = generateKeyPairSync('ed448');

describe('every listed algorithm verifies with its key, and only with it', () => {
  const cases: [string, { publicKey: KeyObject; privateKey: KeyObject }, Algorithm[]][] = [
    ['RSA', rsa, ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512']],
    ['P-256', p256, ['ES256']],
    ['P-384', p384, ['ES384']],
    ['P-521', p521, ['ES512']],
    ['Ed25519', ed25519, ['EdDSA']],
    ['Ed448', ed448, ['EdDSA']],
  ];

  it.each(cases)('%s key: exactly %j', (_name, pair, algorithms) => {
    expect(algorithmsForPublicKey(pair.publicKey)).toEqual(algorithms);
  });

  it.each(cases.flatMap(([name, pair, algorithms]) => algorithms.map((alg) => [name, alg, pair] as const)))(
    '%s key verifies %s',
    async (_name, algorithm, pair) => {
      const verifier = createJwtVerifier({ publicKey: pem(pair.publicKey), now });
      await expect(verifier.verify(sign(pair.privateKey, algorithm))).resolves.toEqual(claims);
    },
  );

  it('an EC token of another curve size is refused as an algorithm, not checked', async () => {
    const verifier = createJwtVerifier({ publicKey: pem(p256.publicKey), now });
    expect(await reasonOf(verifier.verify(sign(p384.privateKey, 'ES384')))).toBe('invalid_algorithm');
    expect(await reasonOf(verifier.verify(sign(p521.privateKey, 'ES512')))).toBe('invalid_algorithm');
  });

  it('an RSA-PSS (id-RSASSA-PSS) key is refused at creation with a way out, not at every request', () => {
    expect(() => algorithmsForPublicKey(pss.publicKey)).toThrow(/RSA-PSS .* give the plain RSA public key/);
    expect(() => createJwtVerifier({ publicKey: pem(pss.publicKey), now })).toThrow(/RSA-PSS/);
  });

  it('refuses private keys and key types no JWT algorithm uses', () => {
    expect(() => algorithmsForPublicKey(rsa.privateKey)).toThrow('expected a public key');
    const k256 = generateKeyPairSync('ec', { namedCurve: 'secp256k1' });
    expect(() => algorithmsForPublicKey(k256.publicKey)).toThrow('unsupported EC curve secp256k1');
    expect(() => createJwtVerifier({ publicKey: pem(k256.publicKey) })).toThrow(/secp256k1/);
    const x25519 = generateKeyPairSync('x25519');
    expect(() => algorithmsForPublicKey(x25519.publicKey)).toThrow('unsupported public key type x25519');
  });
});

describe('clock arithmetic at the edges', () => {
  const at = (tolerance: number, maxLifetimeMs?: number) =>
    createJwtVerifier({
      secret: SECRET,
      now,
      clockTolerance: tolerance,
      ...(maxLifetimeMs === undefined ? {} : { maxLifetimeMs }),
    });

  it('exp: refused on and after it; the tolerance extends it by exactly that many ms', async () => {
    expect(await reasonOf(at(0).verify(hs256({ tenantId: 'a', exp: nowSec })))).toBe('expired');
    await expect(at(0).verify(hs256({ tenantId: 'a', exp: nowSec + 0.001 }))).resolves.toMatchObject({});
    await expect(at(1000).verify(hs256({ tenantId: 'a', exp: nowSec - 0.999 }))).resolves.toMatchObject({});
    expect(await reasonOf(at(1000).verify(hs256({ tenantId: 'a', exp: nowSec - 1 })))).toBe('expired');
  });

  it('nbf: accepted from it on; the tolerance accepts it that many ms early, not one more', async () => {
    await expect(
      at(0).verify(hs256({ tenantId: 'a', exp: nowSec + 60, nbf: nowSec })),
    ).resolves.toMatchObject({});
    expect(
      await reasonOf(at(0).verify(hs256({ tenantId: 'a', exp: nowSec + 60, nbf: nowSec + 0.001 }))),
    ).toBe('not_yet_valid');
    await expect(
      at(5000).verify(hs256({ tenantId: 'a', exp: nowSec + 60, nbf: nowSec + 5 })),
    ).resolves.toMatchObject({});
    expect(
      await reasonOf(at(5000).verify(hs256({ tenantId: 'a', exp: nowSec + 60, nbf: nowSec + 5.001 }))),
    ).toBe('not_yet_valid');
  });

  it('lifetime cap: exp - now up to the cap (plus the tolerance) is accepted, one ms more is not', async () => {
    await expect(at(0, 60_000).verify(hs256({ tenantId: 'a', exp: nowSec + 60 }))).resolves.toMatchObject({});
    expect(await reasonOf(at(0, 60_000).verify(hs256({ tenantId: 'a', exp: nowSec + 60.001 })))).toBe(
      'lifetime_too_long',
    );
    await expect(at(2000, 60_000).verify(hs256({ tenantId: 'a', exp: nowSec + 62 }))).resolves.toMatchObject(
      {},
    );
    expect(await reasonOf(at(2000, 60_000).verify(hs256({ tenantId: 'a', exp: nowSec + 62.001 })))).toBe(
      'lifetime_too_long',
    );
    expect(DEFAULT_JWT_MAX_LIFETIME_MS).toBe(30 * 24 * 3600 * 1000);
  });

  it('a cached token is re-checked against the clock and the cap on every use', async () => {
    let clock = NOW;
    const verifier = createJwtVerifier({ secret: SECRET, now: () => clock, maxLifetimeMs: 60_000 });
    const token = hs256({ tenantId: 'a', exp: nowSec + 60, nbf: nowSec });
    await expect(verifier.verify(token)).resolves.toMatchObject({ tenantId: 'a' });
    clock = NOW - 1;
    expect(await reasonOf(verifier.verify(token))).toBe('lifetime_too_long');
    clock = NOW + 60_000;
    expect(await reasonOf(verifier.verify(token))).toBe('expired');
  });
});

describe('the verifier refuses unusable options at creation', () => {
  it.each([
    [{ secret: '' }, 'the JWT secret must not be empty'],
    [{ secret: SECRET, clockTolerance: -1 }, 'clockTolerance must be ≥ 0 ms'],
    [{ secret: SECRET, clockTolerance: Number.NaN }, 'clockTolerance must be ≥ 0 ms'],
    [{ secret: SECRET, clockTolerance: Number.POSITIVE_INFINITY }, 'clockTolerance must be ≥ 0 ms'],
    [{ secret: SECRET, maxLifetimeMs: 0 }, 'maxLifetimeMs must be > 0'],
    [{ secret: SECRET, maxLifetimeMs: -5 }, 'maxLifetimeMs must be > 0'],
    [{ secret: SECRET, maxLifetimeMs: Number.NaN }, 'maxLifetimeMs must be > 0'],
    [{}, 'exactly one of secret, publicKey or jwksUrl is required'],
    [
      { secret: SECRET, jwksUrl: 'https://idp.example/jwks' },
      'exactly one of secret, publicKey or jwksUrl is required',
    ],
    [{ secret: '-----BEGIN PUBLIC KEY-----' }, 'the JWT secret looks like a PEM key; use publicKey'],
    [{ publicKey: 'nope' }, 'the JWT public key is not a readable PEM public key'],
  ])('%j → %s', (options, message) => {
    expect(() => createJwtVerifier(options)).toThrow(message);
  });

  it('a zero tolerance is allowed; the defaults are no tolerance and a 30-day cap', async () => {
    expect(() => createJwtVerifier({ secret: SECRET, clockTolerance: 0 })).not.toThrow();
    const verifier = createJwtVerifier({ secret: SECRET, now });
    const day = 24 * 3600;
    await expect(verifier.verify(hs256({ tenantId: 'a', exp: nowSec + 30 * day }))).resolves.toMatchObject(
      {},
    );
    expect(await reasonOf(verifier.verify(hs256({ tenantId: 'a', exp: nowSec + 30 * day + 0.001 })))).toBe(
      'lifetime_too_long',
    );
  });
});

describe('what each refusal says', () => {
  const verifier = createJwtVerifier({ secret: SECRET, now });
  it.each([
    [hs256({ tenantId: 'a', exp: nowSec - 1 }), 'expired', 'Token expired'],
    [hs256({ tenantId: 'a', exp: nowSec + 60, nbf: nowSec + 30 }), 'not_yet_valid', 'Token not yet valid'],
    [hs256({ tenantId: 'a' }), 'missing_exp', 'Token has no exp claim'],
    [hs256({ exp: nowSec + 60 }), 'missing_tenant', 'Token has no tenantId claim'],
    [
      hs256({ tenantId: 'a', exp: nowSec + 60, role: 'king' }),
      'invalid_claims',
      'Token claims are invalid: role',
    ],
    [
      hs256({ tenantId: 'a', exp: nowSec + 60 * 24 * 3600 }),
      'lifetime_too_long',
      'Token lifetime too long: exp is further ahead than this server accepts',
    ],
    [
      hs256({ tenantId: 'a', exp: nowSec + 60 }, 'another-secret'),
      'invalid_signature',
      'Invalid token signature',
    ],
    ['not.a.jwt', 'invalid_token', 'Invalid token'],
    [hs256([1, 2]), 'invalid_token', 'Invalid token'],
  ])('%s → %s', async (token, reason, message) => {
    const error = await verifier.verify(token).then(
      () => undefined,
      (e: unknown) => e as AuthError,
    );
    expect(error).toBeInstanceOf(AuthError);
    expect(error).toMatchObject({ reason, code: reason, statusCode: 401, message });
  });

  it('an algorithm the key does not allow', async () => {
    const error = (await createJwtVerifier({ publicKey: pem(p256.publicKey), now })
      .verify(hs256(claims))
      .catch((e: unknown) => e)) as AuthError;
    expect(error).toMatchObject({ reason: 'invalid_algorithm', message: 'Token algorithm not allowed' });
  });
});
