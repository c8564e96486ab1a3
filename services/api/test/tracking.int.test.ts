import { PassThrough } from 'node:stream';
import { signLegacyTrackingToken, signTrackingToken } from '@tern/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSendingWorld, type SendingWorld, TRACKING_SECRET } from './sending-support.js';
import { suffix } from './support.js';

// The tracking routes over a real socket (SPEC §11), with the API's own logger captured: a click
// link is a credential and may carry personal data, so no line may name it.
let world: SendingWorld;
let base: string;
const lines: string[] = [];
const TENANT = `track-${suffix()}`;

beforeAll(async () => {
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  world = await openSendingWorld({ sender: false, app: () => ({ logger: { level: 'info', stream } }) });
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
