import type { ClickHouseClient } from '@clickhouse/client';
import type { DeliveryEvent } from '@tern/contracts';
import type { FoldedBatch } from '@tern/domain';
import type pg from 'pg';
import type { LogDayExpiry } from './email-log/days.js';

/** What the projector hands every read model, in its one transaction per batch. */
export interface ProjectionBatch {
  /** The events folded for the first time (duplicates excluded), in log order. */
  applied: readonly DeliveryEvent[];
  /** Their fold (`foldBatch` of packages/domain): each email before and after, the rollup deltas. */
  folded: FoldedBatch;
}

/**
 * A table holding an email's content by email id, deleted with the email's log row by retention
 * (SPEC §9, §14): `id` its email-id column, `at` what dates a row (led by `tenant_id` in an index,
 * migration 0090), `only` what rows may go (SQL on alias `x`; null: any).
 */
export interface EmailContentTable {
  table: string;
  id: string;
  at: string;
  only: string | null;
}

/** One erasure (SPEC §14): the address, its keyed hash, and the ids of the emails sent to it. */
export interface Erasure {
  tenantId: string;
  /** Lowercased, trimmed. */
  address: string;
  recipientHash: string;
  /** The emails of this recipient (by log entry and by send content, where it is the first `to`). */
  emailIds: readonly string[];
  /** Other emails whose messages named it (another `to`, a cc, bcc or reply-to; SPEC §22). */
  mentioned: readonly string[];
  /** The tenant's contacts with this address, deleted by the erasure (their custom events are scrubbed). */
  contactIds?: readonly string[] | undefined;
}

/** Whose rows an expiry takes: one tenant's, or every tenant's but those listed (they have their own cut-off). */
export type TenantScope = { tenantId: string } | { allBut: readonly string[] };

/**
 * A read model of the projector (docs/architecture.md, "Who owns a table"): its tables, how a
 * batch is applied to them, and what retention and erasure do to them. A model without an
 * operation has nothing to do for it (ClickHouse rollups hold no personal field: no erasure).
 */
interface ReadModelBase {
  name: string;
  tables: readonly string[];
}

export interface PgReadModel extends ReadModelBase {
  store: 'postgres';
  /** What a rebuild does to its tables: empties them (replayed from the log) or keeps them. */
  rebuild: 'truncate' | 'keep';
  /** Writes this model's change of a batch, in the projector's transaction. */
  apply?(client: pg.ClientBase, batch: ProjectionBatch): Promise<void>;
  /** Its tables holding an email's content: retention deletes them with the email's log row. */
  emailContent?: readonly EmailContentTable[];
  /** Deletes the rows of `scope` older than the cut-off in its tables not kept by email. */
  expire?(client: pg.ClientBase, scope: TenantScope, cutoff: Date): Promise<number>;
  /**
   * Its table partitioned by day (`email_logs`, migration 0560): the retention job makes the days
   * ahead (`ensure`, from the day holding `from`) and drops the days whose every email expired.
   */
  days?: {
    ensure(pool: pg.Pool, from: Date, count: number): Promise<{ made: string[]; moved: number }>;
    dropExpired(pool: pg.Pool, now: Date, expiry: LogDayExpiry): Promise<{ dropped: string[]; rows: number }>;
  };
  /** Scrubs one erased recipient from its tables, in the erasure's transaction (counts by name). */
  eraseRecipient?(client: pg.ClientBase, erasure: Erasure): Promise<Record<string, number>>;
}

export interface ChReadModel extends ReadModelBase {
  store: 'clickhouse';
  /** Deletes the days of `scope` before the cut-off; answers the DELETE statements issued. */
  expire(ch: ClickHouseClient, scope: TenantScope, cutoff: Date): Promise<number>;
}

export type ReadModel = PgReadModel | ChReadModel;
