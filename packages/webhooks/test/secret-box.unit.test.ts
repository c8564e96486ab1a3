import { describe, expect, it } from 'vitest';
import { createSecretBox } from '../src/index.js';

describe('secret box (webhook secrets at rest)', () => {
  const box = createSecretBox('a-server-key-of-enough-length');

  it('round-trips, and the sealed form does not contain the clear secret', () => {
    const sealed = box.encrypt('whsec_c2VjcmV0');
    expect(sealed.startsWith('v1:')).toBe(true);
    expect(sealed).not.toContain('whsec_');
    expect(box.decrypt(sealed)).toBe('whsec_c2VjcmV0');
  });

  it('seals the same secret differently each time (random IV)', () => {
    expect(box.encrypt('x')).not.toBe(box.encrypt('x'));
  });

  it('another server key cannot open it, and an altered value is refused', () => {
    const sealed = box.encrypt('whsec_abc');
    expect(() => createSecretBox('another-server-key-entirely').decrypt(sealed)).toThrow();
    const raw = Buffer.from(sealed.slice(3), 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => box.decrypt(`v1:${raw.toString('base64')}`)).toThrow();
  });

  it('refuses a short server key', () => {
    expect(() => createSecretBox('short')).toThrow(/at least 16/);
  });
});
