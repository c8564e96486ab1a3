import type { DeliveryEvent } from '@tern/contracts';
import { describe, expect, it } from 'vitest';
import {
  type ConsumedRecord,
  createEventStream,
  decodeBatch,
  type EventLog,
  type EventSealer,
  encodeEvents,
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
    async consume(opts) {
      handler = opts.handle;
      return { stop: async () => {} };
    },
    lag: async () => 0,
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
});
