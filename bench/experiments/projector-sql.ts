/**
 * Variants of the projector's heaviest statements on a fresh migrated database, batches of
 * 3700 realistic events (what a Kafka fetch hands the projector): the `processed_events` claim
 * with its indexes as migrated, without the `processed_at` btree, and with a BRIN instead; and
 * the `email_logs` write path as in pg-sink.ts vs one upsert from typed arrays. Backs the
 * projection proposals in bench/README.md.
 *   npx tsx bench/experiments/projector-sql.ts
 */
import type { DeliveryEvent } from '@tern/contracts';
import { type EmailState, evolve, initialEmailState, toLogEntry } from '@tern/domain';
import { chunks, generateTraffic } from '../lib/events.js';
import { openProjectionDatabase } from '../lib/projection-stores.js';
import { benchEnv } from '../lib/services.js';

const store = await openProjectionDatabase(benchEnv(process.env).databaseUrl, { max: 2 });
const batches = chunks(generateTraffic({ events: 60_000, tag: 'sql', endMs: Date.now() }), 3700);
const client = await store.pool.connect();

async function timeBatches(name: string, work: (batch: DeliveryEvent[]) => Promise<void>): Promise<void> {
  await client.query('TRUNCATE processed_events, email_logs');
  let ms = 0;
  for (const batch of batches) {
    const started = performance.now();
    await client.query('BEGIN');
    await work(batch);
    await client.query('COMMIT');
    ms += performance.now() - started;
  }
  console.log(`${name}: ${(ms / batches.length).toFixed(1)} ms per ${batches[0]!.length}-event batch`);
}

const claim = async (batch: DeliveryEvent[]) => {
  await client.query(
    `INSERT INTO processed_events (tenant_id, event_id) SELECT * FROM unnest($1::text[], $2::text[])
     ON CONFLICT DO NOTHING RETURNING tenant_id, event_id`,
    [batch.map((e) => e.tenantId), batch.map((e) => e.id)],
  );
};

/** The rows pg-sink.ts would write for a batch of new emails, sorted as it sorts them. */
function rowsOf(batch: DeliveryEvent[]) {
  const byEmail = new Map<string, DeliveryEvent[]>();
  for (const e of batch) {
    const k = `${e.tenantId}\u0000${e.emailId}`;
    const list = byEmail.get(k);
    if (list) list.push(e);
    else byEmail.set(k, [e]);
  }
  return [...byEmail.values()]
    .map((list) => {
      let state: EmailState = initialEmailState(list[0]!.tenantId, list[0]!.emailId);
      for (const e of list) state = evolve(state, e);
      const entry = toLogEntry(state);
      return {
        tenant_id: state.tenantId,
        id: state.emailId,
        to_email: entry?.toEmail ?? null,
        subject: entry?.subject ?? null,
        status: entry?.status ?? null,
        provider: entry?.provider ?? null,
        message_id: entry?.messageId ?? null,
        template_id: state.queued?.templateId ?? null,
        tags: entry?.tags ?? [],
        created_at: entry?.createdAt ?? null,
        state,
      };
    })
    .sort((a, b) =>
      a.tenant_id === b.tenant_id ? (a.id < b.id ? -1 : 1) : a.tenant_id < b.tenant_id ? -1 : 1,
    );
}

const lockExisting = (t: string[], i: string[]) =>
  client.query(
    `SELECT e.tenant_id, e.id, e.state, e.version FROM email_logs e
       JOIN unnest($1::text[], $2::text[]) AS u(t, i) ON e.tenant_id = u.t AND e.id = u.i
      ORDER BY e.tenant_id, e.id FOR UPDATE OF e`,
    [t, i],
  );

try {
  await timeBatches('processed_events as migrated (pk + processed_at btree)', claim);
  await client.query('DROP INDEX processed_events_processed_at_idx');
  await timeBatches('processed_events without the processed_at btree', claim);
  await client.query(
    'CREATE INDEX processed_events_processed_at_brin ON processed_events USING brin (processed_at)',
  );
  await timeBatches('processed_events with BRIN (processed_at)', claim);

  await timeBatches(
    'email_logs as pg-sink.ts (placeholders, lock, jsonb_to_recordset update)',
    async (batch) => {
      const rows = rowsOf(batch);
      const t = rows.map((r) => r.tenant_id);
      const i = rows.map((r) => r.id);
      await client.query(
        `INSERT INTO email_logs (tenant_id, id, state, version)
       SELECT t, i, '{}'::jsonb, 0 FROM unnest($1::text[], $2::text[]) AS u(t, i) ON CONFLICT DO NOTHING`,
        [t, i],
      );
      await lockExisting(t, i);
      await client.query(
        `UPDATE email_logs e
          SET to_email = u.to_email, subject = u.subject, status = u.status, provider = u.provider,
              message_id = u.message_id, template_id = u.template_id, tags = u.tags,
              created_at = u.created_at, state = u.state, version = e.version + 1, updated_at = now()
         FROM jsonb_to_recordset($1::jsonb) AS u(tenant_id text, id text, to_email text, subject text,
              status text, provider text, message_id text, template_id text, tags jsonb,
              created_at timestamptz, state jsonb)
        WHERE e.tenant_id = u.tenant_id AND e.id = u.id`,
        [JSON.stringify(rows)],
      );
    },
  );
  await timeBatches('email_logs as one upsert from typed arrays (lock existing first)', async (batch) => {
    const rows = rowsOf(batch);
    const t = rows.map((r) => r.tenant_id);
    const i = rows.map((r) => r.id);
    await lockExisting(t, i);
    await client.query(
      `INSERT INTO email_logs AS e (tenant_id, id, to_email, subject, status, provider, message_id,
              template_id, tags, created_at, state, version)
       SELECT *, 1 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
              $7::text[], $8::text[], $9::jsonb[], $10::timestamptz[], $11::jsonb[])
       ON CONFLICT (tenant_id, id) DO UPDATE
          SET to_email = EXCLUDED.to_email, subject = EXCLUDED.subject, status = EXCLUDED.status,
              provider = EXCLUDED.provider, message_id = EXCLUDED.message_id,
              template_id = EXCLUDED.template_id, tags = EXCLUDED.tags, created_at = EXCLUDED.created_at,
              state = EXCLUDED.state, version = e.version + 1, updated_at = now()`,
      [
        t,
        i,
        rows.map((r) => r.to_email),
        rows.map((r) => r.subject),
        rows.map((r) => r.status),
        rows.map((r) => r.provider),
        rows.map((r) => r.message_id),
        rows.map((r) => r.template_id),
        rows.map((r) => JSON.stringify(r.tags)),
        rows.map((r) => r.created_at),
        rows.map((r) => JSON.stringify(r.state)),
      ],
    );
  });
} finally {
  client.release();
  await store.close();
}
