import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { type Algorithm, createSigner } from 'fast-jwt';
import { describe, expect, it } from 'vitest';
import { createJwtVerifier } from '../src/index.js';
import { publicKeyCheck, signatureCheck } from '../src/jwt-keys.js';

// The signature check of one key on its own: the algorithms it accepts are the ones it was given
// (fast-jwt's own check, behind the verifier's header check), and it leaves every time claim to
// the verifier's injected clock.

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = (key: KeyObject) => key.export({ type: 'spki', format: 'pem' }).toString();
const privatePem = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString();
const sign = (algorithm: Algorithm, payload: object) =>
  createSigner({ key: privatePem(rsa.privateKey), algorithm, noTimestamp: true })(payload);

/** Far past the wall clock of any test run: fast-jwt's own clock would call these not yet valid. */
const FUTURE_SEC = Date.UTC(2100, 0, 1) / 1000;

describe('signatureCheck', () => {
  it('refuses a correctly signed token of an algorithm it was not given', () => {
    const check = signatureCheck(pem(rsa.publicKey), ['PS256']);
    const token = sign('RS256', { tenantId: 'acme', exp: FUTURE_SEC });
    expect(() => check.verify(token)).toThrow(
      expect.objectContaining({ code: 'FAST_JWT_INVALID_ALGORITHM' }),
    );
    expect(signatureCheck(pem(rsa.publicKey), ['RS256']).verify(token)).toEqual({
      tenantId: 'acme',
      exp: FUTURE_SEC,
    });
  });

  it('returns the payload of a token not yet valid or expired by the wall clock: the verifier judges time', () => {
    const check = signatureCheck(pem(rsa.publicKey), ['RS256']);
    const early = { tenantId: 'acme', nbf: FUTURE_SEC, exp: FUTURE_SEC + 60 };
    expect(check.verify(sign('RS256', early))).toEqual(early);
    const late = { tenantId: 'acme', exp: 1 };
    expect(check.verify(sign('RS256', late))).toEqual(late);
  });

  it('so a token valid at the injected clock verifies though the wall clock has not reached its nbf', async () => {
    const verifier = createJwtVerifier({ publicKey: pem(rsa.publicKey), now: () => FUTURE_SEC * 1000 });
    const claims = { tenantId: 'acme', role: 'admin', exp: FUTURE_SEC + 60 };
    await expect(verifier.verify(sign('RS256', { ...claims, nbf: FUTURE_SEC - 10 }))).resolves.toEqual(
      claims,
    );
  });
});

describe('publicKeyCheck', () => {
  it('narrows the key’s algorithms to the one named', () => {
    expect(publicKeyCheck(rsa.publicKey, 'PS384').algorithms).toEqual(['PS384']);
    expect(publicKeyCheck(rsa.publicKey).algorithms).toEqual([
      'RS256',
      'RS384',
      'RS512',
      'PS256',
      'PS384',
      'PS512',
    ]);
  });

  it('refuses a named algorithm the key cannot verify', () => {
    expect(() => publicKeyCheck(rsa.publicKey, 'ES256')).toThrow('algorithm ES256 does not fit the key');
    expect(() => publicKeyCheck(rsa.publicKey, 'HS256')).toThrow('algorithm HS256 does not fit the key');
  });
});
