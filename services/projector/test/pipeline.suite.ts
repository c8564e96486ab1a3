import { randomBytes } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import {
  createEventStream,
  createKafkaEventLog,
  createPostgresEventLog,
  type EventLog,
} from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { createClickHouse, migrateClickHouse, migratePostgres } from '@tern/stores';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFreshDatabase,
  tempDir,
  testServices,
  uniqueName,
  waitFor,
} from '../../../test/support/services.js';
import { createProjector, type Projector, rebuildProjections, shipBatch } from '../src/index.js';
import { applyBatchToPostgres } from '../src/pg-sink.js';

const TOKEN = 'pipeline-test-token';
export const suffix = () => randomBytes(5).toString('hex');

const waitUntil = <T>(description: string, fn: () => Promise<T>) =>
  waitFor(fn, { description, timeoutMs: 30_000 });

type RawEvent = {
  id: string;
  type: string;
  tenantId: string;
  emailId: string;
  occurredAt: string;
  data?: object;
};

/** A small scenario whose projections are known by hand (see the expectations below). */
export function scenario(tenantId: string): RawEvent[] {
  const e = (id: string, emailId: string, type: string, occurredAt: string, data?: object): RawEvent => ({
    id,
    type,
    tenantId,
    emailId,
    occurredAt,
    ...(data ? { data } : {}),
  });
  return [
    // e1: delivered, opened twice, clicked; template tpl-a; day 1
    e('q1', 'e1', 'email.queued', '2026-11-01T10:00:00.000Z', {
      toEmail: 'one@example.com',
      subject: 'One',
      templateId: 'tpl-a',
      tags: ['welcome'],
      projectId: 'prj-1',
    }),
    e('s1', 'e1', 'email.sent', '2026-11-01T10:00:01.000Z', { provider: 'ses', messageId: 'm-1' }),
    e('d1', 'e1', 'email.delivered', '2026-11-01T10:00:05.000Z'),
    e('o1a', 'e1', 'email.opened', '2026-11-01T11:00:00.000Z'),
    e('o1b', 'e1', 'email.opened', '2026-11-01T12:00:00.000Z', { userAgent: 'Mail' }),
    e('c1', 'e1', 'email.clicked', '2026-11-01T12:01:00.000Z', { url: 'https://example.com' }),
    // e2: hard bounce; no template; day 1
    e('q2', 'e2', 'email.queued', '2026-11-01T13:00:00.000Z', { toEmail: 'two@example.com', subject: 'Two' }),
    e('s2', 'e2', 'email.sent', '2026-11-01T13:00:01.000Z', { provider: 'postmark', messageId: 'm-2' }),
    e('b2', 'e2', 'email.bounced', '2026-11-01T13:00:09.000Z', { bounceType: 'hard' }),
    // e3: failed; tpl-a; day 2
    e('q3', 'e3', 'email.queued', '2026-11-02T08:00:00.000Z', {
      toEmail: 'three@example.com',
      subject: 'Three',
      templateId: 'tpl-a',
    }),
    e('f3', 'e3', 'email.failed', '2026-11-02T08:00:02.000Z', { reason: 'mailbox full' }),
    // e4: an open without its email.queued: kept, invisible
    e('o4', 'e4', 'email.opened', '2026-11-02T09:00:00.000Z'),
    // e5: scheduled, then cancelled; day 2
    e('q5', 'e5', 'email.queued', '2026-11-02T09:30:00.000Z', {
      toEmail: 'five@example.com',
      subject: 'Five',
      scheduledAt: '2026-11-20T00:00:00.000Z',
    }),
    e('x5', 'e5', 'email.cancelled', '2026-11-02T09:40:00.000Z'),
    // e6: delivered and complained BEFORE its email.queued is in the log; day 2
    e('d6', 'e6', 'email.delivered', '2026-11-02T10:00:05.000Z'),
    e('k6', 'e6', 'email.complained', '2026-11-02T11:00:00.000Z'),
    e('q6', 'e6', 'email.queued', '2026-11-02T10:00:00.000Z', {
      toEmail: 'Six@Example.com',
      subject: 'Six',
      projectId: 'prj-1',
    }),
  ];
}

const EXPECTED_ROWS = [
  {
    id: 'e1',
    status: 'DELIVERED',
    provider: 'ses',
    message_id: 'm-1',
    template_id: 'tpl-a',
    tags: ['welcome'],
  },
  { id: 'e2', status: 'BOUNCED', provider: 'postmark', message_id: 'm-2', template_id: null, tags: [] },
  { id: 'e3', status: 'FAILED', provider: null, message_id: null, template_id: 'tpl-a', tags: [] },
  { id: 'e5', status: 'CANCELLED', provider: null, message_id: null, template_id: null, tags: [] },
  { id: 'e6', status: 'DELIVERED', provider: null, message_id: null, template_id: null, tags: [] },
];
const EXPECTED_DAYS = [
  { day: '2026-11-01', total: 2, sent: 1, opened: 1, clicked: 1, bounced: 1, complained: 0, failed: 0 },
  { day: '2026-11-02', total: 3, sent: 1, opened: 0, clicked: 0, bounced: 0, complained: 1, failed: 1 },
];

/** Per project (SPEC §16): e1 and e6 are in prj-1. */
const EXPECTED_PROJECT_DAYS = [
  {
    project_id: 'prj-1',
    day: '2026-11-01',
    total: 1,
    sent: 1,
    opened: 1,
    clicked: 1,
    bounced: 0,
    complained: 0,
    failed: 0,
  },
  {
    project_id: 'prj-1',
    day: '2026-11-02',
    total: 1,
    sent: 1,
    opened: 0,
    clicked: 0,
    bounced: 0,
    complained: 1,
    failed: 0,
  },
];
/** Automatic suppressions (SPEC §13): e2's hard bounce, e6's complaint (lowercased). */
const EXPECTED_SUPPRESSIONS = [
  { email: 'six@example.com', reason: 'complaint', source: 'complaint' },
  { email: 'two@example.com', reason: 'hard_bounce', source: 'bounce' },
];

export async function projectFigures(ch: ClickHouseClient, tenantId: string) {
  const r = await ch.query({
    query: `SELECT project_id, toString(day) AS day, sum(total) AS total, sum(sent) AS sent, sum(opened) AS opened,
                   sum(clicked) AS clicked, sum(bounced) AS bounced, sum(complained) AS complained, sum(failed) AS failed
              FROM email_project_daily_v1 WHERE tenant_id = {t:String}
             GROUP BY project_id, day HAVING total != 0 OR sent != 0 OR opened != 0 OR clicked != 0
                    OR bounced != 0 OR complained != 0 OR failed != 0
             ORDER BY project_id, day`,
    query_params: { t: tenantId },
    format: 'JSONEachRow',
  });
  const rows = (await r.json()) as Record<string, string | number>[];
  return rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => [k, k === 'day' || k === 'project_id' ? v : Number(v)]),
    ),
  );
}

export async function suppressionsOf(pool: pg.Pool, tenantId: string) {
  const r = await pool.query(
    'SELECT email, reason, source FROM suppressions WHERE tenant_id = $1 ORDER BY email',
    [tenantId],
  );
  return r.rows;
}

export async function visibleRows(pool: pg.Pool, tenantId: string) {
  const r = await pool.query(
    `SELECT id, status, provider, message_id, template_id, tags, to_email, subject,
            to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, state
       FROM email_logs WHERE tenant_id = $1 AND created_at IS NOT NULL ORDER BY id`,
    [tenantId],
  );
  return r.rows;
}

export async function dailyFigures(ch: ClickHouseClient, tenantId: string) {
  const r = await ch.query({
    query: `SELECT toString(day) AS day, template_id, sum(total) AS total, sum(sent) AS sent, sum(opened) AS opened,
                   sum(clicked) AS clicked, sum(bounced) AS bounced, sum(complained) AS complained, sum(failed) AS failed
              FROM email_daily_v2 WHERE tenant_id = {t:String}
             GROUP BY day, template_id HAVING total != 0 OR sent != 0 OR opened != 0 OR clicked != 0
                    OR bounced != 0 OR complained != 0 OR failed != 0
             ORDER BY day, template_id`,
    query_params: { t: tenantId },
    format: 'JSONEachRow',
  });
  const rows = (await r.json()) as Record<string, string | number>[];
  return rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => [k, k === 'day' || k === 'template_id' ? v : Number(v)]),
    ),
  );
}

const DAILY_COUNTERS = ['total', 'sent', 'opened', 'clicked', 'bounced', 'complained', 'failed'];

function byDay(rows: Record<string, string | number>[]) {
  const days = new Map<string, Record<string, number | string>>();
  for (const row of rows) {
    const d = days.get(row.day as string) ?? {
      day: row.day as string,
      ...Object.fromEntries(DAILY_COUNTERS.map((k) => [k, 0])),
    };
    for (const k of DAILY_COUNTERS) d[k] = (d[k] as number) + (row[k] as number);
    days.set(row.day as string, d);
  }
  return [...days.values()];
}

function shuffle<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The end-to-end pipeline suite, run once per event-log adapter (one file each: chDB is per process). */
export interface ProjectionStores {
  pool: pg.Pool;
  ch: { client: ClickHouseClient; close(): Promise<void> };
  /** Closes ClickHouse and the pool, and drops the database (close the log first). */
  close(): Promise<void>;
}

/**
 * A fresh migrated Postgres database (a pool of `max` clients) and a migrated ClickHouse (embedded
 * chDB in a temp dir, or the run's server when one is configured).
 */
export async function openProjectionStores(name: string, max = 4): Promise<ProjectionStores> {
  const db = await createFreshDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max });
  // The run's teardown drops databases WITH (FORCE): an idle client it kills is no test failure.
  pool.on('error', () => undefined);
  await migratePostgres(pool);
  const ch = createClickHouse({
    dataDir: tempDir(`tern-${name}-ch-`),
    clickhouseUrl: testServices().clickhouseUrl,
  });
  await migrateClickHouse(ch.client);
  return {
    pool,
    ch,
    async close() {
      await ch.close();
      await pool.end();
      await db.drop();
    },
  };
}

/** The Postgres-table log on `pool`, its schema made, polling every 20 ms. */
export async function openPostgresTableLog(pool: pg.Pool): Promise<EventLog> {
  const log = createPostgresEventLog({ pool, pollIntervalMs: 20 });
  await log.ensureSchema();
  return log;
}

/** A Kafka log on the test broker, on a topic of its own (named after `topic`), once the broker answers. */
export async function openKafkaLog(topic: string, partitions: number): Promise<EventLog> {
  const log = createKafkaEventLog({
    brokers: testServices().kafkaBrokers,
    topic: uniqueName(topic),
    partitions,
  });
  await log.ping();
  return log;
}

export function runPipelineSuite(name: string, makeLog: (pool: pg.Pool) => Promise<EventLog>) {
  describe(`pipeline on the ${name} log`, () => {
    let stores: ProjectionStores;
    let pool: pg.Pool;
    let ch: ProjectionStores['ch'];
    let log: EventLog;
    let ingest: FastifyInstance;
    let projector: Projector;
    const group = `projector-${suffix()}`;
    // Written straight into Postgres by the crash test, bypassing the log: a rebuild rightly forgets it.
    const crashTenant = `t-crash-${suffix()}`;

    const post = async (events: RawEvent[]) => {
      const res = await ingest.inject({
        method: 'POST',
        url: '/events',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { events },
      });
      expect(res.statusCode, res.body).toBe(202);
    };
    const caughtUp = () => waitUntil('projector to catch up', async () => (await projector.lag()) === 0);

    beforeAll(async () => {
      stores = await openProjectionStores('pipeline', 6);
      ({ pool, ch } = stores);
      log = await makeLog(pool);
      ingest = await createIngestApp({ log: createEventStream(log), ingestToken: TOKEN });
      projector = createProjector({ pool, ch: ch.client, log: createEventStream(log), group, maxWaitMs: 20 });
      await projector.start();
    });
    afterAll(async () => {
      await projector?.stop();
      await ingest?.close();
      await log?.close();
      await stores?.close();
    });

    it('posted events end up in Postgres and ClickHouse with the expected rows and figures', async () => {
      const tenant = `t-${suffix()}`;
      await post(scenario(tenant));
      const rows = await waitUntil('rows', async () => {
        const r = await visibleRows(pool, tenant);
        return r.length === 5 && r.find((x) => x.id === 'e6')?.status === 'DELIVERED' ? r : undefined;
      });
      expect(
        rows.map(({ id, status, provider, message_id, template_id, tags }) => ({
          id,
          status,
          provider,
          message_id,
          template_id,
          tags,
        })),
      ).toEqual(EXPECTED_ROWS);
      expect(rows.find((r) => r.id === 'e6')?.created_at).toBe('2026-11-02T10:00:00.000Z');
      const invisible = await pool.query(
        'SELECT created_at FROM email_logs WHERE tenant_id = $1 AND id = $2',
        [tenant, 'e4'],
      );
      expect(invisible.rows).toEqual([{ created_at: null }]);
      await caughtUp();
      expect(byDay(await dailyFigures(ch.client, tenant))).toEqual(EXPECTED_DAYS);
      const tplA = (await dailyFigures(ch.client, tenant)).filter((r) => r.template_id === 'tpl-a');
      expect(tplA.map((r) => [r.day, r.total, r.sent, r.opened, r.clicked, r.failed])).toEqual([
        ['2026-11-01', 1, 1, 1, 1, 0],
        ['2026-11-02', 1, 0, 0, 0, 1],
      ]);
      expect(await projectFigures(ch.client, tenant)).toEqual(EXPECTED_PROJECT_DAYS);
      expect(await suppressionsOf(pool, tenant)).toEqual(EXPECTED_SUPPRESSIONS);
    });

    it('the same batch posted twice changes nothing', async () => {
      const tenant = `t-${suffix()}`;
      await post(scenario(tenant));
      await caughtUp();
      const rows = await visibleRows(pool, tenant);
      const figures = await dailyFigures(ch.client, tenant);
      await post(scenario(tenant));
      await caughtUp();
      expect(await visibleRows(pool, tenant)).toEqual(rows);
      expect(await dailyFigures(ch.client, tenant)).toEqual(figures);
      expect(byDay(figures)).toEqual(EXPECTED_DAYS);
      expect(await projectFigures(ch.client, tenant)).toEqual(EXPECTED_PROJECT_DAYS);
      expect(await suppressionsOf(pool, tenant)).toEqual(EXPECTED_SUPPRESSIONS);
    });

    it('a shuffled stream with duplicates gives the same projections as the ordered one', async () => {
      const ordered = `t-${suffix()}`;
      const shuffled = `t-${suffix()}`;
      await post(scenario(ordered));
      const events = scenario(shuffled);
      const withDuplicates = shuffle([...events, ...events.slice(0, 7), ...events.slice(3, 9)], 7);
      // In small posts, so duplicates straddle batches too.
      for (let i = 0; i < withDuplicates.length; i += 5) await post(withDuplicates.slice(i, i + 5));
      await caughtUp();
      // The fold state names its tenant; everything else must be equal.
      const withoutTenant = (rows: Record<string, unknown>[]) =>
        rows.map((r) => ({ ...r, state: { ...(r.state as object), tenantId: undefined } }));
      expect(withoutTenant(await visibleRows(pool, shuffled))).toEqual(
        withoutTenant(await visibleRows(pool, ordered)),
      );
      expect(await dailyFigures(ch.client, shuffled)).toEqual(await dailyFigures(ch.client, ordered));
      expect(await projectFigures(ch.client, shuffled)).toEqual(EXPECTED_PROJECT_DAYS);
      expect(await suppressionsOf(pool, shuffled)).toEqual(EXPECTED_SUPPRESSIONS);
    });

    it('a record that does not parse goes to dead_letters and the projector goes on', async () => {
      const tenant = `t-${suffix()}`;
      await log.append([{ key: 'junk', value: '{"not": "an event"' }]);
      await log.append([{ key: 'junk', value: JSON.stringify({ id: 'x', type: 'email.unknown' }) }]);
      await post(scenario(tenant));
      await caughtUp();
      expect(await visibleRows(pool, tenant)).toHaveLength(5);
      const dead = await pool.query(
        "SELECT reason FROM dead_letters WHERE payload LIKE '%not%' OR payload LIKE '%email.unknown%' ORDER BY id",
      );
      expect(dead.rows.map((r) => r.reason)).toEqual(['value is not JSON', expect.stringContaining('type')]);
    });

    it('a crash between the Postgres commit and the ClickHouse insert loses nothing and counts nothing twice', async () => {
      const tenant = crashTenant;
      const emailQueuedEvent = scenario(tenant)[0]!;
      // The batch is committed in Postgres with its outbox row, then the process "dies".
      const result = await applyBatchToPostgres(
        pool,
        [emailQueuedEvent as never],
        [],
        () => `crash-${suffix()}`,
      );
      expect(result.outbox).not.toBeNull();
      // A restarted projector ships what the crashed one left behind…
      const restarted = createProjector({
        pool,
        ch: ch.client,
        log: createEventStream(log),
        group: `${group}-restart`,
        maxWaitMs: 20,
      });
      await restarted.start();
      await restarted.stop();
      expect(byDay(await dailyFigures(ch.client, tenant))).toEqual([
        { day: '2026-11-01', total: 1, sent: 0, opened: 0, clicked: 0, bounced: 0, complained: 0, failed: 0 },
      ]);
      // …and shipping the same batch again (crash after the insert, before the outbox delete) changes nothing.
      await shipBatch(ch.client, result.outbox!.batchId, result.outbox!.rows);
      await shipBatch(ch.client, result.outbox!.batchId, result.outbox!.rows);
      expect(byDay(await dailyFigures(ch.client, tenant))[0]?.total).toBe(1);
      const left = await pool.query('SELECT count(*)::int AS n FROM analytics_outbox');
      expect(left.rows[0].n).toBe(0);
    });

    it('a ClickHouse insert that fails after the Postgres commit is retried, and figures stay exact', async () => {
      const tenant = `t-${suffix()}`;
      let failures = 1;
      // The real client, with its next insert failing once (as a dropped connection would).
      const flaky = new Proxy(ch.client, {
        get(target, prop, receiver) {
          if (prop === 'insert' && failures > 0) {
            return async () => {
              failures--;
              throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
            };
          }
          const value = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const flakyGroup = `${group}-flaky`;
      const flakyProjector = createProjector({
        pool,
        ch: flaky,
        log: createEventStream(log),
        group: flakyGroup,
        maxWaitMs: 20,
        retry: { initialMs: 10, maxMs: 50 },
      });
      // The live projector is stopped so the flaky one is the only writer of this tenant's figures.
      await projector.stop();
      try {
        await flakyProjector.start();
        await post(scenario(tenant));
        await waitUntil('flaky projector to catch up', async () => (await log.lag(flakyGroup)) === 0);
        expect(failures).toBe(0);
        expect(byDay(await dailyFigures(ch.client, tenant))).toEqual(EXPECTED_DAYS);
      } finally {
        await flakyProjector.stop();
        await projector.start();
      }
    });

    it('rebuild replays the whole log into projections identical to the live ones', async () => {
      const snapshot = async (t: string) => ({
        rows: await visibleRows(pool, t),
        figures: await dailyFigures(ch.client, t),
        projects: await projectFigures(ch.client, t),
        suppressions: await suppressionsOf(pool, t),
      });
      await caughtUp();
      const tenants = (
        await pool.query('SELECT DISTINCT tenant_id FROM email_logs WHERE tenant_id != $1 ORDER BY 1', [
          crashTenant,
        ])
      ).rows.map((r) => r.tenant_id as string);
      const live = new Map<string, unknown>();
      for (const t of tenants) live.set(t, await snapshot(t));
      await projector.stop();
      const { events } = await rebuildProjections({
        pool,
        ch: ch.client,
        log: createEventStream(log),
        group: `${group}-rebuild-${suffix()}`,
      });
      expect(events).toBeGreaterThan(0);
      let compared = 0;
      for (const t of tenants) {
        expect(await snapshot(t)).toEqual(live.get(t));
        compared++;
      }
      expect(compared).toBeGreaterThanOrEqual(5);
      expect(await visibleRows(pool, crashTenant)).toEqual([]);
      await projector.start();
    });
  });
}
