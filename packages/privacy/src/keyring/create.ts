import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import {
  aad,
  b64,
  bytesAad,
  cacheKey,
  deriveKeys,
  firstKeptPeriod,
  type KeyRef,
  periodOf,
  sealWith,
  unb64,
} from './crypto.js';
import { createDataKeys, rewriteDataKeys } from './data-keys.js';
import type {
  EmailSealItem,
  Keyring,
  KeyringOptions,
  OpenItem,
  Sealed,
  SealedBytes,
  SealedFields,
  SealItem,
} from './types.js';

/**
 * Crypto-shredding (SPEC §14, issue 14 part 2; docs/architecture.md § "Personal data and
 * erasure"). Personal fields are sealed with AES-256-GCM under a data key per (tenant,
 * recipient, UTC month); the keys live in Postgres (`data_keys`) wrapped under a key derived from
 * `ENCRYPTION_KEY`. Erasure deletes a recipient's keys and retention deletes old months: every
 * copy sealed under them (event log included) is unreadable from then on.
 */

/** A row of `email_keys`: the recipient and month an email's fields are sealed under. */
interface EmailKeyRow {
  tenant_id: string;
  email_id: string;
  recipient_hash: string;
  period: string;
}

/** Each item sealed under its ref's key, with one draw of randomness for every IV of the batch. */
function sealEach(keys: Map<string, Buffer>, refs: readonly KeyRef[], items: readonly SealItem[]): Sealed[] {
  const ivs = randomBytes(12 * items.length);
  return items.map((item, n) =>
    sealWith(keys, refs[n]!, item.emailId, item.fields, ivs.subarray(12 * n, 12 * n + 12)),
  );
}

export function createKeyring(opts: KeyringOptions): Keyring {
  const { wrapKey, hmacKey } = deriveKeys(opts.encryptionKey);
  const pool = opts.pool;
  const { cache, load, keysForSeal } = createDataKeys(pool, wrapKey, opts);
  /** (tenant, email) → the key its email.queued was sealed under; only hits are cached. */
  const emailKeys = new LRUCache<string, { rh: string; p: string }>({
    max: opts.cacheMax ?? 10_000,
    ttl: opts.cacheTtlMs ?? 30_000,
  });
  const emailKeyId = (tenantId: string, emailId: string) => `${tenantId}\n${emailId}`;

  function recipientHash(tenantId: string, email: string): string {
    return b64(createHmac('sha256', hmacKey).update(`${tenantId}\n${email.trim().toLowerCase()}`).digest());
  }

  /** The key of each item's recipient and month: one HMAC per item. */
  const recipientRefs = (items: readonly SealItem[]): KeyRef[] =>
    items.map((i) => ({ tenantId: i.tenantId, rh: recipientHash(i.tenantId, i.email), p: periodOf(i.at) }));

  /**
   * The key of each (tenant, email)'s ref, created when missing, and recorded as that email's key
   * (`email_keys`): later events of these emails (bounce diagnostics, clicked URLs) and its other
   * sealed parts are sealed under the same key. An email already recorded under its ref here
   * inserts nothing.
   */
  async function keysRecorded(
    emails: readonly { tenantId: string; emailId: string }[],
    refs: readonly KeyRef[],
  ): Promise<Map<string, Buffer>> {
    const keys = await keysForSeal(refs);
    const fresh = emails.flatMap((e, n) => {
      const known = emailKeys.get(emailKeyId(e.tenantId, e.emailId));
      return known?.rh !== refs[n]!.rh || known.p !== refs[n]!.p ? [{ ...e, ref: refs[n]! }] : [];
    });
    if (fresh.length > 0) {
      const { rows } = await pool.query<EmailKeyRow>(
        `INSERT INTO email_keys (tenant_id, email_id, recipient_hash, period)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
         ON CONFLICT DO NOTHING RETURNING tenant_id, email_id, recipient_hash, period`,
        [
          fresh.map((f) => f.tenantId),
          fresh.map((f) => f.emailId),
          fresh.map((f) => f.ref.rh),
          fresh.map((f) => f.ref.p),
        ],
      );
      // What was written is the email's key: a next seal of the same email (sealBytes of its
      // parts, the sealed event) inserts nothing again. A conflicting row is not cached (its key may differ).
      for (const r of rows)
        emailKeys.set(emailKeyId(r.tenant_id, r.email_id), { rh: r.recipient_hash, p: r.period });
    }
    return keys;
  }

  /** `data` sealed under `ref`'s key (in `keys`), bound to the email and the value's label. */
  function sealBytesWith(
    keys: Map<string, Buffer>,
    ref: KeyRef,
    emailId: string,
    label: string,
    data: Buffer,
    iv: Buffer = randomBytes(12),
  ): SealedBytes {
    const cipher = createCipheriv('aes-256-gcm', keys.get(cacheKey(ref.tenantId, ref.rh, ref.p))!, iv);
    cipher.setAAD(bytesAad(ref.tenantId, emailId, label, ref.rh, ref.p));
    // AES-GCM's final() adds no byte: no second copy of a large message.
    const body = cipher.update(data);
    const last = cipher.final();
    const ct = last.length === 0 ? body : Buffer.concat([body, last]);
    return { rh: ref.rh, p: ref.p, iv, tag: cipher.getAuthTag(), ct };
  }

  async function sealMany(items: readonly SealItem[]): Promise<Sealed[]> {
    const refs = recipientRefs(items);
    return sealEach(await keysRecorded(items, refs), refs, items);
  }

  async function sealForRecipients(items: readonly SealItem[]): Promise<Sealed[]> {
    if (items.length === 0) return [];
    const refs = recipientRefs(items);
    const keys = await keysForSeal(refs);
    return sealEach(keys, refs, items);
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
      const { rows } = await pool.query<EmailKeyRow>(
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
      // The key created when missing and recorded as the email's, as its email.queued will be.
      const ref = { tenantId, rh: recipientHash(tenantId, email), p: periodOf(at) };
      return sealBytesWith(await keysRecorded([{ tenantId, emailId }], [ref]), ref, emailId, label, data);
    },

    async sealBytesForAddress(tenantId, emailId, email, at, parts) {
      const ref = { tenantId, rh: recipientHash(tenantId, email), p: periodOf(at) };
      const keys = await keysForSeal([ref]);
      const ivs = randomBytes(12 * parts.length);
      return parts.map(({ label, data }, n) =>
        sealBytesWith(keys, ref, emailId, label, data, ivs.subarray(12 * n, 12 * n + 12)),
      );
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
