import type { DeliveryEvent } from '@tern/contracts';
import { foldBatch, groupByEmail } from '@tern/domain';
import { createEventStream, type EventLog } from '@tern/event-log';
import { withTransaction } from '@tern/kernel';
import { eventStream, eventsPage } from '@tern/read-models';
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProjector } from '../src/index.js';
import { openProjectionStores, type ProjectionStores, suffix } from './pipeline.suite.js';

/**
 * The ordering promise of the event stream (SPEC §25, issue 42): from any cursor, every event after
 * it exactly once, in an order that never changes, while appenders commit concurrently. Readers
 * page with small limits DURING the appends; each reader's whole sequence must equal the final
 * order (read once everything is in): no gap, no duplicate, no reordering.
 */

/** Emails per append, per appender; two tenants share the stream. */
export const planArb = fc.record({
  appenders: fc.array(fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 5 }), {
    minLength: 2,
    maxLength: 4,
  }),
  limits: fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 2, maxLength: 4 }),
});
export type Plan = { appenders: number[][]; limits: number[] };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The events of one append: per email its `email.queued` and `email.sent`. */
export function eventsOf(tenantId: string, tag: string, emails: number): DeliveryEvent[] {
  const out: DeliveryEvent[] = [];
  for (let i = 0; i < emails; i++) {
    const emailId = `em-${tag}-${i}`;
    const at = new Date().toISOString();
    out.push(
      {
        id: `${emailId}:q`,
        type: 'email.queued',
        tenantId,
        emailId,
        occurredAt: at,
        data: { toEmail: `${emailId}@example.com`, subject: 'Hi', tags: ['t'] },
      } as DeliveryEvent,
      {
        id: `${emailId}:s`,
        type: 'email.sent',
        tenantId,
        emailId,
        occurredAt: at,
        data: { provider: 'sandbox', messageId: `<${emailId}@x>` },
      } as DeliveryEvent,
    );
  }
  return out;
}

/** A page reader: events after `after` (null: from the start), at most `limit`; `next` resumes it. */
export type ReadPage = (
  tenantId: string,
  after: string | null,
  limit: number,
) => Promise<{ ids: string[]; next: string | null }>;

/**
 * Tern's reader: `eventsPage` of packages/read-models, or as `GET /events` calls it, through its
 * page cache (`readPage`: `createEventPageCache().page`).
 */
export const ternReader =
  (pool: pg.Pool, readPage: typeof eventsPage = eventsPage): ReadPage =>
  async (tenantId, after, limit) => {
    const page = await readPage(pool, {
      tenantId,
      ...(after === null ? {} : { after }),
      limit,
      cutoff: new Date(0),
    });
    if (page.expired) throw new Error('expired');
    return { ids: (JSON.parse(page.json) as { id: string }[]).map((e) => e.id), next: page.next };
  };

/**
 * Runs one plan: every appender appends its events (`append`, concurrently with the others) to
 * tenant A or B by turns; one reader per limit pages tenant A or B until it has every event of its
 * tenant (or, once every append is in — `settled`: projected — until a page comes back short);
 * then each reader's sequence is compared with the final order. Answers the first violation, or null.
 */
export async function runPlan(
  plan: Plan,
  append: (events: DeliveryEvent[]) => Promise<void>,
  read: ReadPage,
  settled: () => Promise<boolean> = async () => true,
  timeoutMs = 60_000,
): Promise<string | null> {
  const run = suffix();
  const tenants = [`ta-${run}`, `tb-${run}`];
  const expected = new Map<string, number>(tenants.map((t) => [t, 0]));
  const batches: DeliveryEvent[][] = [];
  plan.appenders.forEach((sizes, a) => {
    sizes.forEach((emails, i) => {
      const tenant = tenants[(a + i) % 2]!;
      const events = eventsOf(tenant, `${run}-${a}-${i}`, emails);
      expected.set(tenant, (expected.get(tenant) ?? 0) + events.length);
      batches.push(events);
    });
  });
  let appending = true;
  const appenders = plan.appenders.map(async (sizes, a) => {
    let offset = plan.appenders.slice(0, a).reduce((n, s) => n + s.length, 0);
    for (let i = 0; i < sizes.length; i++) {
      await append(batches[offset++]!);
      await sleep(Math.floor(Math.random() * 5));
    }
  });
  const deadline = Date.now() + timeoutMs;
  const readers = plan.limits.map(async (limit, r) => {
    const tenant = tenants[r % 2]!;
    const seen: string[] = [];
    let after: string | null = null;
    while (seen.length < (expected.get(tenant) ?? 0)) {
      if (Date.now() > deadline) break;
      // Everything is in before this read: a short page now means this reader has all it will get.
      const allIn = !appending && (await settled());
      const page = await read(tenant, after, limit);
      seen.push(...page.ids);
      after = page.next ?? after;
      if (page.ids.length < limit) {
        if (allIn) break;
        await sleep(3);
      }
    }
    return { tenant, limit, seen };
  });
  await Promise.all(appenders);
  appending = false;
  const results = await Promise.all(readers);
  for (const tenant of tenants) {
    const final: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await read(tenant, after, 1000);
      final.push(...page.ids);
      after = page.next ?? after;
      if (page.ids.length === 0) break;
    }
    const appended = batches.flat().filter((e) => e.tenantId === tenant);
    if (final.length !== appended.length || new Set(final).size !== final.length)
      return `final order of ${tenant} has ${final.length} events (${new Set(final).size} distinct), ${appended.length} appended`;
    for (const r of results.filter((x) => x.tenant === tenant)) {
      const same = r.seen.length === final.length && r.seen.every((id, i) => id === final[i]);
      if (!same) {
        const at = r.seen.findIndex((id, i) => id !== final[i]);
        return `reader (limit ${r.limit}) of ${tenant} saw ${r.seen.length} events, final ${final.length}; first difference at ${at}: ${r.seen[at]} vs ${final[at]}`;
      }
    }
  }
  return null;
}

/**
 * An "append" that is one projector transaction writing `events` through the stream model, held
 * open a few random milliseconds before it commits (widening the window in which a later batch
 * could commit first).
 */
export const projectorTransaction =
  (pool: pg.Pool) =>
  async (events: DeliveryEvent[]): Promise<void> => {
    const groups = groupByEmail(events);
    await withTransaction(pool, async (client) => {
      await eventStream.apply?.(client, { applied: events, folded: foldBatch(groups, () => null) });
      await client.query('SELECT pg_sleep($1)', [Math.random() * 0.02]);
    });
  };

/**
 * The full pipeline on `log`: appends go through the typed stream to the log; two projectors fold
 * concurrently (the same group on Kafka, partitions split between them; two groups on the
 * Postgres-table log, as a rebuild next to the live projector: each event is claimed once).
 */
export async function openPipeline(
  pool: pg.Pool,
  ch: Parameters<typeof createProjector>[0]['ch'],
  log: EventLog,
  sameGroup: boolean,
) {
  const stream = createEventStream(log);
  const group = `stream-order-${suffix()}`;
  const projectors = [0, 1].map((i) =>
    createProjector({
      pool,
      ch,
      log: stream,
      group: sameGroup ? group : `${group}-${i}`,
      maxWaitMs: 10,
      maxBatchSize: 7,
    }),
  );
  for (const p of projectors) await p.start();
  return {
    append: (events: DeliveryEvent[]) => stream.append(events),
    /** Every appended event is folded (both projectors' groups have no lag). */
    async settled() {
      for (const p of projectors) if ((await p.lag()) !== 0) return false;
      return true;
    },
    async stop() {
      for (const p of projectors) await p.stop();
    },
  };
}

/**
 * The ordering promise on one log (`openLog`, on the suite's own stores `storesName`) with the
 * full pipeline of `openPipeline`: readers paging during concurrent appends see every event once,
 * in the final order (fast-check plans).
 */
export function runStreamOrderSuite(
  name: string,
  opts: {
    storesName: string;
    openLog: (pool: pg.Pool) => Promise<EventLog>;
    sameGroup: boolean;
    setupTimeoutMs?: number;
  },
) {
  describe(`event stream order on ${name}`, () => {
    let stores: ProjectionStores;
    let pipeline: Awaited<ReturnType<typeof openPipeline>>;
    let close: () => Promise<void>;
    beforeAll(async () => {
      stores = await openProjectionStores(opts.storesName, 10);
      const log = await opts.openLog(stores.pool);
      pipeline = await openPipeline(stores.pool, stores.ch.client, log, opts.sameGroup);
      close = () => log.close();
    }, opts.setupTimeoutMs);
    afterAll(async () => {
      await pipeline?.stop();
      await close?.();
      await stores?.close();
    });

    it('readers paging during concurrent appends see every event once, in the final order (fast-check)', async () => {
      await fc.assert(
        fc.asyncProperty(planArb, async (plan) => {
          expect(await runPlan(plan, pipeline.append, ternReader(stores.pool), pipeline.settled)).toBeNull();
        }),
        { numRuns: 6 },
      );
    }, 300_000);
  });
}
