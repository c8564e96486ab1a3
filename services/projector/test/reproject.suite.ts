import { createEventStream, type EventLog } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/services.js';
import { createProjector, type Projector, reprojectAnalytics } from '../src/index.js';
import { openProjectionStores, type ProjectionStores, suffix } from './pipeline.suite.js';

// `npm run reproject -- analytics` (SPEC §26) on chDB, run once per event-log adapter (one file
// each: chDB is per process), with the live projector running and events posted all through the
// replay: figures of the untouched tenant are equal before and after the swap, and every event of
// the busy tenant counts exactly once.

const TOKEN = 'reproject-test-token';
type RawEvent = {
  id: string;
  type: string;
  tenantId: string;
  emailId: string;
  occurredAt: string;
  data?: object;
};

const at = (minute: number) => new Date(Date.UTC(2026, 10, 1, 8, 0) + minute * 60_000).toISOString();

/** One email's events: queued, then delivered (with a complaint now and then) or bounced. */
function email(tenantId: string, emailId: string, i: number, domain = 'example.com'): RawEvent[] {
  const e = (id: string, type: string, minute: number, data?: object): RawEvent => ({
    id: `${emailId}-${id}`,
    type,
    tenantId,
    emailId,
    occurredAt: at(minute),
    ...(data ? { data } : {}),
  });
  const tags = ['a', 'b', 'c'].slice(0, i % 4);
  const out = [
    e('q', 'email.queued', i, {
      toEmail: `r${i}@${domain}`,
      subject: 'S',
      tags,
      ...(i % 3 === 0 ? { templateId: 'tpl-x' } : {}),
    }),
    e('s', 'email.sent', i + 1, { provider: 'ses', messageId: `m-${emailId}` }),
  ];
  if (i % 5 === 0) out.push(e('b', 'email.bounced', i + 2, { bounceType: 'hard' }));
  else out.push(e('d', 'email.delivered', i + 2));
  if (i % 7 === 1) out.push(e('k', 'email.complained', i + 3));
  return out;
}

/** The independent count: what the posted events say, each event id once. */
function countOf(events: readonly RawEvent[]) {
  const byEmail = new Map<string, Set<string>>();
  const seen = new Set<string>();
  for (const e of events) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    byEmail.set(e.emailId, (byEmail.get(e.emailId) ?? new Set()).add(e.type));
  }
  const types = [...byEmail.values()];
  const n = (t: string) => types.filter((s) => s.has(t)).length;
  return {
    total: n('email.queued'),
    delivered: n('email.delivered'),
    bounced: n('email.bounced'),
    complained: n('email.complained'),
  };
}

export interface ReprojectSuiteOptions {
  /** Records per replay batch. Default 50: small, so the replay takes many batches. */
  replayBatchSize?: number;
  /** Pause between two posts of the live appender, ms. Default 15. */
  appendPauseMs?: number;
}

export function runReprojectSuite(
  name: string,
  makeLog: (pool: pg.Pool) => Promise<EventLog>,
  opts: ReprojectSuiteOptions = {},
) {
  describe(`npm run reproject -- analytics on the ${name} log`, () => {
    let stores: ProjectionStores;
    let pool: pg.Pool;
    let log: EventLog;
    let ingest: FastifyInstance;
    let projector: Projector;

    const post = async (events: RawEvent[]) => {
      const res = await ingest.inject({
        method: 'POST',
        url: '/events',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { events },
      });
      expect(res.statusCode, res.body).toBe(202);
    };
    const caughtUp = () =>
      waitFor(
        async () => {
          const outbox = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM analytics_outbox');
          return (await projector.lag()) === 0 && outbox.rows[0]?.n === 0 ? true : undefined;
        },
        { description: 'projector caught up and outbox shipped', timeoutMs: 60_000 },
      );
    const query = async <T>(sql: string, params: Record<string, unknown> = {}) =>
      (await stores.ch.client.query({ query: sql, query_params: params, format: 'JSONEachRow' })).json<T>();
    /** Every dimension of the serving view, summed: the figures readers get. */
    const figures = (tenant: string) =>
      query(
        `SELECT bucket, template_id, mailbox_provider, tags, bounce_category, client_family,
              sum(total) AS total, sum(sent) AS sent, sum(delivered) AS delivered,
              sum(bounced) AS bounced, sum(complained) AS complained
         FROM email_dims WHERE tenant_id = {t:String}
        GROUP BY ALL HAVING total != 0 OR sent != 0 OR delivered != 0 OR bounced != 0 OR complained != 0
        ORDER BY ALL`,
        { t: tenant },
      );
    const totals = async (tenant: string) => {
      const [row] = await query<Record<string, string>>(
        `SELECT sum(total) AS total, sum(delivered) AS delivered, sum(bounced) AS bounced,
              sum(complained) AS complained FROM email_dims WHERE tenant_id = {t:String}`,
        { t: tenant },
      );
      return Object.fromEntries(Object.entries(row ?? {}).map(([k, v]) => [k, Number(v)]));
    };

    beforeAll(async () => {
      stores = await openProjectionStores('reproject', 6);
      pool = stores.pool;
      log = await makeLog(pool);
      ingest = await createIngestApp({ log: createEventStream(log), ingestToken: TOKEN });
      projector = createProjector({
        pool,
        ch: stores.ch.client,
        log: createEventStream(log),
        group: `projector-${suffix()}`,
        maxBatchSize: 100,
        maxWaitMs: 20,
      });
      await projector.start();
    });
    afterAll(async () => {
      await projector?.stop();
      await ingest?.close();
      await log?.close();
      await stores?.close();
    });

    it('fills email_dims_v2 while v1 serves, swaps, and loses or doubles no event posted meanwhile', async () => {
      const quiet = `t-quiet-${suffix()}`;
      const busy = `t-busy-${suffix()}`;
      const quietEvents = Array.from({ length: 300 }, (_, i) => email(quiet, `q${i}`, i)).flat();
      const busyEvents = Array.from({ length: 300 }, (_, i) => email(busy, `h${i}`, i, 'gmail.com')).flat();
      for (let i = 0; i < quietEvents.length; i += 200) await post(quietEvents.slice(i, i + 200));
      for (let i = 0; i < busyEvents.length; i += 200) await post(busyEvents.slice(i, i + 200));
      await caughtUp();
      const before = await figures(quiet);
      expect(before.length).toBeGreaterThan(10);
      expect(await totals(busy)).toEqual(countOf(busyEvents));

      // Live ingest all through the reprojection: new emails, complaints on old ones, and re-posts of
      // events already in the log (duplicates the fold must drop).
      let live = true;
      let round = 0;
      let afterSwap = 3;
      const appender = (async () => {
        while (live || afterSwap-- > 0) {
          const batch = [
            ...email(busy, `n${round}`, 1000 + round),
            // a complaint on a delivered email of the history
            ...(round < 300 && round % 5 !== 0
              ? [
                  {
                    id: `h${round}-k2`,
                    type: 'email.complained',
                    tenantId: busy,
                    emailId: `h${round}`,
                    occurredAt: at(2000),
                  },
                ]
              : []),
            ...busyEvents.slice(round * 3, round * 3 + 3),
          ];
          busyEvents.push(...batch);
          await post(batch);
          round++;
          await new Promise((r) => setTimeout(r, opts.appendPauseMs ?? 15));
        }
      })();
      const progress: number[] = [];
      const result = await reprojectAnalytics({
        pool,
        ch: stores.ch.client,
        log: createEventStream(log),
        group: `reproject-${suffix()}`,
        maxBatchSize: opts.replayBatchSize ?? 50,
        addColumns: ['tag_count UInt8 DEFAULT length(tags)'],
        // A new classifier (the live projector has none: every email is `other` in its states).
        mailboxes: { size: 0, prepare: async () => (to) => (to?.endsWith('@gmail.com') ? 'gmail' : 'other') },
        onProgress: (p) => progress.push(p.done),
      });
      live = false;
      await appender;
      await caughtUp();

      expect(result).toMatchObject({ from: 'email_dims_v1', to: 'email_dims_v2' });
      expect(progress.length).toBeGreaterThan(5);
      // The hand-over was exercised on both sides: events counted by the replay, others by the live
      // projector writing the new version after the swap.
      const sides = await pool.query<{ before: number; after: number }>(
        `SELECT count(*) FILTER (WHERE claim_seq <= $2)::int AS before, count(*) FILTER (WHERE claim_seq > $2)::int AS after
         FROM email_events WHERE tenant_id = $1`,
        [busy, result.cut],
      );
      expect(sides.rows[0]?.before).toBeGreaterThan(0);
      expect(sides.rows[0]?.after).toBeGreaterThan(0);
      expect(round).toBeGreaterThan(3);

      // The readers' view now reads v2; the quiet tenant's figures are the same, every busy event once.
      const [view] = await query<{ q: string }>(
        "SELECT create_table_query AS q FROM system.tables WHERE name = 'email_dims' AND database = currentDatabase()",
      );
      expect(view?.q).toContain('email_dims_v2');
      expect(await figures(quiet)).toEqual(before);
      expect(await totals(busy)).toEqual(countOf(busyEvents));
      // The new classification holds for the busy tenant's every email, also those the live fold
      // touched after the swap (its states got the replay's classification at the hand-over).
      expect(result.rewritten).toBeGreaterThan(0);
      const byProvider = await query<{ p: string; n: string; k: string }>(
        `SELECT mailbox_provider AS p, sum(total) AS n, sum(complained) AS k FROM email_dims
        WHERE tenant_id = {t:String} GROUP BY p HAVING n != 0 OR k != 0 ORDER BY p`,
        { t: busy },
      );
      const history = countOf(busyEvents.filter((e) => e.emailId.startsWith('h')));
      const fresh = countOf(busyEvents.filter((e) => e.emailId.startsWith('n')));
      expect(byProvider.map((r) => [r.p, Number(r.n), Number(r.k)])).toEqual([
        ['gmail', history.total, history.complained],
        ['other', fresh.total, fresh.complained],
      ]);
      const targets = await pool.query('SELECT tables FROM analytics_dims_targets');
      expect(targets.rows).toEqual([{ tables: ['email_dims_v2'] }]);

      // v2's tag companion (ClickHouse migration 0033) was made and filled with it, the throwaway
      // column too, and is served with it: each tag's figures there are the version's own.
      const [tagView] = await query<{ q: string }>(
        "SELECT create_table_query AS q FROM system.tables WHERE name = 'email_dim_tags' AND database = currentDatabase()",
      );
      expect(tagView?.q).toContain('email_dims_v2_tags');
      for (const tenant of [quiet, busy]) {
        const perTag = (from: string) =>
          query<Record<string, string | number>>(
            `SELECT tag, tag_count, sum(total) AS n, sum(complained) AS k FROM ${from}
              WHERE tenant_id = {t:String} GROUP BY tag, tag_count HAVING n != 0 OR k != 0 ORDER BY ALL`,
            { t: tenant },
          );
        const companion = await perTag('email_dim_tags');
        expect(companion.length, tenant).toBeGreaterThan(0);
        expect(companion).toEqual(await perTag('email_dims ARRAY JOIN tags AS tag'));
      }

      // The throwaway dimension, filled for every past email: emails by number of tags.
      const byTagCount = await query<{ tag_count: number; n: string }>(
        `SELECT tag_count, sum(total) AS n FROM email_dims WHERE tenant_id = {t:String}
        GROUP BY tag_count ORDER BY tag_count`,
        { t: quiet },
      );
      expect(byTagCount.map((r) => [Number(r.tag_count), Number(r.n)])).toEqual([
        [0, 75],
        [1, 75],
        [2, 75],
        [3, 75],
      ]);
    }, 300_000);
  });
}
