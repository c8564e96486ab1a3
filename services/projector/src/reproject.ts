import type { ClickHouseClient } from '@clickhouse/client';
import { type EmailState, emailKey, foldBatch, groupByEmail } from '@tern/domain';
import type { EventBatch, EventStream } from '@tern/event-log';
import {
  claimedByCut,
  createDimsVersion,
  DIMS_VERSION,
  serveDimsTable,
  servingDimsTable,
  setDimTargets,
  shipDimRows,
} from '@tern/read-models';
import { notifyReadModel } from '@tern/stores';
import type pg from 'pg';
import type { MailboxResolver } from './mailbox-resolver.js';

export interface ReprojectProgress {
  /** Log records read so far. */
  done: number;
  /** Log records at the start plus those appended since (grows under live ingest). */
  total: number;
  perSecond: number;
  /** Estimated time left, ms; null before the first batch. */
  etaMs: number | null;
}

export interface ReprojectOptions {
  pool: pg.Pool;
  ch: ClickHouseClient;
  log: EventStream;
  /** The replay's consumer group: new, so it starts at the first record of the log. */
  group: string;
  maxBatchSize?: number;
  /** Give up when the replay has not caught up after this long. */
  timeoutMs?: number;
  mailboxes?: MailboxResolver;
  onProgress?: (p: ReprojectProgress) => void;
  /**
   * Column definitions the new version adds to the serving one's (ClickHouse DDL, e.g.
   * `x String DEFAULT …`): a dimension computed from the columns every delta carries.
   */
  addColumns?: readonly string[];
}

export interface ReprojectResult {
  from: string;
  to: string;
  /** The last timeline claim the replay counted; later ones reached the new version from the live projector. */
  cut: number;
  events: number;
  counted: number;
  durationMs: number;
}

/**
 * `npm run reproject -- analytics` (SPEC §26, docs/analytics.md "Reprojection"): fills the next
 * version of the sliceable rollup (`email_dims_v<n+1>`) from the whole log with today's fold while
 * `email_dims` keeps serving version n, then swaps the view. The hand-over is exact:
 *
 * 1. the live projector is told to write both versions (`setDimTargets`), which returns the cut: the
 *    last timeline claim made by a batch that wrote version n only;
 * 2. the replay folds, in memory, exactly the log's events claimed at or before the cut (each
 *    once: the timeline's claim is the dedup the live fold used), into version n+1;
 * 3. once it has read the log to its end, the view is replaced (one metadata operation) and the
 *    live projector writes version n+1 only. Version n stays, unread, for a manual DROP.
 *
 * Every event is thus in version n+1 exactly once: folded by the replay (claimed ≤ cut) or shipped
 * by the live projector (claimed > cut, its batch wrote both versions).
 */
export async function reprojectAnalytics(opts: ReprojectOptions): Promise<ReprojectResult> {
  const started = performance.now();
  const { pool, ch } = opts;
  const from = await servingDimsTable(pool);
  const version = Number(DIMS_VERSION.exec(from)?.[1] ?? Number.NaN);
  if (!Number.isInteger(version)) throw new Error(`the serving rollup ${from} is not email_dims_v<n>`);
  const to = `email_dims_v${version + 1}`;

  // A run that stopped half-way left the live projector writing `to` too: stop that, then start over.
  await setDimTargets(pool, [from]);
  await createDimsVersion(ch, from, to, opts.addColumns);
  const cut = await setDimTargets(pool, [from, to]);

  const states = new Map<string, EmailState>();
  const counted = new Set<string>();
  let done = 0;
  let batchNo = 0;
  const initialLag = await opts.log.lag(opts.group);
  let total = initialLag;

  async function handle({ events, deadLetters, domainEvents, inboundEvents }: EventBatch): Promise<void> {
    done += events.length + deadLetters.length + domainEvents.length + inboundEvents.length;
    const fresh = events.filter((e) => !counted.has(emailKey(e.tenantId, e.id)));
    if (fresh.length > 0) {
      // Only what the live fold had claimed by the cut; a dead-lettered or later event is not in it.
      const keep = await claimedByCut(pool, fresh, cut);
      const applied = fresh.filter((e) => {
        const k = emailKey(e.tenantId, e.id);
        if (!keep.has(k) || counted.has(k)) return false;
        counted.add(k);
        return true;
      });
      if (applied.length > 0) {
        const mailboxOf = await opts.mailboxes?.prepare(applied);
        const folded = foldBatch(
          groupByEmail(applied),
          (tenantId, emailId) => states.get(emailKey(tenantId, emailId)) ?? null,
          mailboxOf,
        );
        for (const email of folded.emails) states.set(emailKey(email.tenantId, email.emailId), email.after);
        await shipDimRows(ch, to, `reproject:${to}:${batchNo++}`, folded.dimDeltas);
      }
    }
    const seconds = (performance.now() - started) / 1000;
    const perSecond = done / Math.max(seconds, 0.001);
    total = Math.max(total, done);
    opts.onProgress?.({ done, total, perSecond, etaMs: ((total - done) / perSecond) * 1000 });
  }

  const consumer = await opts.log.consume({
    group: opts.group,
    fromBeginning: true,
    maxBatchSize: opts.maxBatchSize ?? 5000,
    maxWaitMs: 50,
    handle,
  });
  try {
    const deadline = Date.now() + (opts.timeoutMs ?? 60 * 60_000);
    // Every event claimed by the cut was in the log before the cut was taken: reading the log to an
    // end seen after it is reading all of them.
    for (;;) {
      const lag = await opts.log.lag(opts.group);
      total = Math.max(total, done + lag);
      if (lag === 0) break;
      if (Date.now() > deadline) throw new Error(`reprojection did not catch up within ${opts.timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await consumer.stop();
  }

  // The swap: readers resolve `email_dims` per query, so each reads one version whole.
  await serveDimsTable(ch, to);
  await setDimTargets(pool, [to]);
  await notifyReadModel(pool, { kind: 'reset' });
  return { from, to, cut, events: done, counted: counted.size, durationMs: performance.now() - started };
}
