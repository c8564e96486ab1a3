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
