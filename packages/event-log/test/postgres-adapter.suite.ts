import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { EventLog } from '../src/port.js';
import { createPostgresEventLog } from '../src/postgres.js';
import { runEventLogContract } from './event-log.contract.js';
import { collect, makeRecords, randomSuffix, waitFor } from './helpers.js';

/**
 * The pool as a log sees it: counts the log's reads of its table, and can hold the answer of the
 * next read (after the statement ran) until released, to put an append or a stop between "the read
 * found nothing" and "the consumer goes to sleep".
 */
function watchReads(target: pg.Pool, opts: { dropNotices?: boolean } = {}) {
  let reads = 0;
  let hold: { reached(): void; gate: Promise<void> } | null = null;
  const pool = new Proxy(target, {
    get(t, prop) {
      const value = Reflect.get(t, prop, t) as unknown;
      if (prop === 'query')
        return (...args: unknown[]) => {
          const sql = String((args[0] as { text?: string })?.text ?? args[0]);
          // `dropNotices`: a notice sent through the pool never arrives (a transaction-mode pooler).
          if (opts.dropNotices && sql.startsWith('SELECT pg_notify')) return Promise.resolve({ rows: [] });
          const result = (value as (...a: unknown[]) => Promise<unknown>).apply(t, args);
          if (!sql.startsWith('SELECT seq, key, value')) return result;
          reads++;
          const held = hold;
          hold = null;
          if (!held) return result;
          return result.then(async (answer) => {
            held.reached();
            await held.gate;
            return answer;
          });
        };
      return typeof value === 'function' ? value.bind(t) : value;
    },
  });
  return {
    pool,
    reads: () => reads,
    /** Holds the next read's answer; `reached` resolves once it is held. */
    holdNextRead() {
      let release!: () => void;
      let reached!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      const isReached = new Promise<void>((r) => {
        reached = r;
      });
      hold = { reached, gate };
      return { reached: isReached, release };
    },
  };
}

/**
 * The contract plus what only the table log promises: one active consumer per group, schema
 * creation that coexists with the migrations, wake-ups across log instances.
 */
export function runPostgresAdapterSuite(
  name: string,
  getPool: () => pg.Pool,
  opts: { listens: boolean },
): void {
  /** A log on a fresh table (through `opts.pool`, e.g. a watched one); `cleanup` closes it and drops the table. */
  async function makeLog(
    opts: {
      table?: string;
      pollIntervalMs?: number;
      pool?: pg.Pool;
      singleWriter?: boolean;
      listen?: boolean;
    } = {},
  ) {
    const table = opts.table ?? `el_${randomSuffix()}`;
    const log = createPostgresEventLog({
      pool: opts.pool ?? getPool(),
      table,
      pollIntervalMs: opts.pollIntervalMs ?? 50,
      ...(opts.singleWriter === undefined ? {} : { singleWriter: opts.singleWriter }),
      ...(opts.listen === undefined ? {} : { listen: opts.listen }),
    });
    await log.ensureSchema();
    return {
      log,
      table,
      async cleanup() {
        await log.close();
        await getPool().query(`DROP TABLE IF EXISTS ${table}, ${table}_offsets, ${table}_leases`);
      },
    };
  }

  /** A log whose reads are watched (`watchReads`), polling only once a minute unless woken. */
  async function makeWatchedLog(opts: { singleWriter?: boolean; listen?: boolean }) {
    const watched = watchReads(getPool());
    return { watched, ...(await makeLog({ pool: watched.pool, pollIntervalMs: 60_000, ...opts })) };
  }

  runEventLogContract(name, () => makeLog());

  describe(`Postgres event log specifics: ${name}`, () => {
    it('lets one consumer per group work at a time, and hands over on stop', async () => {
      const { log, cleanup } = await makeLog();
      try {
        const group = `g-${randomSuffix()}`;
        const records = makeRecords('x', 40, 4);
        await log.append(records);
        let inFlight = 0;
        let maxInFlight = 0;
        const handle = async () => {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await new Promise((r) => setTimeout(r, 20));
          inFlight--;
        };
        const a = await collect(log, { group, fromBeginning: true, maxBatchSize: 5, handle });
        const b = await collect(log, { group, fromBeginning: true, maxBatchSize: 5, handle });
        await waitFor('first batches', () => a.records.length + b.records.length >= 10);
        const owner = a.records.length > 0 ? a : b;
        const other = owner === a ? b : a;
        expect(other.records).toEqual([]);
        await owner.consumer.stop();
        // The other consumer takes over at the owner's committed position.
        await waitFor('all values across both', () => {
          const seen = new Set([...a.values(), ...b.values()]);
          return records.every((r) => seen.has(r.value));
        });
        expect(other.records.length).toBeGreaterThan(0);
        expect(maxInFlight).toBe(1);
        await other.consumer.stop();
        await waitFor('lag 0', async () => (await log.lag(group)) === 0);
      } finally {
        await cleanup();
      }
    });

    it('never skips a record whose append committed after a later-numbered one', async () => {
      const { log, table, cleanup } = await makeLog();
      try {
        // A slow append: its seq is drawn (column default) before this trigger holds its
        // transaction open, so a concurrent append gets the next seq while it waits.
        await getPool().query(`
          CREATE FUNCTION ${table}_slow() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.key = 'slow' THEN PERFORM pg_sleep(0.8); END IF; RETURN NEW; END $$;
          CREATE TRIGGER slow BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${table}_slow();`);
        const c = await collect(log, { group: 'g', fromBeginning: true });
        const slow = log.append([{ key: 'slow', value: 'first' }]);
        await new Promise((r) => setTimeout(r, 200));
        await log.append([{ key: 'fast', value: 'second' }]);
        await slow;
        await c.waitForValues(['first', 'second'], 10_000);
        expect(c.records.map((r) => r.value)).toEqual(['first', 'second']);
      } finally {
        await cleanup();
        await getPool().query(`DROP FUNCTION IF EXISTS ${table}_slow()`);
      }
    });

    it('wakes a consumer of another log instance on the same table', async () => {
      const writer = await makeLog();
      const reader = createPostgresEventLog({ pool: getPool(), table: writer.table, pollIntervalMs: 50 });
      try {
        const c = await collect(reader, { group: 'g', fromBeginning: true });
        const records = makeRecords('w', 10, 2);
        await writer.log.append(records);
        await c.waitForRecords(records);
      } finally {
        await reader.close();
        await writer.cleanup();
      }
    });

    it('single writer: an idle consumer looks again only every pollIntervalMs, and an append wakes it at once', async () => {
      const { watched, log, cleanup } = await makeWatchedLog({ singleWriter: true });
      try {
        // maxWaitMs 10 would mean a read every 10 ms; a single writer's appends wake it instead.
        const c = await collect(log, { group: 'g', fromBeginning: true, maxWaitMs: 10 });
        await new Promise((r) => setTimeout(r, 600));
        expect(watched.reads()).toBeLessThanOrEqual(2);
        const records = makeRecords('s', 6, 2);
        await log.append(records);
        await c.waitForRecords(records, 5_000);
      } finally {
        await cleanup();
      }
    });

    it('single writer: an append that commits while an empty read is in flight still wakes the consumer', async () => {
      // No LISTEN: only the append's own wake can end the minute's wait.
      const { watched, log, cleanup } = await makeWatchedLog({ singleWriter: true, listen: false });
      try {
        // The consumer's first read finds nothing; the append commits and wakes before the
        // consumer has that answer and goes to sleep.
        const held = watched.holdNextRead();
        const c = await collect(log, { group: 'g', fromBeginning: true });
        await held.reached;
        const records = makeRecords('r', 4, 2);
        await log.append(records);
        held.release();
        await c.waitForRecords(records, 5_000);
      } finally {
        await cleanup();
      }
    });

    it('closes promptly when the stop comes while a read is in flight', async () => {
      const { watched, log, cleanup } = await makeWatchedLog({ listen: false });
      let closing: Promise<boolean> | undefined;
      try {
        const held = watched.holdNextRead();
        await collect(log, { group: 'g', fromBeginning: true });
        await held.reached;
        closing = log.close().then(() => true);
        held.release();
        const late = new Promise<boolean>((r) => setTimeout(() => r(false), 5_000));
        // Not a minute's poll interval after the read came back empty.
        expect(await Promise.race([closing, late])).toBe(true);
      } finally {
        await closing;
        await cleanup();
      }
    });

    // Only where the pool can spare the listening connection (not PGlite's pool of one).
    if (opts.listens) {
      it('wakes consumers through LISTEN/NOTIFY, without waiting for a poll', async () => {
        const writer = await makeLog();
        // Polling alone would take a minute.
        const reader = createPostgresEventLog({
          pool: getPool(),
          table: writer.table,
          pollIntervalMs: 60_000,
        });
        try {
          const c = await collect(reader, { group: 'g', fromBeginning: true });
          // The LISTEN starts in the background; append until a notification finds it.
          let n = 0;
          await waitFor(
            'a record woken by NOTIFY',
            async () => {
              if (c.records.length > 0) return true;
              await writer.log.append([{ key: 'k', value: `v${n++}` }]);
              await new Promise((r) => setTimeout(r, 200));
              return c.records.length > 0;
            },
            10_000,
          );
        } finally {
          await reader.close();
          await writer.cleanup();
        }
      });
    }

    if (opts.listens) {
      /**
       * A consumer polling every 50 ms (20 reads a second without a LISTEN) that handled one record,
       * then half a second to settle (the LISTEN starts in the background after an empty read): the
       * reads of the table over the next `ms`.
       */
      const idleReads = async (log: EventLog, watched: ReturnType<typeof watchReads>, ms: number) => {
        const c = await collect(log, { group: 'g', fromBeginning: true });
        await log.append([{ key: 'k', value: 'first' }]);
        await c.waitForValues(['first'], 5_000);
        await new Promise((r) => setTimeout(r, 500));
        const before = watched.reads();
        await new Promise((r) => setTimeout(r, ms));
        return { c, reads: watched.reads() - before };
      };

      it('while it listens, an idle consumer polls at most once a second, and an append still wakes it at once', async () => {
        const watched = watchReads(getPool());
        const { log, cleanup } = await makeLog({ pool: watched.pool, pollIntervalMs: 50 });
        try {
          const { c, reads } = await idleReads(log, watched, 2_100);
          // Once a second (and the read after the last wake): not 42 reads.
          expect(reads).toBeLessThanOrEqual(4);
          const started = performance.now();
          await log.append([{ key: 'k', value: 'late' }]);
          await c.waitForValues(['first', 'late'], 5_000);
          // A NOTIFY, not the next poll (up to a second away).
          expect(performance.now() - started).toBeLessThan(300);
        } finally {
          await cleanup();
        }
      });

      it('where its probe notice never reaches the listening connection, an idle consumer keeps its poll', async () => {
        // What a transaction-mode pooler does: LISTEN stays on one server connection, the probe
        // notice is committed on another and never reaches the listening one (here: not sent).
        const watched = watchReads(getPool(), { dropNotices: true });
        const { log, cleanup } = await makeLog({ pool: watched.pool, pollIntervalMs: 50 });
        try {
          const { c, reads } = await idleReads(log, watched, 1_000);
          // Every 50 ms (about 20), not once a second.
          expect(reads).toBeGreaterThanOrEqual(8);
          await log.append([{ key: 'k', value: 'second' }]);
          await c.waitForValues(['first', 'second'], 2_000);
        } finally {
          await cleanup();
        }
      });
    }

    it('creates its schema idempotently, next to tables the migrations created', async () => {
      const table = `el_${randomSuffix()}`;
      const pool = getPool();
      // The shapes of infra/migrations/postgres.
      await pool.query(`CREATE TABLE ${table} (
        seq bigserial primary key, key text not null, value text not null, appended_at timestamptz default now())`);
      await pool.query(`CREATE TABLE ${table}_offsets (group_id text primary key, next_seq bigint not null)`);
      const { log, cleanup } = await makeLog({ table });
      try {
        await Promise.all([log.ensureSchema(), log.ensureSchema()]);
        await createPostgresEventLog({ pool, table }).ensureSchema();
        await log.append([{ key: 'k', value: 'v' }]);
        const c = await collect(log, { group: 'g', fromBeginning: true });
        await c.waitForValues(['v']);
      } finally {
        await cleanup();
      }
    });

    it('rejects bad table names', () => {
      expect(() => createPostgresEventLog({ pool: getPool(), table: 'x; DROP TABLE y' })).toThrow(
        /invalid event log table name/,
      );
    });
  });
}
