import { createCipheriv, createHmac, hkdfSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  createUnsubscribeToken,
  LIST_UNSUBSCRIBE_POST,
  listUnsubscribeHeaders,
  verifyUnsubscribeToken,
} from '../src/unsubscribe.js';

const SECRET = 'unit-tracking-secret-0123456789';
const claims = { tenantId: 'acme', email: 'Ada@Example.com', source: 'campaign:cmp_123' };

describe('unsubscribe tokens', () => {
  it('verify back to the tenant, the lowercased address and the source', () => {
    const token = createUnsubscribeToken(SECRET, claims);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(verifyUnsubscribeToken(SECRET, token)).toEqual({ ...claims, email: 'ada@example.com' });
  });

  it('are deterministic per (tenant, address, source) and differ when any of them differs', () => {
    const token = createUnsubscribeToken(SECRET, claims);
    expect(createUnsubscribeToken(SECRET, { ...claims, email: 'ada@example.com' })).toBe(token);
    const others = [
      createUnsubscribeToken(SECRET, { ...claims, tenantId: 'acme2' }),
      createUnsubscribeToken(SECRET, { ...claims, email: 'bob@example.com' }),
      createUnsubscribeToken(SECRET, { ...claims, source: 'sequence:seq_1' }),
      createUnsubscribeToken(`${SECRET}x`, claims),
    ];
    expect(new Set([token, ...others]).size).toBe(5);
  });

  it('never carry the address or the tenant readably', () => {
    const token = createUnsubscribeToken(SECRET, claims);
    const decoded = Buffer.from(token, 'base64url').toString('latin1');
    for (const text of [token, decoded]) {
      expect(text.toLowerCase()).not.toContain('ada');
      expect(text).not.toContain('acme');
      expect(text).not.toContain('cmp_123');
    }
  });

  it('refuse every altered byte, truncation, extension, other secret or garbage', () => {
    const token = createUnsubscribeToken(SECRET, claims);
    const raw = Buffer.from(token, 'base64url');
    for (let i = 0; i < raw.length; i++) {
      const altered = Buffer.from(raw);
      altered[i] = (altered[i] ?? 0) ^ 0x01;
      expect(verifyUnsubscribeToken(SECRET, altered.toString('base64url')), `byte ${i}`).toBeNull();
    }
    expect(verifyUnsubscribeToken(SECRET, token.slice(0, -1))).toBeNull();
    expect(verifyUnsubscribeToken(SECRET, raw.subarray(0, raw.length - 4).toString('base64url'))).toBeNull();
    expect(verifyUnsubscribeToken(SECRET, `${token}AA`)).toBeNull();
    expect(verifyUnsubscribeToken('another-secret-0123456789', token)).toBeNull();
    for (const junk of ['', 'x', 'a.b', '!!!!', 'A'.repeat(3000), '%2e%2e']) {
      expect(verifyUnsubscribeToken(SECRET, junk)).toBeNull();
    }
  });

  it('refuse a secret shorter than 16 characters', () => {
    expect(() => createUnsubscribeToken('short', claims)).toThrow(/at least 16/);
  });
});

describe('listUnsubscribeHeaders', () => {
  it('gives the https link and a mailto carrying the same token, and the RFC 8058 one-click header', () => {
    const headers = listUnsubscribeHeaders({
      ...claims,
      secret: SECRET,
      publicUrl: 'https://mail.example.com',
    });
    const token = createUnsubscribeToken(SECRET, claims);
    expect(headers).toEqual({
      'List-Unsubscribe': `<https://mail.example.com/u/${token}>, <mailto:unsubscribe@mail.example.com?subject=unsubscribe%20${token}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    });
    expect(LIST_UNSUBSCRIBE_POST).toBe('List-Unsubscribe=One-Click');
    // RFC 5322: a header line stays far below 998 characters.
    expect(`List-Unsubscribe: ${headers['List-Unsubscribe']}`.length).toBeLessThan(998);
  });

  it('keeps a path prefix of PUBLIC_URL, brackets an IP host in the mailto, takes a given mailbox', () => {
    const prefixed = listUnsubscribeHeaders({
      ...claims,
      secret: SECRET,
      publicUrl: 'https://x.example/tern/',
    });
    expect(prefixed['List-Unsubscribe']).toMatch(
      /^<https:\/\/x\.example\/tern\/u\/[A-Za-z0-9_-]+>, <mailto:unsubscribe@x\.example\?/,
    );
    const local = listUnsubscribeHeaders({ ...claims, secret: SECRET, publicUrl: 'http://127.0.0.1:3000' });
    expect(local['List-Unsubscribe']).toMatch(
      /^<http:\/\/127\.0\.0\.1:3000\/u\/.+>, <mailto:unsubscribe@\[127\.0\.0\.1\]\?/,
    );
    const own = listUnsubscribeHeaders({
      ...claims,
      secret: SECRET,
      publicUrl: 'https://x.example',
      mailto: 'leave@acme.example',
    });
    expect(own['List-Unsubscribe']).toContain('<mailto:leave@acme.example?subject=unsubscribe%20');
  });
});

// Issue 33: pinned values and the edges no test held.
describe('unsubscribe tokens: fixed expected value and edges', () => {
  const PINNED_SECRET = 'pinned-tracking-secret-0123456789';
  // A change to the format or the key derivation would void every link already mailed.
  const PINNED =
    'ATaO7kRvhAn46pcEOIrquLY-2hZrZJWA7u5oLrsUxl6TXXTDx2E1sA9qUD2kBODWz9rbX1F6U_fn_vNtx2VtFEM9fpCnQaIfzUoj3D8o5fZNWd2xAmjqPh75';

  it('the token of a fixed (tenant, address, source) and secret is exactly the pinned one, and verifies', () => {
    expect(createUnsubscribeToken(PINNED_SECRET, claims)).toBe(PINNED);
    expect(verifyUnsubscribeToken(PINNED_SECRET, PINNED)).toEqual({ ...claims, email: 'ada@example.com' });
  });

  it('junk around a genuine token is refused', () => {
    for (const junk of [
      ` ${PINNED}`,
      `${PINNED} `,
      `${PINNED}\n`,
      `${PINNED}=`,
      `.${PINNED}`,
      `${PINNED}.`,
      `${PINNED}/`,
    ]) {
      expect(verifyUnsubscribeToken(PINNED_SECRET, junk), JSON.stringify(junk)).toBeNull();
    }
  });

  it('short tokens starting with the version byte are null, never a throw', () => {
    const version = Buffer.from([0x01]);
    // Shortest that could hold a version, a nonce, one byte, the GCM tag and the signature: 46 bytes.
    for (let length = 1; length <= 46; length++) {
      const raw = Buffer.concat([version, Buffer.alloc(length - 1, 0x41)]).toString('base64url');
      expect(() => verifyUnsubscribeToken(PINNED_SECRET, raw), `${length} bytes`).not.toThrow();
      expect(verifyUnsubscribeToken(PINNED_SECRET, raw), `${length} bytes`).toBeNull();
    }
    const genuine = Buffer.from(PINNED, 'base64url');
    for (let cut = 1; cut < genuine.length; cut++) {
      expect(
        verifyUnsubscribeToken(PINNED_SECRET, genuine.subarray(0, cut).toString('base64url')),
      ).toBeNull();
    }
  });

  it('another version byte with a valid signature is still refused', () => {
    const raw = Buffer.from(PINNED, 'base64url');
    raw[0] = 0x02;
    expect(verifyUnsubscribeToken(PINNED_SECRET, raw.toString('base64url'))).toBeNull();
  });

  it('takes tokens up to 2048 characters and refuses longer ones', () => {
    const long = { ...claims, source: `campaign:${'x'.repeat(1400)}` };
    const token = createUnsubscribeToken(PINNED_SECRET, long);
    expect(token.length).toBeLessThanOrEqual(2048);
    expect(verifyUnsubscribeToken(PINNED_SECRET, token)).toEqual({ ...long, email: 'ada@example.com' });
    const tooLong = createUnsubscribeToken(PINNED_SECRET, {
      ...claims,
      source: `campaign:${'x'.repeat(1600)}`,
    });
    expect(tooLong.length).toBeGreaterThan(2048);
    expect(verifyUnsubscribeToken(PINNED_SECRET, tooLong)).toBeNull();
  });

  it('a secret of exactly 16 characters is accepted; keys differ per secret', () => {
    const sixteen = '0123456789abcdef';
    const token = createUnsubscribeToken(sixteen, claims);
    expect(verifyUnsubscribeToken(sixteen, token)).toEqual({ ...claims, email: 'ada@example.com' });
    expect(() => createUnsubscribeToken('0123456789abcde', claims)).toThrow(
      'the tracking secret must be at least 16 characters',
    );
    expect(verifyUnsubscribeToken(`${sixteen}x`, token)).toBeNull();
  });
});

describe('listUnsubscribeHeaders: PUBLIC_URL with a path', () => {
  it.each([
    ['https://x.example/tern', 'https://x.example/tern/u/'],
    ['https://x.example/tern/', 'https://x.example/tern/u/'],
    ['https://x.example/a/b', 'https://x.example/a/b/u/'],
    ['https://x.example', 'https://x.example/u/'],
    ['https://x.example/', 'https://x.example/u/'],
  ])('%s → links under %s', (publicUrl, prefix) => {
    const headers = listUnsubscribeHeaders({ ...claims, secret: SECRET, publicUrl });
    const token = createUnsubscribeToken(SECRET, claims);
    expect(headers['List-Unsubscribe']).toBe(
      `<${prefix}${token}>, <mailto:unsubscribe@x.example?subject=unsubscribe%20${token}>`,
    );
  });

  it('brackets IPv4 and IPv6 hosts in the mailto, not names', () => {
    const mailbox = (publicUrl: string) =>
      /<mailto:([^?]+)\?/.exec(
        listUnsubscribeHeaders({ ...claims, secret: SECRET, publicUrl })['List-Unsubscribe'],
      )![1];
    expect(mailbox('http://10.0.0.1:3000')).toBe('unsubscribe@[10.0.0.1]');
    expect(mailbox('http://[::1]:3000/')).toBe('unsubscribe@[::1]');
    expect(mailbox('https://mail1.example.com')).toBe('unsubscribe@mail1.example.com');
  });

  it('each PUBLIC_URL its own links, asked in turn (its parts are kept for the last one asked)', () => {
    const link = (publicUrl: string) =>
      /^<([^>]+)>/.exec(
        listUnsubscribeHeaders({ ...claims, secret: SECRET, publicUrl })['List-Unsubscribe'],
      )![1];
    const token = createUnsubscribeToken(SECRET, claims);
    for (const [publicUrl, prefix] of [
      ['https://a.example/x', 'https://a.example/x/u/'],
      ['https://b.example', 'https://b.example/u/'],
      ['https://a.example/x', 'https://a.example/x/u/'],
      ['https://a.example/x', 'https://a.example/x/u/'],
    ])
      expect(link(publicUrl!)).toBe(`${prefix}${token}`);
  });
});

describe('genuinely sealed and signed payloads of the wrong shape are refused', () => {
  const PINNED_SECRET = 'pinned-tracking-secret-0123456789';
  // Sealed and signed exactly as createUnsubscribeToken does, with the keys: only the payload differs.
  const seal = (plaintext: string, version = 0x01) => {
    const derive = (label: string) =>
      Buffer.from(hkdfSync('sha256', PINNED_SECRET, 'tern', `tern/unsubscribe/v1/${label}`, 32));
    const enc = derive('enc');
    const mac = derive('mac');
    const body = Buffer.from(plaintext);
    const nonce = createHmac('sha256', mac).update('nonce').update(body).digest().subarray(0, 12);
    const cipher = createCipheriv('aes-256-gcm', enc, nonce);
    const sealed = Buffer.concat([
      Buffer.from([version]),
      nonce,
      cipher.update(body),
      cipher.final(),
      cipher.getAuthTag(),
    ]);
    const signature = createHmac('sha256', mac).update(sealed).digest().subarray(0, 16);
    return Buffer.concat([sealed, signature]).toString('base64url');
  };

  it('the sealer above is the token writer (same token for valid claims)', () => {
    expect(seal(JSON.stringify(['acme', 'ada@example.com', 'campaign:cmp_123']))).toBe(
      createUnsubscribeToken(PINNED_SECRET, claims),
    );
    // What was sealed is returned as it is: the verifier does not lowercase or trim.
    expect(verifyUnsubscribeToken(PINNED_SECRET, seal('["T"," Ada@X ",""]'))).toEqual({
      tenantId: 'T',
      email: ' Ada@X ',
      source: '',
    });
  });

  it.each([
    ['two strings', '["acme","ada@example.com"]'],
    ['four strings', '["acme","ada@example.com","campaign:cmp_123","x"]'],
    ['an empty array', '[]'],
    ['a number among strings', '["acme","ada@example.com",3]'],
    ['a number first', '[1,"ada@example.com","campaign:cmp_123"]'],
    ['a null member', '["acme",null,"campaign:cmp_123"]'],
    ['an object with the three fields', '{"tenantId":"acme","email":"a@b","source":"s","length":3}'],
    ['a string of three characters', '"abc"'],
    ['null', 'null'],
    ['a number', '3'],
    ['not JSON', '["acme",'],
    ['one byte', 'x'],
    ['nothing', ''],
  ])('%s', (_what, plaintext) => {
    const token = seal(plaintext);
    expect(() => verifyUnsubscribeToken(PINNED_SECRET, token)).not.toThrow();
    expect(verifyUnsubscribeToken(PINNED_SECRET, token)).toBeNull();
  });

  it('valid claims sealed under another version byte are refused', () => {
    const plaintext = JSON.stringify(['acme', 'ada@example.com', 'campaign:cmp_123']);
    expect(verifyUnsubscribeToken(PINNED_SECRET, seal(plaintext, 0x00))).toBeNull();
    expect(verifyUnsubscribeToken(PINNED_SECRET, seal(plaintext, 0x02))).toBeNull();
  });
});
