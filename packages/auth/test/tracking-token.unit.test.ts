import { createCipheriv, createHmac, hkdfSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  BOT_USER_AGENTS,
  isBotUserAgent,
  MAX_TRACKING_TOKEN_LENGTH,
  signLegacyTrackingToken,
  signTrackingToken,
  verifyTrackingToken,
} from '../src/tracking-token.js';

const SECRET = 'pinned-tracking-secret-0123456789';
const OPEN = { kind: 'open', tenantId: 'acme', emailId: 'em_1' } as const;
const CLICK = {
  kind: 'click',
  tenantId: 'acme',
  emailId: 'em_1',
  url: 'https://example.com/offer?a=1&b=2',
} as const;

// Fixed expected tokens: a change to the format or the key derivation would break every link
// already mailed, so it must break these first.
const V2_OPEN = 'AlZ8ZrK7Rwq1jd_rTxZoTbmPVV_bEDNX1U101n9ccQjWsw8EevqnKM0OWmG60JLW';
const V2_CLICK =
  'AkOk1qLlrSNsaUoU2X_sNz2AOQAg7cwVPS36wBaXIq5aJUUNBcPyNS4oIv3_vrHuaJUa1iM34OOJE5s5wtGvYA3skJ6354Ai44_oT8CT_EN-Y7KK';
const V1_OPEN = 'eyJrIjoibyIsInQiOiJhY21lIiwiZSI6ImVtXzEifQ.ccbWOPWC-EwWxAFMlPZw6Z6enprDJtT9Aal0AAcav6g';
const V1_CLICK =
  'eyJrIjoiYyIsInQiOiJhY21lIiwiZSI6ImVtXzEiLCJ1IjoiaHR0cHM6Ly9leGFtcGxlLmNvbS9vZmZlcj9hPTEmYj0yIn0.f0Pf5j6z7bQOV60xUfxhA_mBSTOK1u39v4HT26ieahY';

const verify = (token: string, kind: 'open' | 'click' = 'open') => verifyTrackingToken(SECRET, token, kind);

describe('tracking tokens: fixed expected values', () => {
  it('v2 (opaque) tokens are exactly the pinned ones and verify', () => {
    expect(signTrackingToken(SECRET, OPEN)).toBe(V2_OPEN);
    expect(signTrackingToken(SECRET, CLICK)).toBe(V2_CLICK);
    expect(verify(V2_OPEN)).toEqual(OPEN);
    expect(verify(V2_CLICK, 'click')).toEqual(CLICK);
  });

  it('v1 tokens of mail already sent still verify', () => {
    expect(signLegacyTrackingToken(SECRET, OPEN)).toBe(V1_OPEN);
    expect(signLegacyTrackingToken(SECRET, CLICK)).toBe(V1_CLICK);
    expect(verify(V1_OPEN)).toEqual(OPEN);
    expect(verify(V1_CLICK, 'click')).toEqual(CLICK);
  });

  it('v2 is opaque: neither the tenant, the email id nor the URL can be read from it', () => {
    const decoded = Buffer.from(V2_CLICK, 'base64url').toString('latin1');
    for (const part of ['acme', 'em_1', 'example.com']) expect(decoded).not.toContain(part);
    expect(V2_CLICK.length).toBeLessThan(V1_CLICK.length);
  });
});

describe('tracking tokens: what is refused', () => {
  it('the other kind, another secret', () => {
    for (const [open, click] of [
      [V2_OPEN, V2_CLICK],
      [V1_OPEN, V1_CLICK],
    ] as const) {
      expect(verify(open, 'click')).toBeNull();
      expect(verify(click, 'open')).toBeNull();
      expect(verifyTrackingToken('another-secret-0123456789', open, 'open')).toBeNull();
      expect(verifyTrackingToken('another-secret-0123456789', click, 'click')).toBeNull();
    }
  });

  it('any altered character', () => {
    for (const token of [V2_OPEN, V2_CLICK, V1_OPEN, V1_CLICK]) {
      const kind = token === V2_OPEN || token === V1_OPEN ? 'open' : 'click';
      for (let i = 0; i < token.length; i++) {
        const altered = `${token.slice(0, i)}${token[i] === 'A' ? 'B' : 'A'}${token.slice(i + 1)}`;
        expect(verify(altered, kind), `${token.slice(0, 8)}… at ${i}`).toBeNull();
      }
    }
  });

  it('a truncated token or signature → null, never a throw', () => {
    for (const token of [V2_OPEN, V1_OPEN]) {
      for (let cut = 1; cut < token.length; cut++) {
        expect(() => verify(token.slice(0, cut))).not.toThrow();
        expect(verify(token.slice(0, cut))).toBeNull();
      }
    }
  });

  it('anything appended: a dot, a padding `=`, junk, whitespace', () => {
    for (const token of [V2_OPEN, V1_OPEN]) {
      for (const tail of ['.', '=', '==', '!', ' ', '\n', '.x', '%3D', 'A']) {
        expect(verify(`${token}${tail}`), JSON.stringify(tail)).toBeNull();
      }
      for (const head of ['.', '=', ' ', 'A'])
        expect(verify(`${head}${token}`), JSON.stringify(head)).toBeNull();
    }
    expect(verify(V1_OPEN.replace('.', '..'))).toBeNull();
  });

  it('a non-canonical last character (same bytes, other spare bits) is refused', () => {
    // 43 base64url characters carry 258 bits for a 256-bit MAC: the last one has spare bits.
    const last = V1_OPEN.at(-1)!;
    const sibling = String.fromCharCode(last.charCodeAt(0) + 1);
    const twin = `${V1_OPEN.slice(0, -1)}${sibling}`;
    expect(Buffer.from(twin.split('.')[1]!, 'base64url')).toEqual(
      Buffer.from(V1_OPEN.split('.')[1]!, 'base64url'),
    );
    expect(verify(twin)).toBeNull();
  });

  it('garbage and empty input', () => {
    for (const junk of [
      '',
      '.',
      'a.b',
      'a.b.c',
      'AA',
      'Ag',
      'x'.repeat(40),
      '..',
      `.${V1_OPEN.split('.')[1]}`,
    ]) {
      expect(verify(junk)).toBeNull();
      expect(verify(junk, 'click')).toBeNull();
    }
  });

  it(`caps a token at ${MAX_TRACKING_TOKEN_LENGTH} characters, both versions`, () => {
    for (const sign of [signTrackingToken, signLegacyTrackingToken]) {
      const sized = (length: number) => {
        // Grow the URL until the token is exactly `length` characters (base64 grows by 4 per 3 bytes).
        for (let n = Math.floor(length * 0.6); n < length; n++) {
          const url = `https://example.com/${'a'.repeat(n)}`;
          const token = sign(SECRET, { ...CLICK, url });
          if (token.length === length) return { token, url };
          if (token.length > length) break;
        }
        throw new Error(`no token of ${length}`);
      };
      const edge = sized(MAX_TRACKING_TOKEN_LENGTH);
      expect(verify(edge.token, 'click')).toEqual({ ...CLICK, url: edge.url });
      const over = sign(SECRET, { ...CLICK, url: `${edge.url}aaaa` });
      expect(over.length).toBeGreaterThan(MAX_TRACKING_TOKEN_LENGTH);
      expect(verify(over, 'click')).toBeNull();
    }
  });

  it('redirects only to an http(s) URL: the check is anchored and case-insensitive', () => {
    for (const sign of [signTrackingToken, signLegacyTrackingToken]) {
      for (const url of [
        'javascript:alert("http://x")',
        'data:text/html,https://x',
        ' https://example.com/',
        '//example.com/',
        'https:/example.com',
        'ftp://example.com/',
      ]) {
        expect(verify(sign(SECRET, { ...CLICK, url }), 'click'), url).toBeNull();
      }
      for (const url of ['http://example.com/', 'HTTPS://EXAMPLE.COM/', 'https://例え.jp/日本?q=€']) {
        expect(verify(sign(SECRET, { ...CLICK, url }), 'click'), url).toEqual({ ...CLICK, url });
      }
    }
  });
});

describe('bot user agents', () => {
  it('matches every listed agent as a substring, case-insensitively', () => {
    for (const agent of BOT_USER_AGENTS) {
      expect(isBotUserAgent(`Mozilla/5.0 (${agent} 1.0)`), agent).toBe(true);
      expect(isBotUserAgent(agent.toLowerCase()), agent).toBe(true);
      expect(isBotUserAgent(agent.toUpperCase()), agent).toBe(true);
    }
  });

  it('a person’s browser and no agent are not bots; list entries are literal text', () => {
    expect(isBotUserAgent(undefined)).toBe(false);
    expect(isBotUserAgent('')).toBe(false);
    expect(
      isBotUserAgent('Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 Safari/605.1.15'),
    ).toBe(false);
    // `Microsoft Office/` and `curl/` end with a slash: without it they are not the scanner.
    expect(isBotUserAgent('Microsoft Office Mobile')).toBe(false);
    expect(isBotUserAgent('curly-client')).toBe(false);
  });
});

describe('genuinely signed v1 payloads of the wrong shape are refused', () => {
  // Signed exactly as the v1 signer does, with the key: only the payload's shape is wrong.
  const signV1 = (payload: unknown) => {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    const mac = createHmac('sha256', SECRET).update(`tern-tracking.${body}`).digest('base64url');
    return `${body}.${mac}`;
  };

  it('the signer above is the v1 signer (same token for a valid payload)', () => {
    expect(signV1({ k: 'o', t: 'acme', e: 'em_1' })).toBe(V1_OPEN);
  });

  it.each([
    ['numeric tenant', { k: 'o', t: 1, e: 'em_1' }, 'open'],
    ['numeric email', { k: 'o', t: 'acme', e: 1 }, 'open'],
    ['no tenant', { k: 'o', e: 'em_1' }, 'open'],
    ['another kind letter', { k: 'x', t: 'acme', e: 'em_1' }, 'open'],
    ['a click without kind letter', { t: 'acme', e: 'em_1', u: 'https://example.com/' }, 'click'],
    ['a click with an open letter', { k: 'o', t: 'acme', e: 'em_1', u: 'https://example.com/' }, 'click'],
    ['a click with a numeric URL', { k: 'c', t: 'acme', e: 'em_1', u: 1 }, 'click'],
    // String() of it reads as an http(s) URL: only a string is one.
    [
      'a click with the URL in an array',
      { k: 'c', t: 'acme', e: 'em_1', u: ['https://example.com/'] },
      'click',
    ],
    ['an array', ['o', 'acme', 'em_1'], 'open'],
    ['null', null, 'open'],
    ['a string', 'o', 'open'],
  ] as const)('%s', (_what, payload, kind) => {
    expect(verify(signV1(payload), kind)).toBeNull();
  });

  it('a signed body that is not JSON is refused without a throw', () => {
    const body = Buffer.from('{not json').toString('base64url');
    const mac = createHmac('sha256', SECRET).update(`tern-tracking.${body}`).digest('base64url');
    expect(verify(`${body}.${mac}`)).toBeNull();
  });
});

describe('genuinely sealed v2 payloads of the wrong shape are refused', () => {
  // Sealed exactly as the v2 signer does, with the keys: only the plaintext differs.
  const sealV2 = (plaintext: string, version = 0x02) => {
    const derive = (label: string) =>
      Buffer.from(hkdfSync('sha256', SECRET, 'tern', `tern/tracking/v2/${label}`, 32));
    const body = Buffer.from(plaintext);
    const nonce = createHmac('sha256', derive('nonce')).update(body).digest().subarray(0, 12);
    const cipher = createCipheriv('aes-256-gcm', derive('enc'), nonce);
    return Buffer.concat([
      Buffer.from([version]),
      nonce,
      cipher.update(body),
      cipher.final(),
      cipher.getAuthTag(),
    ]).toString('base64url');
  };

  it('the sealer above is the v2 signer (same tokens for valid payloads)', () => {
    expect(sealV2('["o","acme","em_1"]')).toBe(V2_OPEN);
    expect(sealV2(JSON.stringify(['c', 'acme', 'em_1', CLICK.url]))).toBe(V2_CLICK);
  });

  it.each([
    ['two members', '["o","acme"]', 'open'],
    ['one member', '["o"]', 'open'],
    ['no member', '[]', 'open'],
    ['five members', '["o","acme","em_1","https://example.com/","x"]', 'open'],
    ['a click with five members', '["c","acme","em_1","https://example.com/","x"]', 'click'],
    ['a click without its URL', '["c","acme","em_1"]', 'click'],
    ['a click with a numeric URL', '["c","acme","em_1",1]', 'click'],
    ['a click with the URL in an array', '["c","acme","em_1",["https://example.com/"]]', 'click'],
    ['a click with a javascript: URL', '["c","acme","em_1","javascript:alert(1)//https://x"]', 'click'],
    ['another kind letter', '["x","acme","em_1"]', 'open'],
    ['an open letter for a click', '["o","acme","em_1","https://example.com/"]', 'click'],
    ['a numeric tenant', '["o",1,"em_1"]', 'open'],
    ['a numeric email', '["o","acme",1]', 'open'],
    ['a string spelling the members', '"oae"', 'open'],
    ['an object with the fields', '{"k":"o","t":"acme","e":"em_1","length":3}', 'open'],
    ['null', 'null', 'open'],
    ['not JSON', '["o","acme",', 'open'],
    ['one byte', 'x', 'open'],
  ] as const)('%s', (_what, plaintext, kind) => {
    const token = sealV2(plaintext);
    expect(() => verify(token, kind)).not.toThrow();
    expect(verify(token, kind)).toBeNull();
  });

  it('an open sealed with a fourth member still opens (the URL is only read for a click)', () => {
    expect(verify(sealV2('["o","acme","em_1","https://example.com/"]'))).toEqual(OPEN);
  });

  it('a valid payload under another version byte is refused', () => {
    for (const version of [0x00, 0x01, 0x03])
      expect(verify(sealV2('["o","acme","em_1"]', version))).toBeNull();
  });
});
