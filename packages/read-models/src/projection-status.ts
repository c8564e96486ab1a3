import { READ_MODEL_CHANNEL, readModelPayload } from '@tern/stores';
import type pg from 'pg';
import { batchPruner } from './prune.js';
import type { PgReadModel } from './read-model.js';

/** A record the projector could not fold: its raw (opened) value and why. */
export interface DeadLetterRow {
  payload: string;
  reason: string;
}

/** Writes dead letters once each (a redelivered record is the same payload: one row). */
export async function writeDeadLetters(
  client: pg.ClientBase,
  letters: readonly DeadLetterRow[],
): Promise<void> {
  if (letters.length === 0) return;
  await client.query(
    `INSERT INTO dead_letters (source, payload, reason, payload_hash)
     SELECT 'projector', p, r, encode(sha256(convert_to(p, 'UTF8')), 'hex')
       FROM unnest($1::text[], $2::text[]) AS d(p, r)
     ON CONFLICT (source, payload_hash) DO NOTHING`,
    [letters.map((d) => d.payload), letters.map((d) => d.reason)],
  );
}

/** Dead-letters one outbox row ClickHouse refused (source `clickhouse`), once. */
export async function writeClickHouseDeadLetter(
  db: pg.Pool | pg.ClientBase,
  payload: string,
  reason: string,
) {
  await db.query(
    `INSERT INTO dead_letters (source, payload, reason, payload_hash)
     VALUES ('clickhouse', $1, $2, encode(sha256(convert_to($1, 'UTF8')), 'hex'))
     ON CONFLICT (source, payload_hash) DO NOTHING`,
    [payload, reason],
  );
}

/**
 * The projection's progress (`projection_status`: the newest event folded, the last batch, the
 * events folded in all) and what it could not fold (`dead_letters`). Applying a batch also tells
 * the api processes (delivered at commit) that these tenants' log entries changed, as of this
 * `last_batch_at` (packages/stores read-model-feed).
 */
export const projectionStatus: PgReadModel = {
  name: 'projection status',
  store: 'postgres',
  rebuild: 'truncate',
  tables: ['projection_status', 'dead_letters'],
  async apply(client, { applied, folded }) {
    const newest = applied.reduce((max, e) => Math.max(max, Date.parse(e.occurredAt)), 0);
    await client.query(
      `WITH status AS (
         INSERT INTO projection_status (name, last_event_at, last_batch_at, events_total)
         VALUES ('projector', $1, now(), $2)
         ON CONFLICT (name) DO UPDATE
            SET last_event_at = GREATEST(projection_status.last_event_at, EXCLUDED.last_event_at),
                last_batch_at = now(),
                events_total = projection_status.events_total + EXCLUDED.events_total
         RETURNING last_batch_at
       )
       SELECT pg_notify($3, jsonb_set($4::jsonb, '{asOf}', to_jsonb((SELECT last_batch_at FROM status)))::text)`,
      [
        new Date(newest).toISOString(),
        applied.length,
        READ_MODEL_CHANNEL,
        readModelPayload({ kind: 'logs', tenants: folded.emails.map((e) => e.tenantId) }),
      ],
    );
  },
  async eraseRecipient(client, { tenantId, address }) {
    // A record the projector refused keeps its raw (opened) value: scrubbed when it names the
    // address in this tenant (dead letters have no tenant column; the JSON names it).
    await client.query(
      `UPDATE dead_letters SET payload = '[erased: the record named an erased recipient]'
        WHERE strpos(lower(payload), $2) > 0 AND strpos(payload, $1) > 0`,
      [JSON.stringify({ tenantId }).slice(1, -1), address],
    );
    return {};
  },
};

/**
 * The projector's progress as a relation of at most one row `(last_batch_at, events_total)`,
 * embedded by packages/tenant-settings' `tenantReadContext` (the read context's one round trip).
 */
export const projectorStatusSql = `(SELECT last_batch_at, events_total FROM projection_status WHERE name = 'projector')`;

/**
 * The projector's `last_batch_at` (null before its first batch): what the read-model feed of
 * packages/stores reads on its listening connection when it starts (`ReadModelFeedOptions.lastBatchAt`).
 */
export async function lastBatchAt(db: Pick<pg.ClientBase, 'query'>): Promise<Date | null> {
  const { rows } = await db.query<{ last_batch_at: Date | null }>(
    "SELECT last_batch_at FROM projection_status WHERE name = 'projector'",
  );
  return rows[0]?.last_batch_at ?? null;
}

/** Deletes up to `limit` dead letters older than `cutoff` (the dedup window). */
export const pruneDeadLetters = batchPruner({ table: 'dead_letters', at: 'created_at', key: 'id' });
