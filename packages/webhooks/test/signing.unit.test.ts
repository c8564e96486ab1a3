import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { generateWebhookSecret, SECRET_PREFIX, signWebhook, webhookHeaders } from '../src/index.js';

describe('Standard Webhooks signing (checked with the reference standardwebhooks package)', () => {
  it('a new secret is whsec_ + base64 of 32 random bytes, different every time', () => {
    const a = generateWebhookSecret();
    const b = generateWebhookSecret();
    expect(a.startsWith(SECRET_PREFIX)).toBe(true);
    expect(Buffer.from(a.slice(SECRET_PREFIX.length), 'base64')).toHaveLength(32);
    expect(a).not.toBe(b);
  });

  it('headers made here verify with the reference library', () => {
    const secret = generateWebhookSecret();
    const body = JSON.stringify({
      type: 'email.delivered',
      timestamp: '2026-06-15T12:00:00.000Z',
      data: { a: 1 },
    });
    const ts = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders([secret], 'ev-1', ts, body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('the signature equals the reference library’s for the same id, time and body', () => {
    const secret = generateWebhookSecret();
    const ts = 1_750_000_000;
    expect(signWebhook(secret, 'msg_1', ts, '{"x":1}')).toBe(
      new Webhook(secret).sign('msg_1', new Date(ts * 1000), '{"x":1}'),
    );
  });

  it('with two secrets (rotation) the header carries two signatures and either secret verifies', () => {
    const oldSecret = generateWebhookSecret();
    const newSecret = generateWebhookSecret();
    const body = '{"type":"email.sent"}';
    const headers = webhookHeaders([newSecret, oldSecret], 'ev-2', Math.floor(Date.now() / 1000), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(oldSecret).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(newSecret).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(generateWebhookSecret()).verify(body, headers)).toThrow();
  });

  it('an altered body no longer verifies', () => {
    const secret = generateWebhookSecret();
    const headers = webhookHeaders([secret], 'ev-3', Math.floor(Date.now() / 1000), '{"a":1}');
    expect(() => new Webhook(secret).verify('{"a":2}', headers)).toThrow();
  });
});
