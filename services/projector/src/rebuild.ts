import type { ClickHouseClient } from '@clickhouse/client';
import type { EventStream } from '@tern/event-log';
import type { Logger } from '@tern/kernel';
import { REBUILT_TABLES, truncateRollups } from '@tern/read-models';
import { notifyReadModel } from '@tern/stores';
import type pg from 'pg';
import type { MailboxResolver } from './mailbox-resolver.js';
import { type BatchStats, createProjector } from './projector.js';

/** What a replay of the whole log takes (a rebuild, a reprojection). */
export interface ReplayOptions {
  pool: pg.Pool;
  ch: ClickHouseClient;
  log: EventStream;
  /** The replay's consumer group: new, so it starts at the first record of the log. */
  group: string;
  maxBatchSize?: number;
  /** Give up when the replay has not caught up after this long. */
  timeoutMs?: number;
  /** The recipients' mailbox providers (SPEC §26). */
  mailboxes?: MailboxResolver;
}

export interface RebuildOptions extends ReplayOptions {
  logger?: Logger;
  onBatch?: (stats: BatchStats) => void;
}

/**
 * Replays the whole log into fresh projections: empties the read models, then folds every
 * record again under a new consumer group until it has caught up with the end of the log.
 * Projectors must be stopped meanwhile (a batch shipped by a live projector across the reset
 * would land in the new ClickHouse figures); started again afterwards, they resume from their
 * own group's position and every event they see again is a known duplicate.
 */
export async function rebuildProjections(
  opts: RebuildOptions,
): Promise<{ events: number; durationMs: number }> {
  const started = performance.now();
  // Every read model replayed from the log (packages/read-models registry). Suppressions stay:
  // manual entries are not in the log, and the replay adds the automatic ones again only where
  // they are missing (ON CONFLICT DO NOTHING).
  await opts.pool.query(`TRUNCATE ${REBUILT_TABLES.join(', ')}`);
  await truncateRollups(opts.ch);
  // Running api processes forget every answer they memoised (packages/stores read-model-feed).
  await notifyReadModel(opts.pool, { kind: 'reset' });
  let events = 0;
  const projector = createProjector({
    pool: opts.pool,
    ch: opts.ch,
    log: opts.log,
    group: opts.group,
    maxBatchSize: opts.maxBatchSize ?? 5000,
    maxWaitMs: 50,
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.mailboxes ? { mailboxes: opts.mailboxes } : {}),
    onBatch(stats) {
      events += stats.records;
      opts.onBatch?.(stats);
    },
  });
  await projector.start();
  try {
    const deadline = Date.now() + (opts.timeoutMs ?? 30 * 60_000);
    while ((await projector.lag()) > 0) {
      if (Date.now() > deadline) throw new Error(`rebuild did not catch up within ${opts.timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await projector.stop();
  }
  return { events, durationMs: performance.now() - started };
}
