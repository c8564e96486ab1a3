import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type {
  ConsumedRecord,
  ConsumeOptions,
  EventLog,
  EventLogConsumer,
  EventLogRecord,
} from '../src/port.js';

/** A pool on the run's Postgres server (DATABASE_URL, else the local default); end it when done. */
export function serverPool(options: Omit<pg.PoolConfig, 'connectionString'> = {}): pg.Pool {
  return new pg.Pool({
    connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    ...options,
  });
}

export function randomSuffix(): string {
  return randomBytes(5).toString('hex');
}

/** Polls `check` until it returns true; fails with `what` after `timeoutMs`. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface Collector {
  consumer: EventLogConsumer;
  /** Every delivery, redeliveries included, in the order handled. */
  records: ConsumedRecord[];
  batches: ConsumedRecord[][];
  values(): Set<string>;
  /** Waits until every value has been handled at least once. */
  waitForValues(values: string[], timeoutMs?: number): Promise<void>;
  /** Waits until the value of every one of `records` has been handled at least once. */
  waitForRecords(records: readonly EventLogRecord[], timeoutMs?: number): Promise<void>;
}

export async function collect(
  log: EventLog,
  opts: Omit<ConsumeOptions, 'handle'> & { handle?: (batch: ConsumedRecord[]) => Promise<void> },
): Promise<Collector> {
  const records: ConsumedRecord[] = [];
  const batches: ConsumedRecord[][] = [];
  const consumer = await log.consume({
    ...opts,
    async handle(batch) {
      await opts.handle?.(batch);
      batches.push(batch);
      records.push(...batch);
    },
  });
  const values = () => new Set(records.map((r) => r.value));
  const waitForValues = (expected: string[], timeoutMs?: number) =>
    waitFor(
      `${expected.length} values (have ${values().size})`,
      () => {
        const seen = values();
        return expected.every((v) => seen.has(v));
      },
      timeoutMs,
    );
  return {
    consumer,
    records,
    batches,
    values,
    waitForValues,
    waitForRecords: (expected, timeoutMs) =>
      waitForValues(
        expected.map((r) => r.value),
        timeoutMs,
      ),
  };
}

/** `count` records spread over `keys` keys; value = `<key>#<n>` with n counting per key. */
export function makeRecords(prefix: string, count: number, keys: number, start = 0): EventLogRecord[] {
  return Array.from({ length: count }, (_, i) => {
    const key = `${prefix}-k${(start + i) % keys}`;
    return { key, value: `${key}#${Math.floor((start + i) / keys)}` };
  });
}

/** Per key, the values in first-delivery order (redeliveries dropped). */
export function firstDeliveriesByKey(records: ConsumedRecord[]): Map<string, string[]> {
  const seen = new Set<string>();
  const byKey = new Map<string, string[]>();
  for (const r of records) {
    if (seen.has(r.value)) continue;
    seen.add(r.value);
    const list = byKey.get(r.key) ?? [];
    list.push(r.value);
    byKey.set(r.key, list);
  }
  return byKey;
}

export function appendedByKey(records: EventLogRecord[]): Map<string, string[]> {
  const byKey = new Map<string, string[]>();
  for (const r of records) {
    const list = byKey.get(r.key) ?? [];
    list.push(r.value);
    byKey.set(r.key, list);
  }
  return byKey;
}
