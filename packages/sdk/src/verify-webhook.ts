// Verifies a delivery from Tern (Standard Webhooks, https://www.standardwebhooks.com) with the
// Web Crypto API, so it runs in Node ≥ 19, Deno, Bun, browsers and edge runtimes alike.

/** The delivery is not from Tern (bad or missing signature), or too old/new (replay protection). */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

export interface VerifyWebhookOptions {
  /** Largest accepted distance between `webhook-timestamp` and now, in seconds. Default 300. */
  toleranceSeconds?: number;
  /** Now, epoch ms (tests). */
  now?: () => number;
}

/** Header access for a plain object (any case) or a Fetch `Headers`. */
type HeadersLike = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function header(headers: HeadersLike, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  }
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function base64ToBytes(b64: string): Uint8Array<ArrayBuffer> {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function bytesToBase64(bytes: Uint8Array): string {
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/** Constant-time string comparison (no early exit on the first difference). */
function sameString(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++)
    diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return diff === 0;
}

/**
 * Checks a webhook request and returns its parsed body. `payload` is the raw body exactly as
 * received (parse it only after verifying); `secret` is the endpoint's `whsec_…`. During the 24 h
 * after a rotation Tern signs with both secrets, so either one verifies. Throws
 * `WebhookVerificationError` when no signature matches or the timestamp is out of tolerance.
 */
export async function verifyWebhook<T = unknown>(
  payload: string | Uint8Array,
  headers: HeadersLike,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<T> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing required headers');
  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || !Number.isSafeInteger(seconds)) {
    throw new WebhookVerificationError('Invalid webhook-timestamp');
  }
  const tolerance = options.toleranceSeconds ?? 300;
  const nowSeconds = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(nowSeconds - seconds) > tolerance)
    throw new WebhookVerificationError('Timestamp out of tolerance');

  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new Error('verifyWebhook needs the Web Crypto API (globalThis.crypto.subtle)');
  const keyBytes = base64ToBytes(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
  const key = await subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  const expected = bytesToBase64(new Uint8Array(await subtle.sign('HMAC', key, signed)));

  let matched = false;
  for (const candidate of signatures.split(' ')) {
    const [version, signature] = candidate.split(',', 2);
    if (version === 'v1' && signature !== undefined && sameString(signature, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('No matching signature found');
  try {
    return JSON.parse(body) as T;
  } catch {
    throw new WebhookVerificationError('Payload is not JSON');
  }
}
