import { createHmac, type KeyObject } from 'node:crypto';
import { expect } from 'vitest';
import { AuthError, type AuthErrorReason } from '../src/index.js';

// What the JWT verifier's tests share: the secret and the fixed clock, keys as PEM, an HS256
// token signed by hand, and the reason of a refusal.

export const SECRET = 'test-secret-0123456789-abcdefghijklmnop';
export const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);
export const now = () => NOW;

export const pem = (key: KeyObject) => key.export({ type: 'spki', format: 'pem' }).toString();
export const privatePem = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString();

export const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An HS256 token signed by hand: for payloads fast-jwt's signer refuses to produce (e.g. a string `exp`). */
export function hs256Raw(payload: object, secret = SECRET): string {
  const input = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url(payload)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

/** The reason of the AuthError (a 401) that `promise` rejects with. */
export async function reasonOf(promise: Promise<unknown>): Promise<AuthErrorReason> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AuthError);
  expect((error as AuthError).statusCode).toBe(401);
  return (error as AuthError).reason;
}
