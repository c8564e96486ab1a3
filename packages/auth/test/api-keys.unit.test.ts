import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  classifyBearer,
  generateApiKey,
  hashApiKey,
  isApiKeyFormat,
  looksLikeJwt,
  signDashboardToken,
  timingSafeEqualStr,
} from '../src/index.js';

describe('generateApiKey', () => {
  it('makes tern_ + 40 base62 characters', () => {
    const { key } = generateApiKey();
    expect(key).toMatch(/^tern_[A-Za-z0-9]{40}$/);
    expect(isApiKeyFormat(key)).toBe(true);
  });

  it('hashes the clear key with SHA-256 hex and keeps a 12-character prefix', () => {
    const { key, hash, prefix } = generateApiKey();
    expect(hash).toBe(createHash('sha256').update(key).digest('hex'));
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).toBe(hash);
    expect(prefix).toHaveLength(12);
    expect(prefix).toBe(key.slice(0, 12));
    expect(prefix.startsWith('tern_')).toBe(true);
  });

  it('never repeats over 1000 keys, and uses the whole alphabet', () => {
    const keys = Array.from({ length: 1000 }, () => generateApiKey());
    expect(new Set(keys.map((k) => k.key)).size).toBe(1000);
    expect(new Set(keys.map((k) => k.hash)).size).toBe(1000);
    const seen = new Set(keys.flatMap((k) => [...k.key.slice(5)]));
    // 40 000 draws over 62 symbols: a missing symbol would mean a broken alphabet mapping.
    expect(seen.size).toBe(62);
  });

  it('spreads characters evenly (no modulo bias on the first symbols)', () => {
    let first8 = 0;
    for (let i = 0; i < 1000; i++) {
      for (const c of generateApiKey().key.slice(5)) if ('ABCDEFGH'.includes(c)) first8 += 1;
    }
    // 40 000 draws: unbiased, the 8 first symbols get 8/62 ≈ 5161 (σ ≈ 67); with a plain
    // `byte % 62` they would get 40/256 = 6250. The bounds are ±6σ.
    expect(first8).toBeGreaterThan(4760);
    expect(first8).toBeLessThan(5560);
  });
});

describe('isApiKeyFormat', () => {
  it('accepts tern_ + at least 32 base62 characters', () => {
    expect(isApiKeyFormat(`tern_${'a'.repeat(32)}`)).toBe(true);
    expect(isApiKeyFormat(`tern_${'Z9'.repeat(30)}`)).toBe(true);
  });

  it('refuses short, mis-prefixed or non-base62 keys', () => {
    expect(isApiKeyFormat(`tern_${'a'.repeat(31)}`)).toBe(false);
    expect(isApiKeyFormat(`TERN_${'a'.repeat(40)}`)).toBe(false);
    expect(isApiKeyFormat(`key_${'a'.repeat(40)}`)).toBe(false);
    expect(isApiKeyFormat(`tern_${'a'.repeat(39)}-`)).toBe(false);
    expect(isApiKeyFormat(` tern_${'a'.repeat(40)}`)).toBe(false);
    expect(isApiKeyFormat('')).toBe(false);
  });
});

describe('classifyBearer', () => {
  const jwt = signDashboardToken({ secret: 's3cret', tenantId: 'acme', expiresInSeconds: 60 });

  it('tells a JWT from an API key by form', () => {
    expect(looksLikeJwt(jwt)).toBe(true);
    expect(classifyBearer(jwt)).toBe('jwt');
    expect(classifyBearer(generateApiKey().key)).toBe('api_key');
  });

  it('classifies an unsigned JWT as a JWT, so the verifier refuses it', () => {
    expect(classifyBearer('eyJhbGciOiJub25lIn0.eyJ0ZW5hbnRJZCI6ImEifQ.')).toBe('jwt');
  });

  it('calls anything else unknown', () => {
    for (const s of [
      '',
      'tern_short',
      'a.b',
      'a.b.c.d',
      'a..c',
      'a b.c.d',
      'Bearer x.y.z',
      'random-token-value',
    ]) {
      expect(classifyBearer(s)).toBe('unknown');
    }
  });
});

describe('timingSafeEqualStr', () => {
  it('is true for equal strings', () => {
    expect(timingSafeEqualStr('ingest-token-123', 'ingest-token-123')).toBe(true);
    expect(timingSafeEqualStr('', '')).toBe(true);
  });

  it('is false for different strings of the same length', () => {
    expect(timingSafeEqualStr('ingest-token-123', 'ingest-token-124')).toBe(false);
  });

  it('is false for different lengths, without throwing', () => {
    expect(timingSafeEqualStr('ingest-token-123', 'ingest-token-1234')).toBe(false);
    expect(timingSafeEqualStr('x', '')).toBe(false);
  });
});
