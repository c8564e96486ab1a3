/**
 * Issue 45 item 4: what the first step of a timeline partitioned by day would cost the projector.
 * `email_events`' key `(tenant_id, event_id)` is the projector's claim (migration 0095), and a
 * partitioned table's unique key must hold the partition key (`email_id`): so the claim would move
 * to a narrow table of its own, `event_claims (tenant_id, event_id)`, inserted by the same
 * statement, and the timeline rows would go to `email_events` partitioned by day of the email id,
 * keyed `(tenant_id, email_id, event_id)`. This runs both on a Postgres server of its own, batches
 * of the projector's size (`CLAIM_BATCH`, 3 700: a Kafka fetch) of realistic events whose email ids
 * start with today's time part, alternated (`CLAIM_ROUNDS`), and prints per event: the statement's
 * time and the WAL it writes (a CHECKPOINT before each round, as after any checkpoint).
 *
 *   npx tsx bench/experiments/timeline-claim.ts
 */
import type { DeliveryEvent } from '@tern/contracts';
import { idTime } from '@tern/kernel';
import { claimIntoTimeline } from '@tern/read-models';
import { migratePostgres } from '@tern/stores';
import pg from 'pg';
import { startDedicatedPostgres } from '../../test/faults/servers.js';
import { createNamedDatabase } from '../../test/support/services.js';
import { chunks, generateTraffic } from '../lib/events.js';

const BATCH = Number(process.env.CLAIM_BATCH ?? 3700);
const EVENTS = Number(process.env.CLAIM_EVENTS ?? 74_000);
const ROUNDS = Number(process.env.CLAIM_ROUNDS ?? 3);
const DAY_MS = 86_400_000;

const server = await startDedicatedPostgres({ settings: ['max_wal_size = 8GB', 'checkpoint_timeout = 1h'] });
const db = await createNamedDatabase(server.url, 'tern_timeline_claim');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
pool.on('error', () => {});
try {
  await migratePostgres(pool);
  const now = Date.now();
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  // Email ids of today, as `idTime` makes them (the generator's own are `em_<tag>_<n>`).
  const ids = new Map<string, string>();
  const events: DeliveryEvent[] = generateTraffic({ events: EVENTS, tag: 'claim', endMs: now, days: 1 }).map(
    (e) => {
      let id = ids.get(e.emailId);
      if (!id) {
        id = `em_${idTime(today + ids.size)}${String(ids.size).padStart(14, 'x')}`;
        ids.set(e.emailId, id);
      }
      return { ...e, emailId: id };
    },
  );
  const batches = chunks(events, BATCH);
  const lo = `em_${idTime(today)}`;
  const hi = `em_${idTime(today + DAY_MS)}`;
  await pool.query(`
    CREATE TABLE event_claims (tenant_id text NOT NULL, event_id text NOT NULL, PRIMARY KEY (tenant_id, event_id));
    CREATE TABLE email_events_p (LIKE email_events INCLUDING DEFAULTS) PARTITION BY RANGE (email_id);
    ALTER TABLE email_events_p ADD PRIMARY KEY (tenant_id, email_id, event_id);
    CREATE INDEX email_events_p_tenant_occurred_idx ON email_events_p (tenant_id, occurred_at);
    CREATE TABLE email_events_p_today PARTITION OF email_events_p FOR VALUES FROM ('${lo}') TO ('${hi}');
    CREATE TABLE email_events_p_default PARTITION OF email_events_p DEFAULT`);
  const split = `
    WITH u AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::jsonb[])
               AS u(tenant_id, email_id, event_id, type, occurred_at, data)
       WHERE NOT EXISTS (SELECT 1 FROM processed_events p WHERE p.tenant_id = u.tenant_id AND p.event_id = u.event_id)),
    c AS (
      INSERT INTO event_claims (tenant_id, event_id) SELECT tenant_id, event_id FROM u
      ON CONFLICT DO NOTHING RETURNING tenant_id, event_id),
    t AS (
      INSERT INTO email_events_p (tenant_id, email_id, event_id, type, occurred_at, data)
      SELECT u.tenant_id, u.email_id, u.event_id, u.type, u.occurred_at, u.data
        FROM u JOIN c ON c.tenant_id = u.tenant_id AND c.event_id = u.event_id)
    SELECT tenant_id, event_id FROM c`;
  const client = await pool.connect();
  const variants: Record<string, (batch: DeliveryEvent[]) => Promise<number>> = {
    'today: claim = email_events key': async (batch) => (await claimIntoTimeline(client, batch)).size,
    'split: event_claims + email_events by day': async (batch) =>
      (
        await client.query(split, [
          batch.map((e) => e.tenantId),
          batch.map((e) => e.emailId),
          batch.map((e) => e.id),
          batch.map((e) => e.type),
          batch.map((e) => e.occurredAt),
          batch.map((e) => JSON.stringify(e.data ?? {})),
        ])
      ).rowCount ?? 0,
  };
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, claim] of Object.entries(variants)) {
        await client.query('TRUNCATE email_events, event_claims, email_events_p');
        await client.query('CHECKPOINT');
        const lsn = (await client.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
        let ms = 0;
        let claimed = 0;
        for (const batch of batches) {
          const s = performance.now();
          await client.query('BEGIN');
          claimed += await claim(batch);
          await client.query('COMMIT');
          ms += performance.now() - s;
        }
        const wal = Number(
          (await client.query<{ b: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS b', [lsn]))
            .rows[0]!.b,
        );
        // Replayed: every id is claimed already, nothing is written twice.
        let again = 0;
        for (const batch of batches.slice(0, 2)) again += await claim(batch);
        console.log(
          `round ${round}, ${name}: ${((ms * 1000) / events.length).toFixed(1)} µs and ${(wal / events.length).toFixed(0)} B of WAL per event; ` +
            `${claimed} of ${events.length} claimed, ${again} on a replay of two batches`,
        );
      }
    }
  } finally {
    client.release();
  }
} finally {
  await pool.end();
  await db.drop().catch(() => {});
  await server.destroy().catch(() => {});
}
