import { randomBytes } from 'node:crypto';
import { withTransaction } from '@tern/kernel';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import { cacheKey, type KeyRef, unwrap, wrap } from './crypto.js';

/**
 * The data keys (`data_keys`): one per (tenant, recipient hash, month), stored wrapped under the
 * wrapping key, kept unwrapped in an LRU cache for a while. Reads and creates them one at a time
 * or a batch at a time.
 */
export interface DataKeys {
  /** The unwrapped keys by cache key (`cacheKey`); the keyring's `invalidate` clears it. */
  cache: LRUCache<string, Buffer>;
  /**
   * The keys of `refs` by cache key: cached ones, then the rest read in one query (and cached).
   * Returned as a map of this batch's own, so a batch with more keys than the cache holds still
   * finds every one. A key not found is absent (erased, past retention, never created).
   */
  load(refs: Iterable<KeyRef>): Promise<Map<string, Buffer>>;
  /**
   * The keys of `refs`, created where missing: the cached ones, then one INSERT … ON CONFLICT DO
   * NOTHING for the rest, then one SELECT for those another instance created first. A key deleted
   * between the two statements (an erasure racing the send) is created again, alone.
   */
  keysForSeal(refs: readonly KeyRef[]): Promise<Map<string, Buffer>>;
}

export function createDataKeys(
  pool: pg.Pool,
  wrapKey: Buffer,
  opts: { cacheMax?: number; cacheTtlMs?: number },
): DataKeys {
  const cache = new LRUCache<string, Buffer>({
    max: opts.cacheMax ?? 10_000,
    ttl: opts.cacheTtlMs ?? 30_000,
  });

  /** The key, created when missing: INSERT … ON CONFLICT DO NOTHING RETURNING, else the row a racer wrote. */
  async function keyForSeal(tenantId: string, rh: string, p: string): Promise<Buffer> {
    const id = cacheKey(tenantId, rh, p);
    const cached = cache.get(id);
    if (cached) return cached;
    const fresh = randomBytes(32);
    const inserted = await pool.query<{ wrapped_key: Buffer }>(
      `INSERT INTO data_keys (tenant_id, recipient_hash, period, wrapped_key) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING RETURNING wrapped_key`,
      [tenantId, rh, p, wrap(wrapKey, { tenantId, rh, p }, fresh, randomBytes(12))],
    );
    let key: Buffer = fresh;
    if (inserted.rowCount === 0) {
      const existing = await pool.query<{ wrapped_key: Buffer }>(
        'SELECT wrapped_key FROM data_keys WHERE tenant_id = $1 AND recipient_hash = $2 AND period = $3',
        [tenantId, rh, p],
      );
      // Deleted between the two statements (an erasure raced this send): seal under a new key.
      if (existing.rows[0]) key = unwrap(wrapKey, { tenantId, rh, p }, existing.rows[0].wrapped_key);
      else return keyForSeal(tenantId, rh, p);
    }
    cache.set(id, key);
    return key;
  }

  /** The cached keys of `refs` (a map of the batch's own), and the distinct ones not cached. */
  function fromCache(refs: Iterable<KeyRef>): { keys: Map<string, Buffer>; missing: Map<string, KeyRef> } {
    const keys = new Map<string, Buffer>();
    const missing = new Map<string, KeyRef>();
    for (const ref of refs) {
      const id = cacheKey(ref.tenantId, ref.rh, ref.p);
      if (keys.has(id) || missing.has(id)) continue;
      const cached = cache.get(id);
      if (cached) keys.set(id, cached);
      else missing.set(id, ref);
    }
    return { keys, missing };
  }

  async function load(refs: Iterable<KeyRef>): Promise<Map<string, Buffer>> {
    const { keys, missing } = fromCache(refs);
    if (missing.size === 0) return keys;
    const list = [...missing.values()];
    const { rows } = await pool.query<{
      tenant_id: string;
      recipient_hash: string;
      period: string;
      wrapped_key: Buffer;
    }>(
      `SELECT k.tenant_id, k.recipient_hash, k.period, k.wrapped_key
         FROM unnest($1::text[], $2::text[], $3::text[]) AS w(tenant_id, recipient_hash, period)
         JOIN data_keys k USING (tenant_id, recipient_hash, period)`,
      [list.map((i) => i.tenantId), list.map((i) => i.rh), list.map((i) => i.p)],
    );
    for (const r of rows) {
      try {
        const ref = { tenantId: r.tenant_id, rh: r.recipient_hash, p: r.period };
        const key = unwrap(wrapKey, ref, r.wrapped_key);
        const id = cacheKey(r.tenant_id, r.recipient_hash, r.period);
        keys.set(id, key);
        cache.set(id, key);
      } catch {
        // Wrapped under another ENCRYPTION_KEY: as good as gone.
      }
    }
    return keys;
  }

  async function keysForSeal(refs: readonly KeyRef[]): Promise<Map<string, Buffer>> {
    const { keys, missing } = fromCache(refs);
    if (missing.size === 0) return keys;
    const list = [...missing.values()];
    // One draw of randomness for the batch's new keys and their wrapping IVs (32 + 12 bytes each):
    // a draw costs as much as AES-GCM on these few bytes. Each key is copied out of the draw.
    const random = randomBytes(44 * list.length);
    const fresh = list.map((_, n) => Buffer.from(random.subarray(44 * n, 44 * n + 32)));
    const ivOf = (n: number) => random.subarray(44 * n + 32, 44 * n + 44);
    const { rows } = await pool.query<{ tenant_id: string; recipient_hash: string; period: string }>(
      `INSERT INTO data_keys (tenant_id, recipient_hash, period, wrapped_key)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[])
       ON CONFLICT DO NOTHING RETURNING tenant_id, recipient_hash, period`,
      [
        list.map((i) => i.tenantId),
        list.map((i) => i.rh),
        list.map((i) => i.p),
        list.map((i, n) => wrap(wrapKey, i, fresh[n]!, ivOf(n))),
      ],
    );
    const created = new Set(rows.map((r) => cacheKey(r.tenant_id, r.recipient_hash, r.period)));
    const others: KeyRef[] = [];
    for (const [n, ref] of list.entries()) {
      const id = cacheKey(ref.tenantId, ref.rh, ref.p);
      if (created.has(id)) {
        keys.set(id, fresh[n]!);
        cache.set(id, fresh[n]!);
      } else others.push(ref);
    }
    for (const [id, key] of await load(others)) keys.set(id, key);
    for (const ref of others) {
      const id = cacheKey(ref.tenantId, ref.rh, ref.p);
      if (!keys.has(id)) keys.set(id, await keyForSeal(ref.tenantId, ref.rh, ref.p));
    }
    return keys;
  }

  return { cache, load, keysForSeal };
}

/**
 * Rewrites `data_keys` into a new file: a deleted row's bytes — the wrapped key — stay in the
 * table's data file until its page is reused, so the erased key would survive in the file
 * otherwise. VACUUM FULL is not enough: it copies a deleted row that an older snapshot of another
 * session may still see ("recently dead"). So, in one transaction holding the table's exclusive
 * lock: the live rows (read after the erasure committed) go to a temporary table, TRUNCATE gives
 * `data_keys` a new file (the old one is emptied at commit, unlinked at the next checkpoint), and
 * they are copied back. The table is small (one row per recipient and month); keyring statements
 * wait for the lock (at most `lock_timeout`, 10 s, here); a failure is logged and redone by the
 * rescrub. The WAL and backups keep the key longer: docs/architecture.md § "What WAL and backups
 * keep".
 */
export async function rewriteDataKeys(pool: pg.Pool, log?: (error: unknown) => void): Promise<void> {
  try {
    await withTransaction(pool, async (client) => {
      await client.query("SET LOCAL lock_timeout = '10s'");
      await client.query('LOCK TABLE data_keys IN ACCESS EXCLUSIVE MODE');
      await client.query('CREATE TEMP TABLE data_keys_kept ON COMMIT DROP AS SELECT * FROM data_keys');
      await client.query('TRUNCATE data_keys');
      await client.query('INSERT INTO data_keys SELECT * FROM data_keys_kept');
    });
  } catch (error) {
    log?.(error);
  }
}
