import type { DeliveryEvent } from '@tern/contracts';
import { type EmailState, emailKey, foldBatch, groupByEmail } from '@tern/domain';
import { type EventBatch, type EventLogConsumer, hasReached } from '@tern/event-log';
import {
  claimedEvents,
  createDimsVersion,
  DIMS_VERSION,
  lastClaim,
  lockDimTargets,
  serveDimsTable,
  servingDimsTable,
  setDimTargets,
  shipDimRows,
  writeBackDims,
} from '@tern/read-models';
import { notifyReadModel } from '@tern/stores';
import type { ReplayOptions } from './rebuild.js';

export interface ReprojectProgress {
  /** Log records read so far. */
  done: number;
  /** Log records at the start plus those appended since (grows under live ingest). */
  total: number;
  perSecond: number;
  /** Estimated time left, ms; null before the first batch. */
  etaMs: number | null;
}

export interface ReprojectOptions extends ReplayOptions {
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
  /** The last timeline claim before the swap: the replay counted every claim up to it, the live projector the later ones. */
  cut: number;
  /** Stored email states whose classification the replay changed. */
  rewritten: number;
  events: number;
  counted: number;
  durationMs: number;
}

/**
 * `npm run reproject -- analytics` (SPEC §26, docs/analytics.md "Reprojection"): fills the next
 * version of the sliceable rollup (`email_dims_v<n+1>`) from the whole log with today's fold while
 * `email_dims` keeps serving version n and the projectors keep running, then swaps. The replay
 * folds, in memory, exactly the events the timeline has claimed (each once: the claim is the live
 * fold's dedup); an event read before the live projector claimed it waits in `pending`.
 *
 * The hand-over, in ONE Postgres transaction holding `analytics_dims_targets` ACCESS EXCLUSIVE
 * (the projectors' next batches wait on it): the replay reads the log to its end and folds the
 * pending events now claimed, so it holds every event claimed by then and no other; the replay's
 * classification is written into the stored email states (`writeBackDims`), so the live fold's
 * next deltas start from the rows version n+1 holds; the projectors are told to write version n+1;
 * `email_dims` is pointed at it; commit. Every event is thus in version n+1 exactly once: claimed
 * before the lock → folded by the replay; after → by a live batch writing version n+1.
 * Version n stays, unread and no longer written, for a manual DROP.
 */
export async function reprojectAnalytics(opts: ReprojectOptions): Promise<ReprojectResult> {
  const started = performance.now();
  const { pool, ch } = opts;
  const from = await servingDimsTable(pool);
  const version = Number(DIMS_VERSION.exec(from)?.[1] ?? Number.NaN);
  if (!Number.isInteger(version)) throw new Error(`the serving rollup ${from} is not email_dims_v<n>`);
  const to = `email_dims_v${version + 1}`;
  // A run stopped half-way may have left the projectors told otherwise: version n only.
  await setDimTargets(pool, [from]);
  await createDimsVersion(ch, from, to, opts.addColumns);

  const states = new Map<string, EmailState>();
  const counted = new Set<string>();
  const pending = new Map<string, DeliveryEvent>();
  let done = 0;
  let batchNo = 0;
  let total = await opts.log.lag(opts.group);

  /** Folds the claimed ones of `candidates` not counted yet; the others wait in `pending`. */
  async function take(candidates: readonly DeliveryEvent[]): Promise<void> {
    const fresh = candidates.filter((e) => !counted.has(emailKey(e.tenantId, e.id)));
    if (fresh.length === 0) return;
    const claimed = await claimedEvents(pool, fresh);
    const applied: DeliveryEvent[] = [];
    for (const e of fresh) {
      const k = emailKey(e.tenantId, e.id);
      if (!claimed.has(k)) pending.set(k, e);
      else if (!counted.has(k)) {
        counted.add(k);
        pending.delete(k);
        applied.push(e);
      }
    }
    if (applied.length === 0) return;
    const mailboxOf = await opts.mailboxes?.prepare(applied);
    const folded = foldBatch(
      groupByEmail(applied),
      (tenantId, emailId) => states.get(emailKey(tenantId, emailId)) ?? null,
      mailboxOf,
    );
    for (const email of folded.emails) states.set(emailKey(email.tenantId, email.emailId), email.after);
    await shipDimRows(ch, to, `reproject:${to}:${batchNo++}`, folded.dimDeltas);
  }

  /** The last offset handled on each partition: where the replay stands. */
  const positions = new Map<number, string>();

  async function handle({
    events,
    deadLetters,
    domainEvents,
    inboundEvents,
    positions: at,
  }: EventBatch): Promise<void> {
    done += events.length + deadLetters.length + domainEvents.length + inboundEvents.length;
    // The pending first: the live projector has claimed most of them by now.
    await take([...pending.values(), ...events]);
    for (const [partition, offset] of at ?? []) positions.set(partition, offset);
    const seconds = (performance.now() - started) / 1000;
    const perSecond = done / Math.max(seconds, 0.001);
    total = Math.max(total, done);
    opts.onProgress?.({ done, total, perSecond, etaMs: ((total - done) / perSecond) * 1000 });
  }

  const deadline = Date.now() + (opts.timeoutMs ?? 60 * 60_000);
  // Reads to the log's end as of the call (a snapshot of each partition's end), not to a zero lag:
  // under steady ingest the lag of a reader slower per batch than the appenders is never 0 when
  // looked at, while a fixed end is reached (docs/analytics.md, "The hand-over").
  const caughtUp = async () => {
    const spans = await opts.log.spans();
    for (;;) {
      if (hasReached(positions, spans)) return;
      const lag = await opts.log.lag(opts.group);
      total = Math.max(total, done + lag);
      if (Date.now() > deadline) throw new Error(`reprojection did not catch up within ${opts.timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  let consumer: EventLogConsumer | null = await opts.log.consume({
    group: opts.group,
    fromBeginning: true,
    maxBatchSize: opts.maxBatchSize ?? 5000,
    maxWaitMs: 50,
    handle,
  });
  try {
    await caughtUp();
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await lockDimTargets(client);
      // Projectors hold now; what they claimed is all committed, and appended before this end
      // (snapshotted by caughtUp). Read the log to it (events appended meanwhile are unclaimed:
      // pending, for the live fold) and fold what is claimed.
      await caughtUp();
      await consumer.stop();
      consumer = null;
      await take([...pending.values()]);
      const cut = await lastClaim(client);
      const rewritten = await writeBackDims(client, states.values());
      await setDimTargets(client, [to]);
      await serveDimsTable(ch, to);
      await client.query('COMMIT');
      await notifyReadModel(pool, { kind: 'reset' });
      return {
        from,
        to,
        cut,
        rewritten,
        events: done,
        counted: counted.size,
        durationMs: performance.now() - started,
      };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  } finally {
    await consumer?.stop();
  }
}
