import { isBotUserAgent, signTrackingToken, verifyTrackingToken } from '@tern/auth';
import { describe, expect, it } from 'vitest';
import { applyTracking, classifySmtpError } from '../src/index.js';
import { nextRoundSize, relayLimits } from '../src/round-size.js';

const SECRET = 'unit-tracking-secret-0123456789';
const ctx = { secret: SECRET, publicUrl: 'https://t.example', tenantId: 'acme', emailId: 'em_1' };

describe('tracking tokens', () => {
  /** A click of email em_1 of tenant acme on `url`. */
  const clickOn = (url: string) => ({ kind: 'click' as const, tenantId: 'acme', emailId: 'em_1', url });

  it('round-trips and refuses another kind, another secret or any altered byte', () => {
    const click = signTrackingToken(SECRET, clickOn('https://a.example/x'));
    expect(verifyTrackingToken(SECRET, click, 'click')).toEqual(clickOn('https://a.example/x'));
    expect(verifyTrackingToken(SECRET, click, 'open')).toBeNull();
    expect(verifyTrackingToken('another-secret-0123456789', click, 'click')).toBeNull();
    for (let i = 0; i < click.length; i += 7) {
      const c = click[i] === 'A' ? 'B' : 'A';
      const altered = `${click.slice(0, i)}${c}${click.slice(i + 1)}`;
      if (altered !== click) expect(verifyTrackingToken(SECRET, altered, 'click'), `byte ${i}`).toBeNull();
    }
    for (const junk of ['', '.', 'a.b.c', 'x'.repeat(9000)])
      expect(verifyTrackingToken(SECRET, junk, 'click')).toBeNull();
  });

  it('never signs a redirect to a non-http(s) URL into a valid click', () => {
    const js = signTrackingToken(SECRET, clickOn('javascript:alert(1)'));
    expect(verifyTrackingToken(SECRET, js, 'click')).toBeNull();
  });
});

describe('isBotUserAgent', () => {
  it.each([
    ['Mozilla/5.0 (via ggpht.com GoogleImageProxy)', true],
    ['Mozilla/5.0 (compatible; Barracuda Sentinel)', true],
    ['curl/8.5.0', true],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15', false],
    [undefined, false],
  ])('%s → %s', (ua, bot) => expect(isBotUserAgent(ua)).toBe(bot));
});

describe('applyTracking', () => {
  it('rewrites http(s) links of <a href> and adds the pixel before </body>', () => {
    const html =
      '<html><body><a href="https://a.example/x?y=1&amp;z=2">A</a> <a class="c" href=\'http://b.example\'>B</a> ' +
      '<a href="mailto:x@y.z">M</a> <a href="#top">T</a></body></html>';
    const out = applyTracking(html, { opens: true, clicks: true }, ctx);
    const links = [...out.matchAll(/href=["']([^"']+)["']/g)].map((m) => m[1]!);
    expect(links[2]).toBe('mailto:x@y.z');
    expect(links[3]).toBe('#top');
    const tokens = links.slice(0, 2).map((l) => {
      expect(l.startsWith('https://t.example/t/c/')).toBe(true);
      return verifyTrackingToken(SECRET, l.slice('https://t.example/t/c/'.length), 'click');
    });
    expect(tokens.map((t) => (t?.kind === 'click' ? t.url : null))).toEqual([
      'https://a.example/x?y=1&z=2',
      'http://b.example',
    ]);
    expect(out).toMatch(
      /<img src="https:\/\/t\.example\/t\/o\/[^"]+" width="1" height="1"[^>]*\/><\/body><\/html>$/,
    );
  });

  it('does nothing that the setting turns off', () => {
    const html = '<p><a href="https://a.example">A</a></p>';
    expect(applyTracking(html, { opens: false, clicks: false }, ctx)).toBe(html);
    expect(applyTracking(html, { opens: true, clicks: false }, ctx)).toMatch(
      /^<p><a href="https:\/\/a\.example">A<\/a><\/p><img /,
    );
  });
});

describe('classifySmtpError', () => {
  // nodemailer names the step that failed (`err.command`); only the recipient's own steps bounce.
  it.each([
    [{ command: 'RCPT TO', responseCode: 550, response: '550 5.1.1 no such user' }, 'bounced', false],
    [{ command: 'DATA', responseCode: 554, message: 'rejected' }, 'bounced', false],
    [{ command: 'RCPT TO', responseCode: 451, response: '451 4.7.1 greylisted' }, 'delayed', false],
    [{ command: 'DATA', responseCode: 421, response: '421 too busy' }, 'delayed', false],
    [{ command: 'AUTH PLAIN', responseCode: 535, response: '535 5.7.8 bad credentials' }, 'delayed', true],
    [
      { command: 'AUTH LOGIN', responseCode: 534, response: '534 5.7.9 use an app password' },
      'delayed',
      true,
    ],
    [{ command: 'MAIL FROM', responseCode: 550, response: '550 5.7.1 sender not allowed' }, 'delayed', true],
    [{ command: 'EHLO', responseCode: 554, response: '554 go away' }, 'delayed', true],
    [{ command: 'CONN', code: 'ECONNECTION', message: 'connect ECONNREFUSED' }, 'delayed', true],
    [{ code: 'ETIMEDOUT', message: 'timeout' }, 'delayed', true],
    [{ responseCode: 550, message: 'no step named' }, 'delayed', true],
    [new Error('something else'), 'delayed', true],
  ])('%j → %s (provider fault: %s)', (error, kind, fault) => {
    const result = classifySmtpError(error);
    expect(result.kind).toBe(kind);
    expect(result.kind === 'delayed' && result.fault !== undefined).toBe(fault);
  });

  it("every recipient refused: the `to` recipient's own refusal decides", () => {
    const all = {
      command: 'RCPT TO',
      responseCode: 550,
      rejectedErrors: [
        { command: 'RCPT TO', responseCode: 550, recipient: 'cc@example.com', response: '550 no' },
        { command: 'RCPT TO', responseCode: 452, recipient: 'ada@example.com', response: '452 full' },
      ],
    };
    expect(classifySmtpError(all, 'ada@example.com')).toMatchObject({ kind: 'delayed' });
    expect(classifySmtpError(all, 'cc@example.com')).toMatchObject({ kind: 'bounced' });
  });
});

describe('nextRoundSize', () => {
  const limits = { min: 32, max: 512, targetMs: 500 };
  it('doubles after a full quick round, up to the largest', () => {
    expect(nextRoundSize(32, 32, 100, limits)).toBe(64);
    expect(nextRoundSize(256, 256, 250, limits)).toBe(512);
    expect(nextRoundSize(512, 512, 10, limits)).toBe(512);
  });
  it('keeps a full round that took between half the target and the target', () => {
    expect(nextRoundSize(128, 128, 400, limits)).toBe(128);
  });
  it('halves after a slow round, down to the first size', () => {
    expect(nextRoundSize(512, 512, 900, limits)).toBe(256);
    expect(nextRoundSize(32, 32, 900, limits)).toBe(32);
  });
  it("comes down to a smaller largest size (the bulk one) at once, whatever the round's time", () => {
    const bulk = { ...limits, max: 64 };
    expect(nextRoundSize(512, 512, 10, bulk)).toBe(64);
    expect(nextRoundSize(512, 512, 400, bulk)).toBe(64);
    expect(nextRoundSize(512, 512, 900, bulk)).toBe(64);
    expect(nextRoundSize(32, 32, 10, bulk)).toBe(64);
  });
  it('starts again from the first size once a round is not full (the backlog is drained)', () => {
    expect(nextRoundSize(512, 100, 10, limits)).toBe(32);
  });
});

describe('relayLimits', () => {
  const limits = { min: 32, max: 512, targetMs: 500 };
  const relay = (inFlight: number) => ({ inFlight, latencyMs: 200 });
  it('keeps the limits as they are without a relay', () => {
    expect(relayLimits(limits, undefined, 4)).toEqual(limits);
  });
  it('sizes rounds from what the relay takes at once: at least that, at most twice that', () => {
    expect(relayLimits(limits, relay(5), 4)).toEqual({ min: 32, max: 32, targetMs: 1100 });
    expect(relayLimits(limits, relay(40), 4)).toEqual({ min: 40, max: 80, targetMs: 1100 });
    expect(relayLimits(limits, relay(100), 4)).toMatchObject({ min: 100, max: 200 });
  });
  it('keeps a round to half the shared budget with several lanes, so a second one is with the relay', () => {
    expect(relayLimits(limits, relay(256), 4)).toMatchObject({ min: 256, max: 256 });
    expect(relayLimits(limits, relay(1000), 4)).toMatchObject({ min: 256, max: 256 });
    // One lane (a round with campaign mail): its own largest size.
    expect(relayLimits(limits, relay(256), 1)).toMatchObject({ min: 256, max: 512 });
    expect(relayLimits({ ...limits, max: 128 }, relay(256), 1)).toMatchObject({ min: 128, max: 128 });
    expect(relayLimits({ ...limits, max: 128 }, relay(40), 1)).toMatchObject({ min: 40, max: 80 });
  });
});
