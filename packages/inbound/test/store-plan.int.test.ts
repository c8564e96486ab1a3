// The dedup look-up of `inbound_store` (migration 0320/0440; docs/inbound.md) stays a look-up of the
// dedup index however the table grew since the connection first called it. PL/pgSQL caches a
// generic plan per connection; one made while the table was nearly empty scanned the tenant's whole
// index (or the whole table) for each arrival, so the Postgres CPU of an arrival grew with the
// mail stored (1.5 ms at 1 000 messages, 3.7 ms at 6 000 in the inbound bench). Migration 0460 had
// the function plan for each call's values (≈ 150 µs of planning a call); migration 0470 keeps the
// cached plans and makes a scan of the tenant no plan's cheaper guess. Measured here by the rows the
// call read (`pg_stat_xact_user_tables`, this transaction's own counts), on real Postgres.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import { listRoutes } from '../src/routes.js';
import { storeInbound } from '../src/store.js';

const T = 'plan';
const GROWN = 20_000;

let db: LogDatabase;
let client: pg.Client;

beforeAll(async () => {
  db = await openLogDatabase();
}, 60_000);

afterAll(async () => {
  await db?.close();
});

const blob = { iv: Buffer.alloc(12), tag: Buffer.alloc(16), ct: Buffer.from('x') };

const store = (key: string, db: pg.ClientBase = client) =>
  storeInbound(
    db,
    {
      id: `inb_${key}`,
      tenantId: T,
      receivedAt: new Date(),
      dedupKey: key,
      fromHash: 'fh',
      toHashes: ['th'],
      period: '2026-12',
      size: 1,
      attachments: 0,
      auth: { spf: 'none', dkim: 'none', dmarc: 'none', arc: 'none' },
      inReplyTo: null,
      summary: blob,
      content: blob,
      raw: blob,
      rawParts: 0,
    },
    new Date(Date.now() - 24 * 3600_000),
  );

describe('inbound_store as the table grows', () => {
  // In this order: the first case needs a table never analyzed.
  it.each([
    [
      'a table never analyzed',
      async () => {
        for (let i = 0; i < 12; i++) await store(`early-${i}`);
      },
    ],
    [
      'a nearly empty analyzed table',
      async () => {
        await db.pool.query('TRUNCATE inbound_messages');
        for (let i = 0; i < 3; i++) await store(`early-${i}`);
        await client.query('ANALYZE inbound_messages');
        for (let i = 3; i < 12; i++) await store(`early-${i}`);
      },
    ],
  ])(
    `reads a handful of rows for a new key after ${GROWN} more rows, on a connection that planned over %s`,
    async (_name, planned) => {
      client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        // More calls than a generic plan waits for (5), on this connection.
        await planned();
        // The tenant's mail grows (on another connection); no ANALYZE since.
        await db.pool.query(
          `INSERT INTO inbound_messages (id, tenant_id, received_at, dedup_key, announced, from_hash, to_hashes,
           period, size, attachments, auth, summary_iv, summary_tag, summary, content_iv, content_tag, content,
           raw_iv, raw_tag, raw)
         SELECT 'inb_grown_' || g, $1, now() - g * interval '1 second', 'grown-' || g, true, 'fh', '{th}',
           '2026-12', 1, 0, '{}', '\\x00', '\\x00', '\\x00', '\\x00', '\\x00', '\\x00', '\\x00', '\\x00', '\\x00'
           FROM generate_series(1, $2::int) g`,
          [T, GROWN],
        );
        // The same call reads the tenant's routes (issue 43): other tenants' routes grow too, and
        // this tenant has two, the one listed second first by priority.
        await db.pool.query(
          `INSERT INTO inbound_routes (id, tenant_id, priority, match, actions)
           SELECT 'rt_grown_' || g, 'other-' || g, 1, '{"recipient":"*@x.test"}'::jsonb, '[{"store":true}]'::jsonb
             FROM generate_series(1, $1::int) g
           UNION ALL SELECT 'rt_plan_b', $2, 5, '{"recipient":"b@x.test"}', '[{"drop":true}]'
           UNION ALL SELECT 'rt_plan_a', $2, 2, '{"recipient":"a@x.test"}', '[{"webhook":"ep_1"},{"forward":"ops@y.test"}]'
           ON CONFLICT DO NOTHING`,
          [GROWN, T],
        );
        await client.query('BEGIN');
        try {
          const stored = await store('late');
          expect(stored.fresh).toBe(true);
          expect(stored.routes.map((r) => r.id)).toEqual(['rt_plan_a', 'rt_plan_b']);
          expect(stored.routes).toEqual(await listRoutes(db.pool, T));
          // A found duplicate is still answered, also on this connection.
          expect(await store('grown-17')).toMatchObject({ id: 'inb_grown_17', fresh: false });
          const read = async (table: string) =>
            Number(
              (
                await client.query<{ read: string }>(
                  `SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::text AS read
                   FROM pg_stat_xact_user_tables WHERE relname = $1`,
                  [table],
                )
              ).rows[0]!.read,
            );
          // The routes through their tenant index: the tenant's two a call, not the other 20 000.
          expect(await read('inbound_routes')).toBeLessThanOrEqual(100);
          // Two calls through the dedup index: a row each, and the planner's look at the ends of an
          // index; a scan of the tenant reads ≈ 20 000 a call (40 091 measured with cached plans
          // before migration 0460, and ≈ 40 000 over a table never analyzed without 0470's OFFSET 0).
          expect(await read('inbound_messages')).toBeLessThanOrEqual(1_000);
        } finally {
          await client.query('COMMIT');
        }
      } finally {
        await client.end();
      }
    },
    60_000,
  );
});
