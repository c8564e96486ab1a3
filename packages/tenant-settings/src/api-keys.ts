import { randomBytes } from 'node:crypto';
import { generateApiKey, hashApiKey } from '@tern/auth';
import type { Scope } from '@tern/contracts';
import type { Logger } from '@tern/kernel';
import type pg from 'pg';

/** Metadata of one API key (SPEC §8): never the key or its hash. */
export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  name: string;
  scopes: string[];
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** The project the key is bound to (SPEC §16), or null. */
  projectId: string | null;
}

/** A key that authenticated: what the request may do. */
export interface ActiveApiKey {
  id: string;
  tenantId: string;
  scopes: string[];
  /** Null: every project of the tenant. */
  projectId: string | null;
}

export interface ApiKeyStoreOptions {
  pool: pg.Pool;
  /** Business clock: expiry, createdAt, revokedAt, lastUsedAt. */
  now: () => Date;
  /** How long a looked-up key is trusted without asking Postgres again (other instances' revocations). */
  cacheTtlMs: number;
  /** How often recorded uses are written to `last_used_at`. */
  lastUsedFlushMs: number;
  /** Upper bound of cached hashes, known or not; the oldest are dropped first. */
  maxCacheEntries?: number;
  /** Monotonic milliseconds for cache ageing (default `performance.now`); independent of `now`. */
  monotonicMs?: () => number;
  logger?: Logger;
}

export interface ApiKeyStore {
  /** The key's grant, or null when it is unknown, revoked or expired (callers cannot tell which). */
  authenticate(key: string): Promise<ActiveApiKey | null>;
  create(
    tenantId: string,
    input: { name: string; scopes: readonly Scope[]; expiresAt: Date | null; projectId?: string | null },
  ): Promise<{ record: ApiKeyRecord; key: string }>;
  /** Newest first, revoked keys included. */
  list(tenantId: string): Promise<ApiKeyRecord[]>;
  /** False when the tenant has no such key. Revoking twice is fine (the first time is kept). */
  revoke(tenantId: string, keyId: string): Promise<boolean>;
  /** Writes the uses recorded since the last flush in one UPDATE. */
  flushLastUsed(): Promise<void>;
  /** Stops the flush timer and flushes once more. */
  close(): Promise<void>;
}

interface CachedKey {
  id: string;
  tenantId: string;
  scopes: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  projectId: string | null;
}

interface CacheEntry {
  /** Null: no key has this hash (cached too, so a flood of random keys does not reach Postgres). */
  key: CachedKey | null;
  loadedAt: number;
}

type KeyRow = {
  id: string;
  tenant_id: string;
  name: string;
  scopes: string[];
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  project_id: string | null;
};

const COLUMNS =
  'id, tenant_id, name, scopes, prefix, created_at, last_used_at, expires_at, revoked_at, project_id';

const toRecord = (r: KeyRow): ApiKeyRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  name: r.name,
  scopes: r.scopes,
  prefix: r.prefix,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
  projectId: r.project_id,
});

/** Key ids are public (they appear in URLs); 96 random bits keep them unguessable anyway. */
const newKeyId = () => `key_${randomBytes(12).toString('hex')}`;

/**
 * API keys in Postgres (`api_keys`), looked up by SHA-256 through a small in-memory cache.
 *
 * Revocation: the revoking instance evicts the key and remembers its id, so it refuses the key
 * at once; every other instance re-reads the row once its cache entry is older than
 * `cacheTtlMs` (≤ 5 s, SPEC §8). `last_used_at` is kept in memory and written in one batched
 * UPDATE every `lastUsedFlushMs` and on close: a request never waits for a write.
 */
export function createApiKeyStore(opts: ApiKeyStoreOptions): ApiKeyStore {
  const { pool, now, cacheTtlMs } = opts;
  const monotonicMs = opts.monotonicMs ?? (() => performance.now());
  const maxEntries = opts.maxCacheEntries ?? 10_000;
  const cache = new Map<string, CacheEntry>();
  const inflight = new Map<string, Promise<CachedKey | null>>();
  // Ids revoked through this instance: checked after every lookup, so even a lookup that was
  // already in flight when the key was revoked cannot let it through here.
  const revokedHere = new Set<string>();
  let pendingUses = new Map<string, Date>();

  async function load(hash: string): Promise<CachedKey | null> {
    const { rows } = await pool.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE key_hash = $1`, [hash]);
    const row = rows[0];
    return row === undefined
      ? null
      : {
          id: row.id,
          tenantId: row.tenant_id,
          scopes: row.scopes,
          expiresAt: row.expires_at,
          revokedAt: row.revoked_at,
          projectId: row.project_id,
        };
  }

  async function lookup(hash: string): Promise<CachedKey | null> {
    const cached = cache.get(hash);
    if (cached && monotonicMs() - cached.loadedAt < cacheTtlMs) return cached.key;
    let pending = inflight.get(hash);
    if (!pending) {
      // Single flight: concurrent requests with the same key share one query.
      pending = load(hash)
        .then((key) => {
          cache.delete(hash); // re-insert at the end: Map order is the eviction order
          cache.set(hash, { key, loadedAt: monotonicMs() });
          while (cache.size > maxEntries) {
            const oldest = cache.keys().next().value;
            if (oldest === undefined) break;
            cache.delete(oldest);
          }
          return key;
        })
        .finally(() => inflight.delete(hash));
      inflight.set(hash, pending);
    }
    return pending;
  }

  async function flushLastUsed(): Promise<void> {
    if (pendingUses.size === 0) return;
    const batch = pendingUses;
    pendingUses = new Map();
    try {
      // GREATEST: instances flush in any order; last_used_at never moves back.
      await pool.query(
        `UPDATE api_keys k
            SET last_used_at = GREATEST(COALESCE(k.last_used_at, u.at), u.at)
           FROM unnest($1::text[], $2::timestamptz[]) AS u(id, at)
          WHERE k.id = u.id`,
        [[...batch.keys()], [...batch.values()].map((d) => d.toISOString())],
      );
    } catch (error) {
      // Keep the uses for the next flush (a newer use recorded meanwhile wins).
      for (const [id, at] of batch) {
        const newer = pendingUses.get(id);
        if (!newer || newer < at) pendingUses.set(id, at);
      }
      opts.logger?.warn({ err: error, keys: batch.size }, 'api key last_used_at flush failed; will retry');
    }
  }

  const timer = setInterval(() => void flushLastUsed(), opts.lastUsedFlushMs);
  timer.unref();
  let closed: Promise<void> | undefined;

  return {
    async authenticate(clearKey) {
      const key = await lookup(hashApiKey(clearKey));
      if (key === null || key.revokedAt !== null || revokedHere.has(key.id)) return null;
      const at = now();
      if (key.expiresAt !== null && key.expiresAt.getTime() <= at.getTime()) return null;
      pendingUses.set(key.id, at);
      return { id: key.id, tenantId: key.tenantId, scopes: key.scopes, projectId: key.projectId };
    },

    async create(tenantId, input) {
      const generated = generateApiKey();
      const { rows } = await pool.query<KeyRow>(
        `INSERT INTO api_keys (id, tenant_id, name, scopes, key_hash, prefix, created_at, expires_at, project_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         RETURNING ${COLUMNS}`,
        [
          newKeyId(),
          tenantId,
          input.name,
          input.scopes,
          generated.hash,
          generated.prefix,
          now(),
          input.expiresAt,
          input.projectId ?? null,
        ],
      );
      return { record: toRecord(rows[0]!), key: generated.key };
    },

    async list(tenantId) {
      const { rows } = await pool.query<KeyRow>(
        `SELECT ${COLUMNS} FROM api_keys WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC`,
        [tenantId],
      );
      return rows.map(toRecord);
    },

    async revoke(tenantId, keyId) {
      const { rows } = await pool.query<{ key_hash: string }>(
        `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
          WHERE tenant_id = $1 AND id = $2
          RETURNING key_hash`,
        [tenantId, keyId, now()],
      );
      const row = rows[0];
      if (row === undefined) return false;
      revokedHere.add(keyId);
      cache.delete(row.key_hash);
      return true;
    },

    flushLastUsed,

    close() {
      closed ??= (async () => {
        clearInterval(timer);
        await flushLastUsed();
      })();
      return closed;
    },
  };
}
