import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConsumedRecord, EventLog } from '../src/port.js';
import { hasReached } from '../src/stream.js';
import {
  appendedByKey,
  type Collector,
  collect,
  firstDeliveriesByKey,
  makeRecords,
  randomSuffix,
  waitFor,
} from './helpers.js';

export interface LogUnderTest {
  log: EventLog;
  cleanup(): Promise<void>;
}

/** The behaviour every EventLog adapter must show; each test gets a fresh log (own topic/table). */
export function runEventLogContract(name: string, makeLog: () => Promise<LogUnderTest>): void {
  describe(`EventLog contract: ${name}`, () => {
    let subject: LogUnderTest;
    let log: EventLog;
    let group: string;
    const started: Collector[] = [];

    async function consumeAll(opts: Parameters<typeof collect>[1]): Promise<Collector> {
      const c = await collect(log, opts);
      started.push(c);
      return c;
    }

    beforeEach(async () => {
      subject = await makeLog();
      log = subject.log;
      group = `g-${randomSuffix()}`;
    });

    afterEach(async () => {
      await Promise.all(started.splice(0).map((c) => c.consumer.stop()));
      await subject.cleanup();
    });

    it('delivers appended records with their key, value, partition and offset', async () => {
      const records = makeRecords('a', 30, 3);
      await log.append(records.slice(0, 10));
      await log.append(records.slice(10));
      const c = await consumeAll({ group, fromBeginning: true });
      await c.waitForRecords(records);

      expect(firstDeliveriesByKey(c.records)).toEqual(appendedByKey(records));
      for (const r of c.records) {
        expect(Number.isInteger(r.partition)).toBe(true);
        expect(r.offset).toMatch(/^\d+$/);
        expect(r.value.startsWith(`${r.key}#`)).toBe(true);
      }
      // Offsets grow within a partition.
      const lastOffset = new Map<number, bigint>();
      for (const r of c.records) {
        const previous = lastOffset.get(r.partition) ?? -1n;
        expect(BigInt(r.offset) > previous).toBe(true);
        lastOffset.set(r.partition, BigInt(r.offset));
      }
    });

    it('partitionsOf names the partition each key’s records are delivered on', async () => {
      const records = makeRecords('p', 40, 40);
      const partitions = await log.partitionsOf(records.map((r) => r.key));
      expect(partitions).toHaveLength(records.length);
      // Asked twice, the same answer (a position is computed before its append).
      expect(await log.partitionsOf(records.map((r) => r.key))).toEqual(partitions);
      await log.append(records);
      const c = await consumeAll({ group, fromBeginning: true });
      await c.waitForRecords(records);
      const expected = new Map(records.map((r, i) => [r.key, partitions[i]]));
      for (const r of c.records) expect(r.partition).toBe(expected.get(r.key));
    });

    it('spans name each partition’s end: a reader that handled up to them has read every record appended before', async () => {
      expect(hasReached(new Map(), await log.spans())).toBe(true); // nothing held yet
      const first = makeRecords('s', 24, 6);
      await log.append(first);
      const spans = await log.spans();
      const held = spans.reduce((n, s) => n + Number(BigInt(s.high) - BigInt(s.low)), 0);
      expect(held).toBe(first.length);
      expect(hasReached(new Map(), spans)).toBe(false);
      // Records appended after the snapshot are not waited for.
      await log.append(makeRecords('t', 12, 4));
      const c = await consumeAll({ group, fromBeginning: true });
      await c.waitForRecords(first);
      const positions = new Map<number, string>();
      const firstValues = new Set(first.map((r) => r.value));
      for (const r of c.records) {
        const at = positions.get(r.partition);
        if (firstValues.has(r.value) && (at === undefined || BigInt(r.offset) > BigInt(at)))
          positions.set(r.partition, r.offset);
      }
      expect(hasReached(positions, spans)).toBe(true);
      expect(hasReached(positions, await log.spans())).toBe(false);
    });

    it('keeps per-key order across many keys and appends', async () => {
      const keys = 120;
      const rounds = 5;
      const all = [];
      for (let round = 0; round < rounds; round++) {
        const batch = makeRecords('m', keys, keys, round * keys);
        all.push(...batch);
        await log.append(batch);
      }
      const c = await consumeAll({ group, fromBeginning: true, maxBatchSize: 100 });
      await c.waitForRecords(all);
      const delivered = firstDeliveriesByKey(c.records);
      expect(delivered.size).toBe(keys);
      expect(delivered).toEqual(appendedByKey(all));
    });

    it('delivers everything when appends run concurrently with consumption', async () => {
      const c = await consumeAll({ group, fromBeginning: true, maxBatchSize: 50 });
      const batches = Array.from({ length: 20 }, (_, i) => makeRecords(`c${i}`, 10, 2));
      await Promise.all(batches.map((b) => log.append(b)));
      await c.waitForRecords(batches.flat());
      await waitFor('lag 0', async () => (await log.lag(group)) === 0);
    });

    it('redelivers a batch whose handler threw, and loses nothing', async () => {
      const records = makeRecords('r', 20, 4);
      await log.append(records);
      const attempts: ConsumedRecord[][] = [];
      let thrown = false;
      const c = await consumeAll({
        group,
        fromBeginning: true,
        async handle(batch) {
          attempts.push(batch);
          if (!thrown) {
            thrown = true;
            throw new Error('handler failed once');
          }
        },
      });
      await c.waitForRecords(records);
      expect(thrown).toBe(true);
      // Every record of the failed batch came again in a later, successful batch.
      const failed = attempts[0]!.map((r) => r.value);
      expect(failed.length).toBeGreaterThan(0);
      const later = new Set(c.records.map((r) => r.value));
      for (const v of failed) expect(later.has(v)).toBe(true);
      expect(firstDeliveriesByKey(c.records)).toEqual(appendedByKey(records));
      await waitFor('lag 0', async () => (await log.lag(group)) === 0);
    });

    it('a new consumer of the group starts after the committed position', async () => {
      const first = makeRecords('p', 10, 2);
      await log.append(first);
      const c1 = await consumeAll({ group, fromBeginning: true });
      await c1.waitForRecords(first);
      await c1.consumer.stop();

      const second = makeRecords('p', 5, 2, 10);
      await log.append(second);
      const c2 = await consumeAll({ group, fromBeginning: true });
      await c2.waitForRecords(second);
      expect([...c2.values()].sort()).toEqual(second.map((r) => r.value).sort());
    });

    it('replays everything to a new group with fromBeginning', async () => {
      const records = makeRecords('rp', 25, 5);
      await log.append(records);
      const c1 = await consumeAll({ group, fromBeginning: true });
      await c1.waitForRecords(records);
      await c1.consumer.stop();

      const replay = await consumeAll({ group: `${group}-replay`, fromBeginning: true });
      await replay.waitForRecords(records);
      expect(firstDeliveriesByKey(replay.records)).toEqual(appendedByKey(records));
    });

    it('a new group without fromBeginning starts at the end of the log', async () => {
      // One key → one partition, so skipped records would have come before the new ones.
      await log.append([
        { key: 'same', value: 'old-1' },
        { key: 'same', value: 'old-2' },
      ]);
      const c = await consumeAll({ group, fromBeginning: false });
      await log.append([{ key: 'same', value: 'new-1' }]);
      await c.waitForValues(['new-1']);
      expect([...c.values()]).toEqual(['new-1']);
    });

    it('keeps groups independent: a failing group does not hold back another', async () => {
      const records = makeRecords('i', 12, 3);
      await log.append(records);
      const stuck = await consumeAll({
        group: `${group}-stuck`,
        fromBeginning: true,
        async handle() {
          throw new Error('always failing');
        },
      });
      const healthy = await consumeAll({ group, fromBeginning: true });
      await healthy.waitForRecords(records);
      await waitFor('healthy lag 0', async () => (await log.lag(group)) === 0);
      expect(stuck.records).toEqual([]);
      expect(await log.lag(`${group}-stuck`)).toBe(records.length);
    });

    it('never hands a batch larger than maxBatchSize', async () => {
      const records = makeRecords('b', 60, 1);
      await log.append(records);
      const c = await consumeAll({ group, fromBeginning: true, maxBatchSize: 7 });
      await c.waitForRecords(records);
      expect(c.batches.length).toBeGreaterThanOrEqual(Math.ceil(records.length / 7));
      for (const b of c.batches) expect(b.length).toBeLessThanOrEqual(7);
      expect(firstDeliveriesByKey(c.records)).toEqual(appendedByKey(records));
    });

    it('lingerMs gathers a trickle into few calls, each record handed within the linger’s reach', async () => {
      await expect(log.consume({ group, lingerMs: -1, handle: async () => {} })).rejects.toThrow(/lingerMs/);
      const lingerMs = 400;
      const handledAt = new Map<string, number>();
      const c = await consumeAll({
        group,
        fromBeginning: true,
        lingerMs,
        async handle(batch) {
          for (const r of batch) if (!handledAt.has(r.value)) handledAt.set(r.value, Date.now());
        },
      });
      await log.append([{ key: 't', value: 'warm' }]);
      await c.waitForValues(['warm']);
      const before = c.batches.length;
      // 12 records one by one, 25 ms apart: without a linger a consumer takes each as it comes.
      const appendedAt = new Map<string, number>();
      const records = makeRecords('t', 12, 1);
      for (const r of records) {
        await log.append([r]);
        appendedAt.set(r.value, Date.now());
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      await c.waitForRecords(records);
      expect(c.batches.length - before).toBeLessThanOrEqual(4);
      expect(c.records.slice(-records.length).map((r) => r.value)).toEqual(records.map((r) => r.value));
      for (const r of records)
        expect(handledAt.get(r.value)! - appendedAt.get(r.value)!).toBeLessThan(lingerMs + 2_000);
    });

    it('reports lag: the whole log for a group that never committed, 0 once consumed', async () => {
      const records = makeRecords('l', 20, 4);
      await log.append(records);
      expect(await log.lag(group)).toBe(20);
      const c = await consumeAll({ group, fromBeginning: true });
      await c.waitForRecords(records);
      await waitFor('lag 0', async () => (await log.lag(group)) === 0);
      await log.append(makeRecords('l', 3, 4, 20));
      await waitFor('lag 0 again', async () => (await log.lag(group)) === 0);
    });

    it('treats an empty append as a no-op', async () => {
      await log.append([]);
      expect(await log.lag(group)).toBe(0);
      await log.append([{ key: 'e', value: 'only' }]);
      const c = await consumeAll({ group, fromBeginning: true });
      await c.waitForValues(['only']);
      expect(c.records.map((r) => r.value)).toEqual(['only']);
    });

    it('stops promptly, idle or while a failing batch backs off', async () => {
      const idle = await collect(log, { group, fromBeginning: true });
      let t0 = Date.now();
      await idle.consumer.stop();
      expect(Date.now() - t0).toBeLessThan(10_000);

      await log.append([{ key: 's', value: 'v' }]);
      let attempts = 0;
      const failing = await collect(log, {
        group: `${group}-failing`,
        fromBeginning: true,
        async handle() {
          attempts++;
          throw new Error('failing');
        },
      });
      await waitFor('two attempts', () => attempts >= 2);
      t0 = Date.now();
      await failing.consumer.stop();
      expect(Date.now() - t0).toBeLessThan(10_000);
      // Stopped means stopped: no further attempts.
      const after = attempts;
      await log.append([{ key: 's', value: 'w' }]);
      await new Promise((r) => setTimeout(r, 300));
      expect(attempts).toBe(after);
    });

    it('answers ping', async () => {
      await expect(log.ping()).resolves.toBeUndefined();
    });
  });
}
