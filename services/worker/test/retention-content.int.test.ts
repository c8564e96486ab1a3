// The retention job against content the api's own features create (issue 25: these cases lived
// in the api's tests, which then needed the worker): attachments of sent mail, the log counters
// behind meta.total, and the per-project ClickHouse rollup. Each part sets its state up as a
// tenant would, through the api's routes and its test harness.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logCounterDrift } from '../../../test/support/log-counter-drift.js';
import { waitFor } from '../../../test/support/services.js';
import { eventsFor, expectedLog, type GeneratedEmail, generateEmails } from '../../api/test/datasets.js';
import {
  openSendingWorld,
  type SendingWorld,
  waitForStatus,
  wallClock,
} from '../../api/test/sending-support.js';
import { prng } from '../../api/test/support.js';
import { createRetentionJob } from '../src/index.js';
import {
  bearer,
  createKey,
  DEFAULT_RETENTION_DAYS,
  dayStart,
  isoDay,
  jwtFor,
  NOW,
  openApp,
  project,
  type Stores,
  suffix,
  testTenants,
} from './support.js';

describe('attachments: once an email expires its attachments are deleted with it', () => {
  const T = `ret-attach-${suffix()}`;
  let world: SendingWorld;
  let key: string;
  const count = async (sql: string, params: unknown[] = []) =>
    Number((await world.stores.pool.query<{ n: string }>(sql, params)).rows[0]!.n);

  beforeAll(async () => {
    world = await openSendingWorld();
    key = (await createKey(world.app, jwtFor(wallClock, T), T, { scopes: ['email:send', 'email:read'] })).key;
    const res = await world.app.inject({
      method: 'POST',
      url: '/emails/send',
      headers: bearer(key),
      payload: {
        from: 'Acme <billing@acme.test>',
        to: 'ada@example.com',
        subject: 'Your invoice',
        text: 'Invoice attached.',
        attachments: [{ filename: 'invoice.pdf', content: Buffer.from('%PDF-1.4\n…').toString('base64') }],
      },
    });
    expect(res.statusCode, res.body).toBe(202);
    // The sandbox provider delivers it.
    await waitForStatus(world.app, key, res.json().id, 'DELIVERED', ['email.delivered']);
  }, 60_000);

  afterAll(async () => {
    await world?.close();
  });

  it('the retention job: once an email expires its attachments are deleted with it', async () => {
    // Every send of this world is final first (a send still due keeps its rows).
    await waitFor(
      async () =>
        (await count(
          `SELECT count(*) AS n FROM outgoing_emails WHERE state NOT IN ('done', 'cancelled')`,
        )) === 0,
      { timeoutMs: 30_000, description: 'every send final' },
    );
    expect(await count('SELECT count(*) AS n FROM email_attachments')).toBeGreaterThan(0);
    const job = createRetentionJob({
      pool: world.stores.pool,
      ch: world.stores.ch,
      now: () => new Date(Date.now() + 40 * 86_400_000),
      defaultRetentionDays: 30,
    });
    const result = await job.runOnce();
    expect(result.ran).toBe(true);
    expect(await count('SELECT count(*) AS n FROM email_attachments')).toBe(0);
  });
});

describe('the log counters (email_log_counts, email_log_hour_counts) and the retention job', () => {
  const { clock, A } = testTenants('ret-logc');
  let stores: Stores;
  let app: FastifyInstance;
  let emailsA: GeneratedEmail[];
  let keyA: string;

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock));
    const owner = jwtFor(clock, A);
    const newProject = async (name: string) => {
      const res = await app.inject({
        method: 'POST',
        url: '/projects',
        headers: bearer(owner),
        payload: { name },
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().id as string;
    };
    const projects = [await newProject('Marketing'), await newProject('Transactional'), null];
    // 104 days of emails, a third in each project and a third in none: some are past the cut-off.
    emailsA = generateEmails({
      now: NOW,
      spanDays: 104,
      templates: ['t1', 't2'],
      tenantId: A,
      count: 260,
      seed: 21,
    }).map((e, i) => ({ ...e, projectId: projects[i % 3] ?? null }));
    await project(stores, eventsFor(emailsA, 23));
    keyA = (await createKey(app, owner, A, { scopes: ['email:read'] })).key;
  });

  afterAll(async () => {
    await app?.close();
    await stores?.close();
  });

  const visible = () => expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS);

  /** Every page of the logs: the entries and meta.total. */
  async function walk(limit: number) {
    const byPage: unknown[] = [];
    for (let page = 1; ; page++) {
      const res = await app.inject({
        url: `/emails/logs?limit=${limit}&page=${page}`,
        headers: { 'x-api-key': keyA },
      });
      expect(res.statusCode, res.body).toBe(200);
      byPage.push(...res.json().data);
      if (page >= res.json().meta.totalPages) return { byPage, total: res.json().meta.total as number };
    }
  }

  const drift = () => logCounterDrift(stores.pool);

  it('the retention job deletes the counters of expired days with the rows', async () => {
    expect(await drift()).toEqual([]);
    const job = createRetentionJob({
      pool: stores.pool,
      ch: stores.ch,
      now: clock.now,
      defaultRetentionDays: DEFAULT_RETENTION_DAYS,
      batchSize: 50,
    });
    const result = await job.runOnce();
    expect(result.deletedLogs).toBeGreaterThan(0);
    expect(await drift()).toEqual([]);
    const { rows } = await stores.pool.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM email_log_counts WHERE day < '2026-03-17'",
    );
    expect(rows[0]?.n).toBe('0');
    // The API answers as before: the cut-off already hid those days.
    const { byPage, total } = await walk(100);
    expect(byPage).toEqual(visible());
    expect(total).toBe(visible().length);
  });
});

describe('retention of the per-project rollup (email_project_daily_v1)', () => {
  const { clock, A } = testTenants('ret-prj');
  let stores: Stores;
  let app: FastifyInstance;
  let owner: string;
  let p1: string;
  let emails: GeneratedEmail[];

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock));
    owner = jwtFor(clock, A);
    const res = await app.inject({
      method: 'POST',
      url: '/projects',
      headers: bearer(owner),
      payload: { name: 'Marketing' },
    });
    expect(res.statusCode, res.body).toBe(201);
    p1 = res.json().id;
    const random = prng(11);
    emails = generateEmails({
      tenantId: A,
      now: NOW,
      count: 300,
      seed: 5,
      spanDays: 40,
      templates: ['tpl-1', 'tpl-2', 'tpl-3'],
    }).map((e) => ({ ...e, projectId: random() < 0.5 ? p1 : null }));
    await project(stores, eventsFor(emails, 7));
  });

  afterAll(async () => {
    await app?.close();
    await stores?.close();
  });

  it('the retention job deletes expired project days and changes no visible figure', async () => {
    const cutoffDay = isoDay(dayStart(NOW, -DEFAULT_RETENTION_DAYS));
    const expiredDays = async () => {
      const r = await stores.ch.query({
        query: `SELECT count() AS n FROM email_project_daily_v1
                 WHERE tenant_id = {t:String} AND day < {d:Date}`,
        query_params: { t: A, d: cutoffDay },
        format: 'JSONEachRow',
      });
      return Number(((await r.json()) as { n: string | number }[])[0]?.n ?? 0);
    };
    // The dataset's edge emails before the cut-off day, put in a project so the rollup has expired rows.
    await project(
      stores,
      eventsFor(
        emails
          .filter((e) => e.id.startsWith('edge-90-prev'))
          .map((e) => ({ ...e, id: `${e.id}-p`, projectId: p1 })),
        8,
      ),
    );
    expect(await expiredDays()).toBeGreaterThan(0);
    const summary = async () =>
      (await app.inject({ url: `/analytics/summary?days=90&projectId=${p1}`, headers: bearer(owner) })).json()
        .totals;
    const before = await summary();
    expect(before.total).toBeGreaterThan(0);
    const result = await createRetentionJob({
      pool: stores.pool,
      ch: stores.ch,
      now: clock.now,
      defaultRetentionDays: DEFAULT_RETENTION_DAYS,
    }).runOnce();
    expect(result.ran).toBe(true);
    expect(await expiredDays()).toBe(0);
    expect(await summary()).toEqual(before);
  });
});
