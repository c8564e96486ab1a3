import { createHash } from 'node:crypto';
import type pg from 'pg';
import { type InboundRoute, type RouteJson, routesFromJson, routesJsonSql } from './routes.js';

/**
 * The tables of inbound email (SPEC §24; infra/migrations/postgres/0240_inbound.sql): only this
 * module names `inbound_addresses` and `inbound_messages`. Content columns hold sealed bytes; this
 * module never sees a key.
 */

type Db = pg.Pool | pg.ClientBase;

/** Whose rows a retention pass deletes: one tenant's, or all but `except`'s. */
export interface RetentionScope {
  tenantId?: string;
  except?: readonly string[];
}

/** A DNS label naming the tenant under INBOUND_DOMAIN: its id when it is one, else a hash of it. */
export function inboundSlug(tenantId: string): string {
  const lower = tenantId.toLowerCase();
  if (/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(lower) && lower === tenantId) return lower;
  return `t-${createHash('sha256').update(tenantId).digest('hex').slice(0, 20)}`;
}

/** Records (once) and answers the tenant's slug: mail to `<anything>@<slug>.<INBOUND_DOMAIN>` is its. */
export async function ensureInboundAddress(db: Db, tenantId: string): Promise<string> {
  const slug = inboundSlug(tenantId);
  await db.query('INSERT INTO inbound_addresses (slug, tenant_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
    slug,
    tenantId,
  ]);
  return slug;
}

/** The tenant a slug was issued to, or null. */
export async function tenantOfSlug(db: Db, slug: string): Promise<string | null> {
  const { rows } = await db.query<{ tenant_id: string }>({
    name: 'inbound_slug_tenant',
    text: 'SELECT tenant_id FROM inbound_addresses WHERE slug = $1',
    values: [slug],
  });
  return rows[0]?.tenant_id ?? null;
}

/** A sealed blob as three columns. */
export interface SealedBlob {
  iv: Buffer;
  tag: Buffer;
  ct: Buffer;
}

export interface InboundRow {
  id: string;
  tenantId: string;
  receivedAt: Date;
  dedupKey: string;
  fromHash: string;
  toHashes: string[];
  period: string;
  size: number;
  attachments: number;
  auth: Record<string, string>;
  inReplyTo: string | null;
  summary: SealedBlob;
  content: SealedBlob;
  /** The sealed raw MIME; empty when it is in `rawParts` parts (raw-parts.ts). */
  raw: SealedBlob;
  rawParts: number;
}

/**
 * Stores an arrival unless it is a duplicate, and answers the tenant's routes (`routes.ts` names
 * their table), in one round trip (`inbound_store`, migration 0320):
 * under an advisory lock on the dedup key, the message of the tenant with this key received since
 * `since`, or not announced yet however old (a retry completes it rather than storing a second
 * copy), is answered with `fresh: false`; else the row is inserted (`announced = false`) and
 * answered with `fresh: true`. The lock is held until the statement's own transaction commits.
 */
export async function storeInbound(
  db: Db,
  r: InboundRow,
  since: Date,
): Promise<{ id: string; announced: boolean; fresh: boolean; routes: InboundRoute[] }> {
  const { rows } = await db.query<{
    id: string;
    announced: boolean;
    fresh: boolean;
    routes: RouteJson[];
  }>({
    name: 'inbound_store',
    text: `SELECT s.id, s.announced, s.fresh, ${routesJsonSql('$2')} AS routes
             FROM inbound_store($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22) s`,
    values: [
      r.id,
      r.tenantId,
      r.receivedAt,
      r.dedupKey,
      since,
      r.fromHash,
      r.toHashes,
      r.period,
      r.size,
      r.attachments,
      JSON.stringify(r.auth),
      r.inReplyTo,
      r.summary.iv,
      r.summary.tag,
      r.summary.ct,
      r.content.iv,
      r.content.tag,
      r.content.ct,
      r.raw.iv,
      r.raw.tag,
      r.raw.ct,
      r.rawParts,
    ],
  });
  const row = rows[0];
  if (!row) throw new Error('inbound_store answered no row');
  return { id: row.id, announced: row.announced, fresh: row.fresh, routes: routesFromJson(row.routes) };
}

/**
 * Marks stored messages announced (their `email.received` is in the log), in one statement. Not a
 * named (prepared) statement: its generic plan, cached per connection from the first statistics of
 * a nearly empty table, was a sequential scan of the whole table for each batch.
 */
export async function markAnnouncedMany(db: Db, ids: readonly string[]): Promise<void> {
  await db.query('UPDATE inbound_messages SET announced = true WHERE id = ANY($1::text[])', [ids]);
}

export async function markAnnounced(db: Db, id: string): Promise<void> {
  await markAnnouncedMany(db, [id]);
}

/** A stored message's columns as the routes read them (sealed parts still sealed). */
export interface StoredInbound {
  id: string;
  tenantId: string;
  receivedAt: Date;
  fromHash: string;
  period: string;
  size: number;
  attachments: number;
  auth: { spf: string; dkim: string; dmarc: string; arc: string };
  inReplyTo: string | null;
  summary: SealedBlob;
  content?: SealedBlob;
  raw?: SealedBlob;
  /** 0: the raw MIME is `raw`; else it is in that many parts of `inbound_raw_parts`. */
  rawParts: number;
}

const LIST_COLUMNS = `id, tenant_id, received_at, from_hash, period, size, attachments, auth, in_reply_to,
  summary_iv, summary_tag, summary, raw_parts`;

type Row = {
  id: string;
  tenant_id: string;
  received_at: Date;
  from_hash: string;
  period: string;
  size: number;
  attachments: number;
  auth: StoredInbound['auth'];
  in_reply_to: string | null;
  summary_iv: Buffer;
  summary_tag: Buffer;
  summary: Buffer;
  raw_parts: number;
  content_iv?: Buffer;
  content_tag?: Buffer;
  content?: Buffer;
  raw_iv?: Buffer;
  raw_tag?: Buffer;
  raw?: Buffer;
};

function toStored(r: Row): StoredInbound {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    receivedAt: r.received_at,
    fromHash: r.from_hash,
    period: r.period,
    size: r.size,
    attachments: r.attachments,
    auth: r.auth,
    inReplyTo: r.in_reply_to,
    summary: { iv: r.summary_iv, tag: r.summary_tag, ct: r.summary },
    rawParts: r.raw_parts,
    ...(r.content ? { content: { iv: r.content_iv!, tag: r.content_tag!, ct: r.content } } : {}),
    ...(r.raw ? { raw: { iv: r.raw_iv!, tag: r.raw_tag!, ct: r.raw } } : {}),
  };
}

/** One page, newest first, after the (receivedAt, id) of `after`; filtered by keyed hashes of addresses. */
export async function listInbound(
  db: Db,
  q: {
    tenantId: string;
    limit: number;
    after?: { at: string; id: string } | undefined;
    toHash?: string | undefined;
    fromHash?: string | undefined;
    since?: string | undefined;
    /** The tenant's retention cut-off (SPEC §9): nothing received before it is listed. */
    cutoff?: Date | undefined;
  },
): Promise<StoredInbound[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${LIST_COLUMNS} FROM inbound_messages
     WHERE tenant_id = $1
       AND ($2::timestamptz IS NULL OR (received_at, id) < ($2::timestamptz, $3::text))
       AND ($4::text IS NULL OR $4 = ANY(to_hashes))
       AND ($5::text IS NULL OR from_hash = $5)
       AND ($6::timestamptz IS NULL OR received_at >= $6)
       AND ($8::timestamptz IS NULL OR received_at >= $8)
     ORDER BY received_at DESC, id DESC LIMIT $7`,
    [
      q.tenantId,
      q.after?.at ?? null,
      q.after?.id ?? null,
      q.toHash ?? null,
      q.fromHash ?? null,
      q.since ?? null,
      q.limit,
      q.cutoff ?? null,
    ],
  );
  return rows.map(toStored);
}

/** The tenant a stored message belongs to (ids are unique across tenants), or null. */
export async function inboundTenantOf(db: Db, id: string): Promise<string | null> {
  const { rows } = await db.query<{ tenant_id: string }>(
    'SELECT tenant_id FROM inbound_messages WHERE id = $1',
    [id],
  );
  return rows[0]?.tenant_id ?? null;
}

/**
 * One message of the tenant with its content (and its raw bytes when asked); null when it was
 * received before `cutoff` (the tenant's retention, SPEC §9), whether or not the job deleted it yet.
 */
export async function getInbound(
  db: Db,
  tenantId: string,
  id: string,
  opts: { raw?: boolean; cutoff?: Date | undefined } = {},
): Promise<StoredInbound | null> {
  const { rows } = await db.query<Row>(
    `SELECT ${LIST_COLUMNS}, content_iv, content_tag, content${opts.raw ? ', raw_iv, raw_tag, raw' : ''}
     FROM inbound_messages WHERE tenant_id = $1 AND id = $2
       AND ($3::timestamptz IS NULL OR received_at >= $3)`,
    [tenantId, id, opts.cutoff ?? null],
  );
  return rows[0] ? toStored(rows[0]) : null;
}

/** The inbound messages answering one of the tenant's emails (SPEC §24 threading), oldest first. */
export async function repliesTo(
  db: Db,
  tenantId: string,
  emailId: string,
): Promise<{ id: string; receivedAt: Date }[]> {
  const { rows } = await db.query<{ id: string; received_at: Date }>(
    `SELECT id, received_at FROM inbound_messages WHERE tenant_id = $1 AND in_reply_to = $2
     ORDER BY received_at, id LIMIT 100`,
    [tenantId, emailId],
  );
  return rows.map((r) => ({ id: r.id, receivedAt: r.received_at }));
}

/** Erasure (SPEC §14, §24): deletes the tenant's messages the address sent or received; returns their ids. */
export async function eraseInbound(db: Db, tenantId: string, recipientHash: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'DELETE FROM inbound_messages WHERE tenant_id = $1 AND (from_hash = $2 OR $2 = ANY(to_hashes)) RETURNING id',
    [tenantId, recipientHash],
  );
  return rows.map((r) => r.id);
}

/**
 * Retention (SPEC §9) of a table of what arrived (`received_at`): deletes its rows received before
 * `cutoff` in `scope`; returns how many went. `table` is its owner's (the messages here, the DMARC
 * reports in dmarc.ts).
 */
export async function expireReceived(
  db: Db,
  table: string,
  cutoff: Date,
  scope: RetentionScope,
): Promise<number> {
  const result = await db.query(
    `DELETE FROM ${table} WHERE received_at < $1
       AND ($2::text IS NULL OR tenant_id = $2) AND NOT (tenant_id = ANY($3::text[]))`,
    [cutoff, scope.tenantId ?? null, scope.except ?? []],
  );
  return result.rowCount ?? 0;
}

/** Retention (SPEC §9): deletes messages received before `cutoff` (one tenant's, or all but `except`'s). */
export function expireInbound(db: Db, cutoff: Date, scope: RetentionScope = {}): Promise<number> {
  return expireReceived(db, 'inbound_messages', cutoff, scope);
}

/** Deletes one stored message (a `drop` route). */
export async function deleteInbound(db: Db, tenantId: string, id: string): Promise<void> {
  await db.query('DELETE FROM inbound_messages WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
}

/** A stored message whose `email.received` is not in the log, sealed parts still sealed (the sweeper's input). */
export type UnannouncedInbound = StoredInbound & { content: SealedBlob; raw: SealedBlob };

/** Messages stored before `before` and never announced (their 250 never went out), oldest first. */
export async function unannouncedBefore(db: Db, before: Date, limit: number): Promise<UnannouncedInbound[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${LIST_COLUMNS}, content_iv, content_tag, content, raw_iv, raw_tag, raw
     FROM inbound_messages WHERE NOT announced AND received_at < $1 ORDER BY received_at, id LIMIT $2`,
    [before, limit],
  );
  return rows.map((r) => toStored(r) as UnannouncedInbound);
}
