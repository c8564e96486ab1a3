import { type DeliveryEvent, type DomainEvent, parsePosition } from '@tern/contracts';
import { describe, expect, it } from 'vitest';
import {
  type ConsumedRecord,
  createEventStream,
  decodeBatch,
  type EventLog,
  type EventSealer,
  encodeEvents,
  positionOfWrite,
} from '../src/index.js';

const queued = (id: string, emailId: string): DeliveryEvent => ({
  id,
  type: 'email.queued',
  tenantId: 't1',
  emailId,
  occurredAt: '2026-03-15T10:00:00.000Z',
  data: { toEmail: 'ada@example.com', subject: 'Hello' },
});
const delivered = (id: string, emailId: string): DeliveryEvent => ({
  id,
  type: 'email.delivered',
  tenantId: 't1',
  emailId,
  occurredAt: '2026-03-15T10:01:00.000Z',
  data: {},
});
const domainVerified = (domainId: string): DomainEvent => ({
  id: `${domainId}:verified:1`,
  type: 'domain.verified',
  tenantId: 't1',
  domainId,
  occurredAt: '2026-03-15T10:02:00.000Z',
  data: {
    name: 'example.test',
    status: 'verified',
    records: [],
    reason: null,
    verifiedAt: '2026-03-15T10:02:00.000Z',
  },
});
const consumed = (records: { key: string; value: string }[]): ConsumedRecord[] =>
  records.map((r, i) => ({ ...r, partition: 0, offset: String(i) }));

/** An in-memory log of records: enough to see what the stream writes and hands over. */
function memoryLog(): EventLog & { records: { key: string; value: string }[] } {
  const records: { key: string; value: string }[] = [];
  let handler: ((batch: ConsumedRecord[]) => Promise<void>) | undefined;
  return {
    records,
    async append(batch) {
      records.push(...batch);
      await handler?.(consumed(batch));
    },
    partitionsOf: async (keys) => keys.map(() => 0),
    async consume(opts) {
      handler = opts.handle;
      return { stop: async () => {} };
    },
    lag: async () => 0,
    spans: async () => [],
    ping: async () => {},
    close: async () => {},
  };
}

describe('the typed event stream', () => {
  it('appends events keyed by email id and hands them over parsed, in order', async () => {
    const log = memoryLog();
    const stream = createEventStream(log);
    const seen: DeliveryEvent[] = [];
    await stream.consume({ group: 'g', handle: async ({ events }) => void seen.push(...events) });
    const events = [queued('q1', 'em_1'), delivered('d1', 'em_1'), queued('q2', 'em_2')];
    await stream.append(events);
    expect(log.records.map((r) => r.key)).toEqual(['em_1', 'em_1', 'em_2']);
    expect(seen).toEqual(events);
  });

  it('turns what is not an event into a dead letter naming why, and keeps the good ones', async () => {
    const good = (await encodeEvents([delivered('d1', 'em_1')]))[0]!;
    const batch = await decodeBatch(
      consumed([
        { key: 'x', value: '{"not json' },
        good,
        { key: 'y', value: JSON.stringify({ id: 'u', type: 'email.unknown' }) },
        { key: 'z', value: JSON.stringify({ ...delivered('d2', 'em_2'), occurredAt: 'a\u0000b' }) },
      ]),
    );
    expect(batch.events).toEqual([delivered('d1', 'em_1')]);
    expect(batch.deadLetters.map((d) => d.reason)).toEqual([
      'value is not JSON',
      expect.stringContaining('type must be one of'),
      expect.stringContaining('occurredAt'),
    ]);
    // A dead letter's payload can always be stored (U+0000 escaped).
    expect(batch.deadLetters[2]!.payload).not.toContain('\u0000');
  });

  it('parses each record once and lets the sealer open the parsed values in place', async () => {
    let parses = 0;
    const parse = JSON.parse;
    const sealer: EventSealer = {
      async seal(events) {
        return events.map((e) =>
          e.type === 'email.queued'
            ? { ...e, data: { sealed: { to: e.data.toEmail, s: e.data.subject } } }
            : e,
        );
      },
      async open(values) {
        const opened = new Set<number>();
        for (const [i, v] of values.entries()) {
          const data = (v as { data?: { sealed?: { to: string; s: string } } }).data;
          if (data?.sealed) {
            (v as { data: unknown }).data = { toEmail: data.sealed.to, subject: data.sealed.s };
            opened.add(i);
          }
        }
        return opened;
      },
    };
    const events = [queued('q1', 'em_1'), delivered('d1', 'em_1')];
    const records = await encodeEvents(events, sealer);
    expect(records[0]!.value).not.toContain('toEmail');
    JSON.parse = ((text: string, reviver?: Parameters<typeof parse>[1]) => {
      parses++;
      return parse(text, reviver);
    }) as typeof JSON.parse;
    try {
      const batch = await decodeBatch(consumed(records), sealer);
      expect(batch.events).toEqual(events);
    } finally {
      JSON.parse = parse;
    }
    expect(parses).toBe(records.length);
  });

  it('carries a sending domain’s events (SPEC §20) keyed by domain id, handed over apart from delivery events', async () => {
    const log = memoryLog();
    const stream = createEventStream(log);
    const seen: { events: DeliveryEvent[]; domainEvents: DomainEvent[] }[] = [];
    await stream.consume({
      group: 'g',
      handle: async ({ events, domainEvents, deadLetters }) => {
        expect(deadLetters).toEqual([]);
        seen.push({ events, domainEvents });
      },
    });
    await stream.append([queued('q1', 'em_1'), domainVerified('dom_1'), delivered('d1', 'em_1')]);
    expect(log.records.map((r) => r.key)).toEqual(['em_1', 'dom_1', 'em_1']);
    expect(seen).toEqual([
      { events: [queued('q1', 'em_1'), delivered('d1', 'em_1')], domainEvents: [domainVerified('dom_1')] },
    ]);
  });

  it('dead-letters a malformed domain event, naming the field', async () => {
    const bad = { ...domainVerified('dom_2'), data: { ...domainVerified('dom_2').data, status: 'maybe' } };
    const batch = await decodeBatch(consumed([{ key: 'dom_2', value: JSON.stringify(bad) }]));
    expect(batch.domainEvents).toEqual([]);
    expect(batch.deadLetters.map((d) => d.reason)).toEqual([expect.stringMatching(/^data\.status: /)]);
  });
});

describe('the position of a write (read-your-writes, SPEC §25)', () => {
  // Keys `k<partition>-…` land on that partition.
  const log = { partitionsOf: async (keys: readonly string[]) => keys.map((k) => Number(k[1])) };
  const write = (...keys: string[]) => keys.map((key, i) => ({ id: `ev${i}`, key }));

  it('names the last event on each partition the write touched, partitions ascending', async () => {
    expect(await positionOfWrite(log, write('k2-a', 'k0-b', 'k2-c', 'k1-d', 'k0-e'))).toBe('ev4,ev3,ev2');
  });

  it('one event, or one partition: the last event alone (the position of before)', async () => {
    expect(await positionOfWrite(log, write('k3-a'))).toBe('ev0');
    expect(await positionOfWrite(log, write('k1-a', 'k1-b', 'k1-c'))).toBe('ev2');
    expect(await positionOfWrite(createEventStream(memoryLog()), write('k1-a', 'k2-b'))).toBe('ev1');
  });

  it('a position reads back as its ids; anything else is refused', () => {
    expect(parsePosition('ev4,ev3, ev2')).toEqual(['ev4', 'ev3', 'ev2']);
    expect(parsePosition('em_1:queued')).toEqual(['em_1:queued']);
    for (const bad of ['', 'a,,b', 'not a position!', 'a;b', Array(1001).fill('x').join(',')])
      expect(parsePosition(bad)).toBeNull();
  });
});
