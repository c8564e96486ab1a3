import { PassThrough } from 'node:stream';
import { signLegacyTrackingToken, signTrackingToken } from '@tern/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSendingWorld, type SendingWorld, TRACKING_SECRET, wallClock } from '../sending-support.js';
import { bearer, jwtFor, suffix } from '../support.js';

// The edges of the API over a real socket, with its own logger captured (issues 24 #7, #12): a
// click link is a credential and may carry personal data, an address in a path is personal data,
// so no log line may name either; every answer says nosniff.
let world: SendingWorld;
let base: string;
const lines: string[] = [];
const TENANT = `track-${suffix()}`;

beforeAll(async () => {
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  world = await openSendingWorld({
    sender: false,
    app: () => ({ http: { logger: { level: 'info', stream } } }),
  });
  base = await world.app.listen({ host: '127.0.0.1', port: 0 });
}, 120_000);

afterAll(async () => {
  await world?.close();
});

const click = (url: string, sign = signTrackingToken) =>
  sign(TRACKING_SECRET, { kind: 'click', tenantId: TENANT, emailId: 'em_track1', url });

describe('GET /t/c/:token — the Location of a URL with non-Latin-1 characters', () => {
  it.each([
    ['https://example.com/search?q=日本', 'https://example.com/search?q=%E6%97%A5%E6%9C%AC'],
    ['https://example.com/€', 'https://example.com/%E2%82%AC'],
    ['https://例え.jp/パス?x=ü#frag€', 'https://xn--r8jz45g.jp/%E3%83%91%E3%82%B9?x=%C3%BC#frag%E2%82%AC'],
    ['https://example.com/a b?c=d e', 'https://example.com/a%20b?c=d%20e'],
    ['https://example.com/offer?a=1&b=2', 'https://example.com/offer?a=1&b=2'],
  ])('%s → 302 to %s, and no log line names the token', async (url, location) => {
    for (const token of [click(url), click(url, signLegacyTrackingToken)]) {
      const before = lines.length;
      const res = await fetch(`${base}/t/c/${token}`, { redirect: 'manual' });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe(location);
      await new Promise((r) => setTimeout(r, 50));
      const logged = lines.slice(before).join('\n');
      expect(logged).not.toContain(token);
      expect(logged).not.toContain('/t/c/');
    }
  });

  it('a URL the WHATWG parser refuses still gets a valid header (bytes percent-encoded), never a 500', async () => {
    const res = await fetch(`${base}/t/c/${click('https://exa mple.com:99999/ü')}`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('https://exa%20mple.com:99999/%C3%BC');
  });
});

describe('GET /t/o/:token — one open per email and reader within OPEN_DEDUP_SECONDS', () => {
  const openedEvents = async (emailId: string) =>
    Number(
      (
        await world.stores.pool.query(
          `SELECT count(*) AS n FROM event_log WHERE key = $1 AND value::jsonb->>'type' = 'email.opened'`,
          [emailId],
        )
      ).rows[0].n,
    );

  it('a replayed pixel is answered every time but recorded once per reader', async () => {
    const emailId = `em_open${suffix()}`;
    const token = signTrackingToken(TRACKING_SECRET, { kind: 'open', tenantId: TENANT, emailId });
    const fetchPixel = async (userAgent: string) => {
      const res = await fetch(`${base}/t/o/${token}`, { headers: { 'user-agent': userAgent } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/gif');
    };
    for (let i = 0; i < 5; i++) await fetchPixel('Mozilla/5.0 (reader one)');
    expect(await openedEvents(emailId)).toBe(1);
    await fetchPixel('Mozilla/5.0 (reader two)');
    expect(await openedEvents(emailId)).toBe(2);
    // Another email, same reader: its own open.
    const other = `em_open${suffix()}`;
    const otherToken = signTrackingToken(TRACKING_SECRET, { kind: 'open', tenantId: TENANT, emailId: other });
    expect(
      (await fetch(`${base}/t/o/${otherToken}`, { headers: { 'user-agent': 'Mozilla/5.0 (reader one)' } }))
        .status,
    ).toBe(200);
    expect(await openedEvents(other)).toBe(1);
  });
});

describe('no address in logs; nosniff on every answer', () => {
  it('DELETE /suppressions/{email}: the address is in no log line, with or without a credential', async () => {
    const owner = jwtFor(wallClock, TENANT);
    const address = `Erase.Me+${suffix()}@Example.test`;
    const created = await fetch(`${base}/suppressions`, {
      method: 'POST',
      headers: { ...bearer(owner), 'content-type': 'application/json' },
      body: JSON.stringify({ email: address }),
    });
    expect(created.status).toBe(201);
    const before = lines.length;
    const removed = await fetch(`${base}/suppressions/${encodeURIComponent(address)}`, {
      method: 'DELETE',
      headers: bearer(owner),
    });
    expect(removed.status).toBe(204);
    const again = await fetch(`${base}/suppressions/${address}`, {
      method: 'DELETE',
      headers: bearer(owner),
    });
    expect(again.status).toBe(404);
    expect((await fetch(`${base}/suppressions/${address}`, { method: 'DELETE' })).status).toBe(401);
    await new Promise((r) => setTimeout(r, 50));
    const logged = lines.slice(before).join('\n');
    expect(logged).toContain('/suppressions/[address]');
    for (const form of [
      address,
      encodeURIComponent(address),
      address.toLowerCase(),
      'Erase.Me',
      'erase.me',
    ]) {
      expect(logged).not.toContain(form);
    }
  });

  it.each([
    ['GET', '/health', 200],
    ['GET', '/emails/logs', 401],
    ['GET', '/no/such/route', 404],
    ['GET', '/t/o/garbage', 404],
    ['POST', '/suppressions', 401],
  ])('%s %s → %i with X-Content-Type-Options: nosniff', async (method, path, status) => {
    const res = await fetch(`${base}${path}`, { method });
    expect(res.status).toBe(status);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('the pixel and the redirect say nosniff too', async () => {
    const open = signTrackingToken(TRACKING_SECRET, {
      kind: 'open',
      tenantId: TENANT,
      emailId: 'em_nosniff',
    });
    const pixel = await fetch(`${base}/t/o/${open}`);
    expect(pixel.status).toBe(200);
    expect(pixel.headers.get('x-content-type-options')).toBe('nosniff');
    const redirect = await fetch(`${base}/t/c/${click('https://example.com/')}`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
