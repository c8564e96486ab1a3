import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from '../src/index.js';

// Signatures made by the reference `standardwebhooks` package, checked by the SDK's helper.
const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
const other = `whsec_${Buffer.from('fedcba9876543210fedcba9876543210').toString('base64')}`;
const body = JSON.stringify({
  type: 'email.delivered',
  timestamp: '2026-06-15T12:00:00.000Z',
  data: { emailId: 'em_1' },
});

function signed(id: string, date: Date, payload = body, secrets = [secret]) {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(date.getTime() / 1000)),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(id, date, payload)).join(' '),
  };
}

describe('verifyWebhook', () => {
  it('returns the parsed body of a genuine delivery (plain headers, any case, or Fetch Headers)', async () => {
    const headers = signed('ev-1', new Date());
    expect(await verifyWebhook(body, headers, secret)).toEqual(JSON.parse(body));
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect(await verifyWebhook(body, upper, secret)).toEqual(JSON.parse(body));
    expect(await verifyWebhook(new TextEncoder().encode(body), new Headers(headers), secret)).toEqual(
      JSON.parse(body),
    );
  });

  it('accepts a header with two signatures (rotation) when either matches', async () => {
    const headers = signed('ev-2', new Date(), body, [other, secret]);
    expect(await verifyWebhook(body, headers, secret)).toBeTruthy();
    expect(await verifyWebhook(body, headers, other)).toBeTruthy();
  });

  it('refuses a wrong secret, an altered body, a changed id, and missing headers', async () => {
    const headers = signed('ev-3', new Date());
    await expect(verifyWebhook(body, headers, other)).rejects.toBeInstanceOf(WebhookVerificationError);
    await expect(verifyWebhook(`${body} `, headers, secret)).rejects.toThrow(/No matching signature/);
    await expect(verifyWebhook(body, { ...headers, 'webhook-id': 'ev-x' }, secret)).rejects.toThrow(
      WebhookVerificationError,
    );
    await expect(verifyWebhook(body, { 'webhook-id': 'ev-3' }, secret)).rejects.toThrow(/Missing/);
  });

  it('refuses a timestamp more than 5 minutes away (replay protection), unless the tolerance allows it', async () => {
    const old = new Date(Date.now() - 10 * 60_000);
    await expect(verifyWebhook(body, signed('ev-4', old), secret)).rejects.toThrow(/tolerance/);
    expect(await verifyWebhook(body, signed('ev-4', old), secret, { toleranceSeconds: 3600 })).toBeTruthy();
  });
});
