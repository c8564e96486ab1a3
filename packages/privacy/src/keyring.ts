import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { withTransaction } from '@tern/jobs';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';

/**
 * Crypto-shredding (SPEC §14, issue 14 part 2; docs/architecture.md § "Personal data and
 * erasure"). Personal fields are sealed with AES-256-GCM under a data key per (tenant,
 * recipient, UTC month); the keys live in Postgres (`data_keys`) wrapped under a key derived from
 * `ENCRYPTION_KEY`. Erasure deletes a recipient's keys and retention deletes old months: every
 * copy sealed under them (event log included) is unreadable from then on.
 */

/** The sealed form carried in an event: version, recipient hash, period, iv, ciphertext, GCM tag (base64url). */
export interface Sealed {
  v: 1;
  rh: string;
  p: string;
  iv: string;
  ct: string;
  tag: string;
}

/** The fields a sealed value holds (personal data of `email.queued`). */
export type SealedFields = Record<string, string | null>;

export interface KeyringOptions {
  pool: pg.Pool;
  /** `ENCRYPTION_KEY`: ≥ 32 bytes; HKDF derives the wrapping key and the recipient-hash key. */
  encryptionKey: string;
  /** How long an unwrapped data key is reused without asking Postgres (default 30 s, the erasure budget is 60 s). */
  cacheTtlMs?: number;
  /** Most data keys kept unwrapped in memory (default 10 000). */
  cacheMax?: number;
}

/** One value to seal: the fields of one email, under its (tenant, recipient, month of `at`) key. */
export interface SealItem {
  tenantId: string;
  emailId: string;
  /** The recipient: names the key (keyed hash), never stored. */
  email: string;
  at: Date;
  fields: SealedFields;
}

/** Fields of one email to seal under its recipient's existing key. */
export interface EmailSealItem {
  tenantId: string;
  emailId: string;
  fields: SealedFields;
}

/**
 * Bytes sealed under an email's key (an attachment, SPEC §22): the key's recipient hash and
 * period, the IV, the GCM tag and the ciphertext, kept as columns of their own.
 */
export interface SealedBytes {
  rh: string;
  p: string;
  iv: Buffer;
  tag: Buffer;
  ct: Buffer;
}

/** One sealed value to open, of one email. */
export interface OpenItem {
  tenantId: string;
  emailId: string;
  sealed: Sealed;
}

export interface Keyring {
  /** HMAC-SHA256(hmac key, tenant + "\n" + lowercased address), base64url: the recipient's key id and erased-address hash. */
  recipientHash(tenantId: string, email: string): string;
  /** Seals `fields` for one email; creates the (tenant, recipient, month of `at`) key when missing. */
  seal(tenantId: string, emailId: string, email: string, at: Date, fields: SealedFields): Promise<Sealed>;
  /**
   * Seals many values (an appended batch): the missing keys are created or read in two statements
   * whatever their number, then every value is sealed without further I/O.
   */
  sealMany(items: readonly SealItem[]): Promise<Sealed[]>;
  /**
   * Seals an outcome about one of an email's several recipients (SPEC §22) under THAT recipient's
   * (tenant, recipient, month) key, created when missing, without making it the email's key
   * (`email_keys` keeps the first `to`'s): erasing the recipient makes it unreadable, erasing
   * another recipient of the email does not.
   */
  sealForRecipients(items: readonly SealItem[]): Promise<Sealed[]>;
  /**
   * Seals fields of events that follow an email's `email.queued` (a bounce's diagnostic, a clicked
   * URL): under the key that email.queued was sealed under (found by the email, `email_keys`).
   * Never creates a key: null when the email is unknown or its key is gone (erased, past
   * retention) — the caller then keeps no copy of the fields.
   */
  sealForEmails(items: readonly EmailSealItem[]): Promise<(Sealed | null)[]>;
  /** The fields, or null when the key is gone (erased, past retention) or the value is not genuine. */
  open(tenantId: string, emailId: string, sealed: Sealed): Promise<SealedFields | null>;
  /** Opens many values (a consumed batch): the keys not cached are read in one query. */
  openMany(items: readonly OpenItem[]): Promise<(SealedFields | null)[]>;
  /**
   * Seals bytes of one email (an attachment) under the (tenant, recipient, month of `at`) key its
   * email.queued is sealed under, created when missing and recorded as the email's key. `label`
   * names the value within the email (its position), so sealed values cannot be swapped.
   */
  sealBytes(
    tenantId: string,
    emailId: string,
    email: string,
    at: Date,
    label: string,
    data: Buffer,
  ): Promise<SealedBytes>;
  /** The bytes, or null when the key is gone (erased, past retention) or the value is not genuine. */
  openBytes(tenantId: string, emailId: string, label: string, sealed: SealedBytes): Promise<Buffer | null>;
  /** Deletes every key of the recipient (all months); returns how many were deleted. */
  eraseKeys(tenantId: string, email: string, client?: pg.ClientBase): Promise<number>;
  /** Deletes the keys of months that ended before `cutoff` (whole months only); per tenant when given. */
  dropPeriodsBefore(cutoff: Date, tenantId?: string, exceptTenants?: readonly string[]): Promise<number>;
  /** Forgets cached keys (all, or one tenant's recipient). */
  invalidate(tenantId?: string, recipientHash?: string): void;
  /**
   * Rewrites `data_keys` into a new file, so erased wrapped keys stay in no data file of the
   * table; a failure goes to `log` (the rescrub redoes it).
   */
  rewriteKeys(log?: (error: unknown) => void): Promise<void>;
}

/** Fewest bytes of ENCRYPTION_KEY (AES-256 wants 256 bits of input keying material). */
export const MIN_ENCRYPTION_KEY_BYTES = 32;

const WRAP_INFO = 'tern data-key wrapping v1';
const HMAC_INFO = 'tern recipient hash v1';

/** 'YYYY-MM' of a date in UTC: the period of a data key. */
export function periodOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/** The first period still (partly) inside a retention window starting at `cutoff`: keys of earlier months hold only expired content. */
export function firstKeptPeriod(cutoff: Date): string {
  return periodOf(cutoff);
}

const b64 = (b: Buffer) => b.toString('base64url');
const unb64 = (s: string) => Buffer.from(s, 'base64url');
const cacheKey = (tenantId: string, rh: string, p: string) => `${tenantId}\n${rh}\n${p}`;

function bytesAad(tenantId: string, emailId: string, label: string, rh: string, p: string): Buffer {
  return Buffer.from(`tern sealed bytes v1\n${tenantId}\n${emailId}\n${label}\n${rh}\n${p}`, 'utf8');
}

function aad(tenantId: string, emailId: string, rh: string, p: string): Buffer {
  return Buffer.from(`tern sealed v1\n${tenantId}\n${emailId}\n${rh}\n${p}`, 'utf8');
}

export function deriveKeys(encryptionKey: string): { wrapKey: Buffer; hmacKey: Buffer } {
  if (Buffer.byteLength(encryptionKey, 'utf8') < MIN_ENCRYPTION_KEY_BYTES) {
    throw new Error(`ENCRYPTION_KEY must be at least ${MIN_ENCRYPTION_KEY_BYTES} bytes`);
  }
  const derive = (info: string) =>
    Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.from('tern'), info, 32));
  return { wrapKey: derive(WRAP_INFO), hmacKey: derive(HMAC_INFO) };
}

export function createKeyring(opts: KeyringOptions): Keyring {
  const { wrapKey, hmacKey } = deriveKeys(opts.encryptionKey);
  const cache = new LRUCache<string, Buffer>({
    max: opts.cacheMax ?? 10_000,
    ttl: opts.cacheTtlMs ?? 30_000,
  });
  const pool = opts.pool;
  /** (tenant, email) → the key its email.queued was sealed under; only hits are cached. */
  const emailKeys = new LRUCache<string, { rh: string; p: string }>({
    max: opts.cacheMax ?? 10_000,
    ttl: opts.cacheTtlMs ?? 30_000,
  });
  const emailKeyId = (tenantId: string, emailId: string) => `${tenantId}\n${emailId}`;

  const wrapAad = (tenantId: string, rh: string, p: string) =>
    Buffer.from(`tern data key v1\n${tenantId}\n${rh}\n${p}`, 'utf8');

  function wrap(tenantId: string, rh: string, p: string, key: Buffer, iv: Buffer = randomBytes(12)): Buffer {
    const cipher = createCipheriv('aes-256-gcm', wrapKey, iv);
    cipher.setAAD(wrapAad(tenantId, rh, p));
    const ct = Buffer.concat([cipher.update(key), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), ct]);
  }

  function unwrap(tenantId: string, rh: string, p: string, wrapped: Buffer): Buffer {
    const decipher = createDecipheriv('aes-256-gcm', wrapKey, wrapped.subarray(0, 12));
    decipher.setAAD(wrapAad(tenantId, rh, p));
    decipher.setAuthTag(wrapped.subarray(12, 28));
    return Buffer.concat([decipher.update(wrapped.subarray(28)), decipher.final()]);
  }

  function recipientHash(tenantId: string, email: string): string {
    return b64(createHmac('sha256', hmacKey).update(`${tenantId}\n${email.trim().toLowerCase()}`).digest());
  }

  /** The key, created when missing: INSERT … ON CONFLICT DO NOTHING RETURNING, else the row a racer wrote. */
  async function keyForSeal(tenantId: string, rh: string, p: string): Promise<Buffer> {
    const id = cacheKey(tenantId, rh, p);
    const cached = cache.get(id);
    if (cached) return cached;
    const fresh = randomBytes(32);
    const inserted = await pool.query<{ wrapped_key: Buffer }>(
      `INSERT INTO data_keys (tenant_id, recipient_hash, period, wrapped_key) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING RETURNING wrapped_key`,
      [tenantId, rh, p, wrap(tenantId, rh, p, fresh)],
    );
    let key: Buffer = fresh;
    if (inserted.rowCount === 0) {
      const existing = await pool.query<{ wrapped_key: Buffer }>(
        'SELECT wrapped_key FROM data_keys WHERE tenant_id = $1 AND recipient_hash = $2 AND period = $3',
        [tenantId, rh, p],
      );
      // Deleted between the two statements (an erasure raced this send): seal under a new key.
      if (existing.rows[0]) key = unwrap(tenantId, rh, p, existing.rows[0].wrapped_key);
      else return keyForSeal(tenantId, rh, p);
    }
    cache.set(id, key);
    return key;
  }

  type KeyRef = { tenantId: string; rh: string; p: string };

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

  /**
   * The keys of `refs` by cache key: cached ones, then the rest read in one query (and cached).
   * Returned as a map of this batch's own, so a batch with more keys than the cache holds still
   * finds every one. A key not found is absent (erased, past retention, never created).
   */
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
        const key = unwrap(r.tenant_id, r.recipient_hash, r.period, r.wrapped_key);
        const id = cacheKey(r.tenant_id, r.recipient_hash, r.period);
        keys.set(id, key);
        cache.set(id, key);
      } catch {
        // Wrapped under another ENCRYPTION_KEY: as good as gone.
      }
    }
    return keys;
  }

  /**
   * The keys of `refs`, created where missing: the cached ones, then one INSERT … ON CONFLICT DO
   * NOTHING for the rest, then one SELECT for those another instance created first. A key deleted
   * between the two statements (an erasure racing the send) is created again, alone.
   */
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
        list.map((i, n) => wrap(i.tenantId, i.rh, i.p, fresh[n]!, ivOf(n))),
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

  async function sealMany(items: readonly SealItem[]): Promise<Sealed[]> {
    // One HMAC per item, and one draw of randomness for every IV of the batch.
    const refs = items.map((i) => ({
      tenantId: i.tenantId,
      rh: recipientHash(i.tenantId, i.email),
      p: periodOf(i.at),
    }));
    const keys = await keysForSeal(refs);
    // Later events of these emails (bounce diagnostics, clicked URLs) are sealed under the same key.
    const fresh = items.filter((item, n) => {
      const known = emailKeys.get(emailKeyId(item.tenantId, item.emailId));
      return known?.rh !== refs[n]!.rh || known.p !== refs[n]!.p;
    });
    if (fresh.length > 0) {
      const refOf = new Map(items.map((item, n) => [item, refs[n]!]));
      await pool.query(
        `INSERT INTO email_keys (tenant_id, email_id, recipient_hash, period)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
         ON CONFLICT DO NOTHING`,
        [
          fresh.map((i) => i.tenantId),
          fresh.map((i) => i.emailId),
          fresh.map((i) => refOf.get(i)!.rh),
          fresh.map((i) => refOf.get(i)!.p),
        ],
      );
    }
    const ivs = randomBytes(12 * items.length);
    return items.map((item, n) =>
      sealWith(keys, refs[n]!, item.emailId, item.fields, ivs.subarray(12 * n, 12 * n + 12)),
    );
  }

  async function sealForRecipients(items: readonly SealItem[]): Promise<Sealed[]> {
    if (items.length === 0) return [];
    const refs = items.map((i) => ({
      tenantId: i.tenantId,
      rh: recipientHash(i.tenantId, i.email),
      p: periodOf(i.at),
    }));
    const keys = await keysForSeal(refs);
    const ivs = randomBytes(12 * items.length);
    return items.map((item, n) =>
      sealWith(keys, refs[n]!, item.emailId, item.fields, ivs.subarray(12 * n, 12 * n + 12)),
    );
  }

  function sealWith(
    keys: Map<string, Buffer>,
    { tenantId, rh, p }: KeyRef,
    emailId: string,
    fields: SealedFields,
    iv: Buffer,
  ): Sealed {
    const cipher = createCipheriv('aes-256-gcm', keys.get(cacheKey(tenantId, rh, p))!, iv);
    cipher.setAAD(aad(tenantId, emailId, rh, p));
    const ct = Buffer.concat([cipher.update(JSON.stringify(fields), 'utf8'), cipher.final()]);
    return { v: 1, rh, p, iv: b64(iv), ct: b64(ct), tag: b64(cipher.getAuthTag()) };
  }

  async function sealForEmails(items: readonly EmailSealItem[]): Promise<(Sealed | null)[]> {
    if (items.length === 0) return [];
    const refs = new Map<string, KeyRef>();
    const missing = new Map<string, { tenantId: string; emailId: string }>();
    for (const { tenantId, emailId } of items) {
      const id = emailKeyId(tenantId, emailId);
      const known = emailKeys.get(id);
      if (known) refs.set(id, { tenantId, ...known });
      else missing.set(id, { tenantId, emailId });
    }
    if (missing.size > 0) {
      const list = [...missing.values()];
      const { rows } = await pool.query<{
        tenant_id: string;
        email_id: string;
        recipient_hash: string;
        period: string;
      }>(
        `SELECT k.tenant_id, k.email_id, k.recipient_hash, k.period
           FROM unnest($1::text[], $2::text[]) AS w(tenant_id, email_id)
           JOIN email_keys k USING (tenant_id, email_id)`,
        [list.map((i) => i.tenantId), list.map((i) => i.emailId)],
      );
      for (const r of rows) {
        const id = emailKeyId(r.tenant_id, r.email_id);
        const ref = { rh: r.recipient_hash, p: r.period };
        emailKeys.set(id, ref);
        refs.set(id, { tenantId: r.tenant_id, ...ref });
      }
    }
    const keys = await load(refs.values());
    const ivs = randomBytes(12 * items.length);
    return items.map((item, n) => {
      const ref = refs.get(emailKeyId(item.tenantId, item.emailId));
      if (!ref || !keys.has(cacheKey(ref.tenantId, ref.rh, ref.p))) return null;
      return sealWith(keys, ref, item.emailId, item.fields, ivs.subarray(12 * n, 12 * n + 12));
    });
  }

  /** A value that can name its key; anything else opens to null. */
  const wellFormed = (sealed: Sealed | undefined): boolean =>
    sealed?.v === 1 && typeof sealed.rh === 'string' && typeof sealed.p === 'string';

  async function openMany(items: readonly OpenItem[]): Promise<(SealedFields | null)[]> {
    // Misses are never cached: a key created later (a new send) must be found at once.
    const keys = await load(
      items
        .filter((i) => wellFormed(i.sealed))
        .map((i) => ({ tenantId: i.tenantId, rh: i.sealed.rh, p: i.sealed.p })),
    );
    return items.map(({ tenantId, emailId, sealed }) => {
      if (!wellFormed(sealed)) return null;
      const key = keys.get(cacheKey(tenantId, sealed.rh, sealed.p));
      if (!key) return null;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, unb64(sealed.iv));
        decipher.setAAD(aad(tenantId, emailId, sealed.rh, sealed.p));
        decipher.setAuthTag(unb64(sealed.tag));
        const clear = Buffer.concat([decipher.update(unb64(sealed.ct)), decipher.final()]).toString('utf8');
        const fields = JSON.parse(clear) as unknown;
        return fields !== null && typeof fields === 'object' ? (fields as SealedFields) : null;
      } catch {
        // Another key of the same (recipient, month) — the old one was erased — or altered bytes.
        return null;
      }
    });
  }

  return {
    recipientHash,
    sealMany,
    sealForRecipients,
    sealForEmails,
    openMany,

    async seal(tenantId, emailId, email, at, fields) {
      const [sealed] = await sealMany([{ tenantId, emailId, email, at, fields }]);
      return sealed!;
    },

    async open(tenantId, emailId, sealed) {
      const [fields] = await openMany([{ tenantId, emailId, sealed }]);
      return fields ?? null;
    },

    async sealBytes(tenantId, emailId, email, at, label, data) {
      // An empty seal creates the key and records it as the email's, as its email.queued will.
      const [anchor] = await sealMany([{ tenantId, emailId, email, at, fields: {} }]);
      const ref = { tenantId, rh: anchor!.rh, p: anchor!.p };
      const keys = await keysForSeal([ref]);
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', keys.get(cacheKey(tenantId, ref.rh, ref.p))!, iv);
      cipher.setAAD(bytesAad(tenantId, emailId, label, ref.rh, ref.p));
      const ct = Buffer.concat([cipher.update(data), cipher.final()]);
      return { rh: ref.rh, p: ref.p, iv, tag: cipher.getAuthTag(), ct };
    },

    async openBytes(tenantId, emailId, label, sealed) {
      const keys = await load([{ tenantId, rh: sealed.rh, p: sealed.p }]);
      const key = keys.get(cacheKey(tenantId, sealed.rh, sealed.p));
      if (!key) return null;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv);
        decipher.setAAD(bytesAad(tenantId, emailId, label, sealed.rh, sealed.p));
        decipher.setAuthTag(sealed.tag);
        return Buffer.concat([decipher.update(sealed.ct), decipher.final()]);
      } catch {
        return null;
      }
    },

    async eraseKeys(tenantId, email, client) {
      const rh = recipientHash(tenantId, email);
      const db = client ?? pool;
      const result = await db.query('DELETE FROM data_keys WHERE tenant_id = $1 AND recipient_hash = $2', [
        tenantId,
        rh,
      ]);
      await db.query('DELETE FROM email_keys WHERE tenant_id = $1 AND recipient_hash = $2', [tenantId, rh]);
      this.invalidate(tenantId, rh);
      return result.rowCount ?? 0;
    },

    async dropPeriodsBefore(cutoff, tenantId, exceptTenants = []) {
      const first = firstKeptPeriod(cutoff);
      const result =
        tenantId === undefined
          ? await pool.query('DELETE FROM data_keys WHERE period < $1 AND tenant_id <> ALL($2::text[])', [
              first,
              exceptTenants,
            ])
          : await pool.query('DELETE FROM data_keys WHERE period < $1 AND tenant_id = $2', [first, tenantId]);
      if (tenantId === undefined)
        await pool.query('DELETE FROM email_keys WHERE period < $1 AND tenant_id <> ALL($2::text[])', [
          first,
          exceptTenants,
        ]);
      else await pool.query('DELETE FROM email_keys WHERE period < $1 AND tenant_id = $2', [first, tenantId]);
      if ((result.rowCount ?? 0) > 0) this.invalidate();
      return result.rowCount ?? 0;
    },

    async rewriteKeys(log) {
      await rewriteDataKeys(pool, log);
    },

    invalidate(tenantId, rh) {
      if (tenantId === undefined) {
        cache.clear();
        emailKeys.clear();
        return;
      }
      for (const [id, ref] of emailKeys.entries())
        if (id.startsWith(`${tenantId}\n`) && (rh === undefined || ref.rh === rh)) emailKeys.delete(id);
      const prefix = rh === undefined ? `${tenantId}\n` : `${tenantId}\n${rh}\n`;
      for (const id of [...cache.keys()]) if (id.startsWith(prefix)) cache.delete(id);
    },
  };
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
async function rewriteDataKeys(pool: pg.Pool, log?: (error: unknown) => void): Promise<void> {
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
