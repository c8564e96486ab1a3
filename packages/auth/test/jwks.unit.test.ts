import { sign as cryptoSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Algorithm, createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthError, createJwtVerifier } from '../src/index.js';
import { NOW, privatePem, reasonOf } from './jwt-support.js';

const nowSec = Math.floor(NOW / 1000);
const claims = { tenantId: 'acme', role: 'admin', exp: nowSec + 60 };

const rsaA = generateKeyPairSync('rsa', { modulusLength: 2048 });
const rsaB = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ed = generateKeyPairSync('ed25519');
const k256 = generateKeyPairSync('ec', { namedCurve: 'secp256k1' });

const jwk = (key: KeyObject, extra: Record<string, unknown>) => ({
  ...key.export({ format: 'jwk' }),
  ...extra,
});
const sign = (key: KeyObject, algorithm: Algorithm, kid?: string) =>
  createSigner({ key: privatePem(key), algorithm, noTimestamp: true, ...(kid ? { kid } : {}) })(claims);

// A real HTTP server on loopback serving whatever key set the test puts in `served`.
let served: { status: number; body: unknown } = { status: 200, body: { keys: [] } };
let hits = 0;
let accepts: (string | undefined)[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    hits += 1;
    accepts.push(req.headers.accept);
    res.writeHead(served.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(served.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
});

afterAll(async () => {
  await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
});

function serve(keys: unknown[], status = 200) {
  served = { status, body: { keys } };
  hits = 0;
  accepts = [];
}

describe('JWKS', () => {
  it('verifies an RS256 token by kid, fetching the set once', async () => {
    serve([jwk(rsaB.publicKey, { kid: 'b', alg: 'RS256', use: 'sig' }), jwk(rsaA.publicKey, { kid: 'a' })]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    await expect(verifier.verify(sign(rsaA.privateKey, 'RS256', 'a'))).resolves.toEqual(claims);
    await expect(verifier.verify(sign(rsaB.privateKey, 'RS256', 'b'))).resolves.toEqual(claims);
    expect(hits).toBe(1);
  });

  it('verifies ES256 from an EC JWK', async () => {
    serve([jwk(ec.publicKey, { kid: 'e' })]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    await expect(verifier.verify(sign(ec.privateKey, 'ES256', 'e'))).resolves.toEqual(claims);
  });

  it('refuses a token whose kid names another key', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a' }), jwk(rsaB.publicKey, { kid: 'b' })]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    expect(await reasonOf(verifier.verify(sign(rsaA.privateKey, 'RS256', 'b')))).toBe('invalid_signature');
  });

  it('refuses an algorithm the JWK does not declare', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a', alg: 'PS256' })]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    expect(await reasonOf(verifier.verify(sign(rsaA.privateKey, 'RS256', 'a')))).toBe('invalid_algorithm');
  });

  it('refuses an HS256 token even when the set holds a symmetric key', async () => {
    const secret = Buffer.from('shared-secret-shared-secret-0123').toString('base64url');
    serve([{ kty: 'oct', k: secret, kid: 'h' }]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    const token = createSigner({ key: 'shared-secret-shared-secret-0123', algorithm: 'HS256', kid: 'h' })(
      claims,
    );
    expect(await reasonOf(verifier.verify(token))).toBe('unknown_key');
  });

  it('re-fetches on an unknown kid (key rotation), at most once per interval', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a' })]);
    let t = NOW;
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => t, jwksMinRefreshIntervalMs: 30_000 });
    await expect(verifier.verify(sign(rsaA.privateKey, 'RS256', 'a'))).resolves.toEqual(claims);
    expect(hits).toBe(1);

    // Rotation: the new key appears after the first fetch; an unknown kid triggers one refresh.
    t += 31_000;
    served = {
      status: 200,
      body: { keys: [jwk(rsaA.publicKey, { kid: 'a' }), jwk(rsaB.publicKey, { kid: 'b' })] },
    };
    await expect(verifier.verify(sign(rsaB.privateKey, 'RS256', 'b'))).resolves.toEqual(claims);
    expect(hits).toBe(2);

    // A flood of unknown kids within the interval costs no further fetch.
    for (const kid of ['x', 'y', 'z']) {
      expect(await reasonOf(verifier.verify(sign(rsaA.privateKey, 'RS256', kid)))).toBe('unknown_key');
    }
    expect(hits).toBe(2);

    t += 31_000;
    expect(await reasonOf(verifier.verify(sign(rsaA.privateKey, 'RS256', 'x')))).toBe('unknown_key');
    expect(hits).toBe(3);
  });

  it('shares one fetch between concurrent verifications', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a' })]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    const token = sign(rsaA.privateKey, 'RS256', 'a');
    const results = await Promise.all(Array.from({ length: 5 }, () => verifier.verify(token)));
    expect(results).toHaveLength(5);
    expect(hits).toBe(1);
  });

  it('accepts a token without kid only against a one-key set', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a' })]);
    const one = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    await expect(one.verify(sign(rsaA.privateKey, 'RS256'))).resolves.toEqual(claims);

    serve([jwk(rsaA.publicKey, { kid: 'a' }), jwk(rsaB.publicKey, { kid: 'b' })]);
    const two = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    expect(await reasonOf(two.verify(sign(rsaA.privateKey, 'RS256')))).toBe('unknown_key');
  });

  it('reports an unreachable key set, and keeps a cached set when a later fetch fails', async () => {
    serve([], 500);
    const down = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    expect(await reasonOf(down.verify(sign(rsaA.privateKey, 'RS256', 'a')))).toBe('jwks_unavailable');

    serve([jwk(rsaA.publicKey, { kid: 'a' })]);
    let t = NOW;
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => t, jwksMaxAgeMs: 60_000 });
    const longLived = { ...claims, exp: nowSec + 3600 };
    const token = createSigner({ key: privatePem(rsaA.privateKey), algorithm: 'RS256', kid: 'a' })(longLived);
    await expect(verifier.verify(token)).resolves.toEqual(longLived);
    serve([], 500);
    t += 120_000; // stale: a re-fetch is attempted, fails, and the cached key still serves
    await expect(verifier.verify(token)).resolves.toEqual(longLived);
    expect(hits).toBe(1);
  });

  it('verifies EdDSA from an OKP (Ed25519) JWK', async () => {
    serve([jwk(ed.publicKey, { kid: 'd', alg: 'EdDSA' })]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    await expect(verifier.verify(sign(ed.privateKey, 'EdDSA', 'd'))).resolves.toEqual(claims);
  });

  it('asks for JSON', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a' })]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    await verifier.verify(sign(rsaA.privateKey, 'RS256', 'a'));
    expect(accepts).toEqual(['application/json']);
  });

  it('drops keys it must not verify with, keeping the others', async () => {
    serve([
      jwk(rsaB.publicKey, { kid: 'enc', use: 'enc' }), // an encryption key
      jwk(rsaB.publicKey, { kid: 'es', alg: 'ES256' }), // an algorithm the key cannot verify
      jwk(rsaB.publicKey, { kid: 'num', alg: 256 }), // an alg that names no algorithm
      jwk(k256.publicKey, { kid: 'k1' }), // a curve no JWT algorithm uses
      { kty: 'RSA', kid: 'bad', n: 'AA', e: 'AQAB' }, // an unreadable key
      jwk(rsaA.publicKey, { kid: 'a', use: 'sig' }),
    ]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    for (const kid of ['enc', 'es', 'num']) {
      expect(await reasonOf(verifier.verify(sign(rsaB.privateKey, 'RS256', kid)))).toBe('unknown_key');
    }
    expect(await reasonOf(verifier.verify(sign(ec.privateKey, 'ES256', 'k1')))).toBe('unknown_key');
    await expect(verifier.verify(sign(rsaA.privateKey, 'RS256', 'a'))).resolves.toEqual(claims);
  });

  it('matches a JWK whose kid is not a string with no token', async () => {
    serve([jwk(rsaA.publicKey, { kid: 5 }), jwk(rsaB.publicKey, { kid: 'b' })]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    expect(await reasonOf(verifier.verify(sign(rsaA.privateKey, 'RS256', '5')))).toBe('unknown_key');
  });

  it('refuses a kid that is not a string, even against a one-key set', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a' })]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    // By hand: fast-jwt's signer types `kid` as a string.
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const input = `${b64({ alg: 'RS256', typ: 'JWT', kid: 5 })}.${b64(claims)}`;
    const token = `${input}.${cryptoSign('sha256', Buffer.from(input), rsaA.privateKey).toString('base64url')}`;
    const error = await verifier.verify(token).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect(error).toMatchObject({ reason: 'invalid_token', message: 'Invalid token' });
  });

  it('re-fetches on an unknown kid from exactly the refresh interval on, not a millisecond before', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a' })]);
    let t = NOW;
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => t, jwksMinRefreshIntervalMs: 30_000 });
    await verifier.verify(sign(rsaA.privateKey, 'RS256', 'a'));
    served = {
      status: 200,
      body: { keys: [jwk(rsaA.publicKey, { kid: 'a' }), jwk(rsaB.publicKey, { kid: 'b' })] },
    };
    t = NOW + 29_999;
    expect(await reasonOf(verifier.verify(sign(rsaB.privateKey, 'RS256', 'b')))).toBe('unknown_key');
    expect(hits).toBe(1);
    t = NOW + 30_000;
    await expect(verifier.verify(sign(rsaB.privateKey, 'RS256', 'b'))).resolves.toEqual(claims);
    expect(hits).toBe(2);
  });

  it('re-fetches a known key set only once it is older than the max age', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a' })]);
    let t = NOW;
    const verifier = createJwtVerifier({
      jwksUrl: url,
      now: () => t,
      jwksMinRefreshIntervalMs: 30_000,
      jwksMaxAgeMs: 60_000,
    });
    const longLived = { ...claims, exp: nowSec + 3600 };
    const token = createSigner({ key: privatePem(rsaA.privateKey), algorithm: 'RS256', kid: 'a' })(longLived);
    await expect(verifier.verify(token)).resolves.toEqual(longLived);
    // Past the refresh interval but not stale: a known kid costs no fetch.
    t = NOW + 60_000;
    await expect(verifier.verify(token)).resolves.toEqual(longLived);
    expect(hits).toBe(1);
    // Stale: re-fetched before use; a key withdrawn from the set stops verifying.
    served = { status: 200, body: { keys: [jwk(rsaB.publicKey, { kid: 'b' })] } };
    t = NOW + 60_001;
    expect(await reasonOf(verifier.verify(token))).toBe('unknown_key');
    expect(hits).toBe(2);
  });

  it('refuses an alg:none or non-string alg header before any key lookup: it costs no fetch', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a' })]);
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => NOW });
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const signed = (header: object) => {
      const input = `${b64(header)}.${b64(claims)}`;
      return `${input}.${cryptoSign('sha256', Buffer.from(input), rsaA.privateKey).toString('base64url')}`;
    };
    for (const header of [{ alg: 'none', kid: 'a' }, { alg: 256, kid: 'a' }, { kid: 'a' }]) {
      expect(await reasonOf(verifier.verify(signed(header)))).toBe('invalid_algorithm');
    }
    expect(await reasonOf(verifier.verify(`${b64({ alg: 'none', kid: 'a' })}.${b64(claims)}.`))).toBe(
      'invalid_algorithm',
    );
    expect(hits).toBe(0);
  });

  it('re-fetches on an unknown kid at most every 30 s by default', async () => {
    serve([jwk(rsaA.publicKey, { kid: 'a' })]);
    let t = NOW;
    const verifier = createJwtVerifier({ jwksUrl: url, now: () => t });
    await verifier.verify(sign(rsaA.privateKey, 'RS256', 'a'));
    t = NOW + 29_999;
    expect(await reasonOf(verifier.verify(sign(rsaA.privateKey, 'RS256', 'x')))).toBe('unknown_key');
    expect(hits).toBe(1);
    t = NOW + 30_000;
    expect(await reasonOf(verifier.verify(sign(rsaA.privateKey, 'RS256', 'x')))).toBe('unknown_key');
    expect(hits).toBe(2);
  });

  it('gives up on a key set that does not answer within the timeout', async () => {
    const silent = createServer(() => {
      // never answers
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as AddressInfo).port;
      const verifier = createJwtVerifier({
        jwksUrl: `http://127.0.0.1:${port}/jwks`,
        now: () => NOW,
        jwksTimeoutMs: 100,
      });
      expect(await reasonOf(verifier.verify(sign(rsaA.privateKey, 'RS256', 'a')))).toBe('jwks_unavailable');
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  }, 5_000);
});
