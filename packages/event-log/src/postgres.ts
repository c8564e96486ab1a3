import { randomUUID } from 'node:crypto';
import { backoffMs, type Logger, withTimeout } from '@tern/kernel';
import type pg from 'pg';
import {
  type ConsumedRecord,
  type ConsumeOptions,
  type EventLog,
  type EventLogConsumer,
  EventLogUnavailableError,
  lingerOf,
} from './port.js';
import { createTableListener } from './postgres-listener.js';
import { createTables, insertRecords } from './postgres-sql.js';
import { createWakeSignal } from './wait.js';

export interface PostgresEventLogOptions {
  /** Works with `max: 1` (PGlite over a socket): no connection is held between statements. */
  pool: pg.Pool;
  /** Log table; `<table>_offsets` and `<table>_leases` sit next to it. Default `event_log`. */
  table?: string;
  /**
   * How often an idle consumer looks for new records. Default 500 ms. While it listens (`listen`,
   * and its probe notice came back), at most once a second: a NOTIFY wakes it.
   */
  pollIntervalMs?: number;
  /**
   * Every append to the table is made through this object (one process holds the store: the
   * embedded PGlite locks its data directory). Each append then wakes this process's consumers, so
   * an idle consumer looks again only every `pollIntervalMs` (a safety net), not every `maxWaitMs`
   * of its own: an idle embedded Tern would otherwise query the table dozens of times a second.
   */
  singleWriter?: boolean;
  /**
   * Wake consumers with LISTEN/NOTIFY. It holds one pooled connection for as long as a consumer
   * runs, so the default is on only when the pool has more than 2 connections.
   */
  listen?: boolean;
  /** A group's consumer lease; renewed every third of it while the consumer runs. Default 30 s. */
  leaseMs?: number;
  /** `append` rejects with EventLogUnavailableError after this long. Default 10 s. */
  appendTimeoutMs?: number;
  logger?: Logger;
}

export interface PostgresEventLog extends EventLog {
  /** Creates the tables if missing; idempotent and safe to run from several processes at once. */
  ensureSchema(): Promise<void>;
}

const DEFAULT_BATCH = 1000;
/** An idle consumer's poll while the LISTEN connection holds (appends wake it through NOTIFY). */
const LISTENING_POLL_MS = 1_000;

/** The table of the Postgres-table log unless told otherwise (`PostgresEventLogOptions.table`). */
export const EVENT_LOG_TABLE = 'event_log';

export function createPostgresEventLog(options: PostgresEventLogOptions): PostgresEventLog {
  const { pool } = options;
  const table = options.table ?? EVENT_LOG_TABLE;
  // The name is spliced into SQL; allow only plain lower-case identifiers.
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(table)) throw new Error(`invalid event log table name: ${table}`);
  const offsetsTable = `${table}_offsets`;
  const leasesTable = `${table}_leases`;
  const pollIntervalMs = options.pollIntervalMs ?? 500;
  const leaseMs = options.leaseMs ?? 30_000;
  const appendTimeoutMs = options.appendTimeoutMs ?? 10_000;
  const listen = options.listen ?? (pool.options.max ?? 10) > 2;
  const logger = options.logger;

  const consumers = new Set<{ stop(): Promise<void>; wake(): void }>();
  let schema: Promise<void> | null = null;
  let closed = false;

  function ensureSchema(): Promise<void> {
    schema ??= createTables(pool, table).catch((error: unknown) => {
      schema = null; // let the next call try again
      throw error;
    });
    return schema;
  }

  function wakeAll(): void {
    for (const c of consumers) c.wake();
  }

  const listener = createTableListener({
    pool,
    table,
    logger,
    wake: wakeAll,
    wanted: () => listen && !closed && consumers.size > 0,
  });

  async function consume(opts: ConsumeOptions): Promise<EventLogConsumer> {
    if (closed) throw new Error('event log is closed');
    const maxBatchSize = opts.maxBatchSize ?? DEFAULT_BATCH;
    if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) throw new Error('maxBatchSize must be ≥ 1');
    const idleWaitMs = options.singleWriter
      ? pollIntervalMs
      : Math.min(pollIntervalMs, opts.maxWaitMs ?? pollIntervalMs);
    const { group } = opts;
    const owner = randomUUID();
    await ensureSchema();
    // The start position of a new group is fixed now, so records appended after consume()
    // resolves are always delivered, whichever way it starts.
    await pool.query(
      `INSERT INTO ${offsetsTable} (group_id, next_seq)
       SELECT $1, CASE WHEN $2::boolean THEN 1 ELSE (SELECT coalesce(max(seq), 0) + 1 FROM ${table}) END
       ON CONFLICT (group_id) DO NOTHING`,
      [group, opts.fromBeginning ?? false],
    );

    const signal = createWakeSignal();
    // A linger (ConsumeOptions.lingerMs) is waited out whatever appends wake; only a stop ends it.
    const lingerMs = lingerOf(opts);
    const lingering = createWakeSignal();
    let stopped = false;
    let owning = false;
    let nextSeq = '0';

    // Only the lease owner handles and commits; a second consumer of the group waits. A lease
    // (not a session advisory lock) because a session lock pins a connection, which a pool of one
    // cannot spare, and PGlite serves every socket from one session, where such locks never block.
    async function claim(): Promise<boolean> {
      const { rows } = await pool.query<{ next_seq: string }>(
        `WITH claimed AS (
           INSERT INTO ${leasesTable} (group_id, owner, lease_until)
           VALUES ($1, $2, now() + $3::int * interval '1 millisecond')
           ON CONFLICT (group_id) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until
           WHERE ${leasesTable}.owner = excluded.owner OR ${leasesTable}.lease_until < now()
           RETURNING group_id
         )
         SELECT o.next_seq FROM ${offsetsTable} o JOIN claimed USING (group_id)`,
        [group, owner, leaseMs],
      );
      const row = rows[0];
      if (!row) return false;
      nextSeq = row.next_seq;
      return true;
    }

    async function renew(): Promise<void> {
      if (!owning) return;
      try {
        const result = await pool.query(
          `UPDATE ${leasesTable} SET lease_until = now() + $3::int * interval '1 millisecond'
           WHERE group_id = $1 AND owner = $2`,
          [group, owner, leaseMs],
        );
        if (result.rowCount === 0) owning = false;
      } catch (error) {
        logger?.warn({ err: error, group }, 'event log lease renewal failed');
      }
    }

    // The lease is renewed in the same statement, and the row lock on it orders this commit
    // against a takeover: a consumer that lost its lease commits nothing.
    async function commit(next: string): Promise<boolean> {
      const result = await pool.query(
        `WITH lease AS (
           UPDATE ${leasesTable} SET lease_until = now() + $4::int * interval '1 millisecond'
           WHERE group_id = $1 AND owner = $2
           RETURNING 1
         )
         UPDATE ${offsetsTable} SET next_seq = $3 WHERE group_id = $1 AND EXISTS (SELECT 1 FROM lease)`,
        [group, owner, next, leaseMs],
      );
      return result.rowCount === 1;
    }

    async function read(): Promise<ConsumedRecord[]> {
      const { rows } = await pool.query<{ seq: string; key: string; value: string }>(
        `SELECT seq, key, value FROM ${table} WHERE seq >= $1 ORDER BY seq LIMIT $2`,
        [nextSeq, maxBatchSize],
      );
      return rows.map((r) => ({ key: r.key, value: r.value, partition: 0, offset: String(r.seq) }));
    }

    async function run(): Promise<void> {
      let failures = 0;
      while (!stopped) {
        try {
          if (!owning) {
            owning = await claim();
            if (!owning) {
              await signal.wait(Math.max(idleWaitMs, 250));
              continue;
            }
          }
          // An append's wake (or a NOTIFY) that lands while this read is in flight, after it
          // looked, must not be lost: it ends the idle wait below at once.
          const since = signal.wakes();
          const batch = await read();
          const last = batch.at(-1);
          if (!last) {
            void listener.start(); // again, if a lost connection took it
            // While LISTEN holds (its probe heard), every append of any process wakes this wait:
            // the poll is only a safety net, as a single writer's (an idle server-mode process read
            // the table 40 times a second at 100 ms, issue 45 item 5).
            await signal.wait(listener.hears() ? Math.max(idleWaitMs, LISTENING_POLL_MS) : idleWaitMs, since);
            continue;
          }
          try {
            await opts.handle(batch);
          } catch (error) {
            failures++;
            logger?.warn({ err: error, group, attempt: failures }, 'event log batch failed; redelivering');
            await signal.wait(backoffMs(failures));
            continue;
          }
          failures = 0;
          const next = (BigInt(last.offset) + 1n).toString();
          if (await commit(next)) nextSeq = next;
          else owning = false; // someone took over; the batch will be theirs again
          // A batch short of full: the records that follow gather for the linger first.
          if (lingerMs > 0 && batch.length < maxBatchSize) await lingering.wait(lingerMs);
        } catch (error) {
          failures++;
          logger?.warn({ err: error, group, attempt: failures }, 'event log consumer error; retrying');
          await signal.wait(backoffMs(failures));
        }
      }
    }

    const heartbeat = setInterval(() => void renew(), Math.max(100, Math.floor(leaseMs / 3)));
    heartbeat.unref();
    const running = run();

    let stopping: Promise<void> | null = null;
    const handle = {
      wake: () => signal.wake(),
      stop(): Promise<void> {
        stopping ??= (async () => {
          stopped = true;
          // Not just a wake, which a statement in flight would miss: no wait of the loop may start.
          signal.close();
          lingering.close();
          await running;
          clearInterval(heartbeat);
          consumers.delete(handle);
          if (owning) {
            owning = false;
            // Hand the group over now instead of at lease expiry.
            await pool
              .query(`DELETE FROM ${leasesTable} WHERE group_id = $1 AND owner = $2`, [group, owner])
              .catch((error: unknown) =>
                logger?.warn({ err: error, group }, 'event log lease release failed'),
              );
          }
          if (consumers.size === 0) await listener.stop();
        })();
        return stopping;
      },
    };
    consumers.add(handle);
    void listener.start();
    return { stop: handle.stop };
  }

  return {
    ensureSchema,

    async append(records) {
      if (records.length === 0) return;
      try {
        await withTimeout(
          ensureSchema().then(() => insertRecords(pool, table, records)),
          appendTimeoutMs,
          () => new EventLogUnavailableError(`event log append timed out after ${appendTimeoutMs} ms`),
        );
      } catch (error) {
        if (error instanceof EventLogUnavailableError) throw error;
        throw new EventLogUnavailableError('event log append failed', { cause: error });
      }
      wakeAll();
    },

    // One table, one order: every record is on partition 0.
    partitionsOf: async (keys) => keys.map(() => 0),

    consume,

    async lag(group) {
      await ensureSchema();
      const { rows } = await pool.query<{ lag: string }>(
        `SELECT count(*) AS lag FROM ${table}
         WHERE seq >= coalesce((SELECT next_seq FROM ${offsetsTable} WHERE group_id = $1), 0)`,
        [group],
      );
      return Number(rows[0]?.lag ?? 0);
    },

    async spans() {
      await ensureSchema();
      const { rows } = await pool.query<{ low: string; high: string }>(
        `SELECT coalesce(min(seq), 0)::text AS low, (coalesce(max(seq), -1) + 1)::text AS high FROM ${table}`,
      );
      return [{ partition: 0, low: rows[0]?.low ?? '0', high: rows[0]?.high ?? '0' }];
    },

    async ping() {
      await pool.query('SELECT 1');
    },

    async close() {
      closed = true;
      await Promise.all([...consumers].map((c) => c.stop()));
      await listener.stop();
    },
  };
}
