import type { DeliveryEvent } from '@tern/contracts';
import { emailKey, foldBatch, groupByEmail, type MailboxOf } from '@tern/domain';
import type { DeadLetter } from '@tern/event-log';
import { withTransaction } from '@tern/kernel';
import {
  claimIntoTimeline,
  dimTargets,
  lockEmails,
  markProcessed,
  type Outbox,
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
  outbox: Outbox | null;
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
  mailboxOf?: MailboxOf,
): Promise<PgBatchResult> {
  return withTransaction(pool, (client) =>
    applyInTransaction(client, events, deadLetters, newBatchId, mailboxOf),
  );
}

async function applyInTransaction(
  client: pg.PoolClient,
  events: readonly DeliveryEvent[],
  deadLetters: readonly DeadLetter[],
  newBatchId: () => string,
  mailboxOf: MailboxOf | undefined,
): Promise<PgBatchResult> {
  // First: the lock a reprojection's switch waits for (see `dimTargets`).
  const dimTables = await dimTargets(client);
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
    folded: foldBatch(
      groups,
      (tenantId, emailId) => before.get(emailKey(tenantId, emailId)) ?? null,
      mailboxOf,
    ),
  };
  const outbox = await writeOutbox(client, batch, newBatchId, dimTables);
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
  await withTransaction(pool, async (client) => {
    await writeDeadLetters(client, letters);
    if (event) await markProcessed(client, event);
  });
}
