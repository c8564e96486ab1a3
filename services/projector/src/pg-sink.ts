import type { DeliveryEvent } from '@tern/contracts';
import { type AnalyticsDelta, emailKey, foldBatch, groupByEmail } from '@tern/domain';
import type { DeadLetter } from '@tern/event-log';
import {
  claimIntoTimeline,
  lockEmails,
  markProcessed,
  PG_READ_MODELS,
  type ProjectionBatch,
  writeDeadLetters,
  writeOutbox,
} from '@tern/read-models';
import type pg from 'pg';

// What the projector's read models export for its tests and the bench (packages/read-models).
export {
  denseEnough,
  newSuppressions,
  providerMessageIds,
  SOFT_BOUNCE_LIMIT,
  SOFT_BOUNCE_WINDOW_MS,
} from '@tern/read-models';

export interface PgBatchResult {
  /** Events folded for the first time (duplicates excluded). */
  applied: number;
  duplicates: number;
  /** The outbox row written in the same transaction, to ship to ClickHouse; null when no figure moved. */
  outbox: { batchId: string; rows: AnalyticsDelta[] } | null;
}

/**
 * Folds one batch into Postgres in ONE transaction: claims the event ids by writing their
 * timeline rows (a duplicate changes nothing), locks and loads the affected emails, folds
 * (`foldBatch`), has every read model write its change, writes the analytics deltas to the
 * outbox and any dead letters. Either all of it is committed or none.
 */
export async function applyBatchToPostgres(
  pool: pg.Pool,
  events: readonly DeliveryEvent[],
  deadLetters: readonly DeadLetter[],
  newBatchId: () => string,
): Promise<PgBatchResult> {
  return inTransaction(pool, (client) => applyInTransaction(client, events, deadLetters, newBatchId));
}

async function applyInTransaction(
  client: pg.PoolClient,
  events: readonly DeliveryEvent[],
  deadLetters: readonly DeadLetter[],
  newBatchId: () => string,
): Promise<PgBatchResult> {
  await writeDeadLetters(client, deadLetters);
  // Same id twice in one batch counts once, as across batches.
  const unique = new Map<string, DeliveryEvent>();
  for (const e of events)
    if (!unique.has(emailKey(e.tenantId, e.id))) unique.set(emailKey(e.tenantId, e.id), e);
  if (unique.size === 0) return { applied: 0, duplicates: events.length, outbox: null };

  const candidates = [...unique.values()];
  const fresh = await claimIntoTimeline(client, candidates);
  const applied = candidates.filter((e) => fresh.has(emailKey(e.tenantId, e.id)));
  if (applied.length === 0) return { applied: 0, duplicates: events.length, outbox: null };

  const groups = groupByEmail(applied);
  const before = await lockEmails(client, groups);
  const batch: ProjectionBatch = {
    applied,
    folded: foldBatch(groups, (tenantId, emailId) => before.get(emailKey(tenantId, emailId)) ?? null),
  };
  const outbox = await writeOutbox(client, batch, newBatchId);
  for (const model of PG_READ_MODELS) await model.apply?.(client, batch);
  return { applied: applied.length, duplicates: events.length - applied.length, outbox };
}

/**
 * Dead-letters one event Postgres refused (and any parse dead letters of its batch) and claims
 * its id in the same transaction: a redelivery of it is then a known duplicate, never retried.
 */
export async function deadLetterEvent(
  pool: pg.Pool,
  event: DeliveryEvent | undefined,
  letters: readonly DeadLetter[],
): Promise<void> {
  await inTransaction(pool, async (client) => {
    await writeDeadLetters(client, letters);
    if (event) await markProcessed(client, event);
  });
}

/** `fn` in one transaction of a checked-out client, watched for a lost connection. */
async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  const lost = watchConnection(client);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    lost.release();
  }
}

/**
 * Hears a checked-out client losing its connection between two queries (a Postgres restart
 * while a batch is folded): without a listener the 'error' event would crash the process. The
 * broken client is handed back with the error, so the pool drops it instead of reusing it.
 */
function watchConnection(client: pg.PoolClient): { release(): void } {
  let lost: Error | undefined;
  const onError = (error: Error) => {
    lost = error;
  };
  client.on('error', onError);
  return {
    release() {
      client.off('error', onError);
      client.release(lost);
    },
  };
}
