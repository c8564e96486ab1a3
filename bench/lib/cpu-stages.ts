import { type DeliveryEvent, validateEvents } from '@tern/contracts';
import { aggregateDimDeltas, diffDimContributions, foldBatch, groupByEmail } from '@tern/domain';
import { decodeRecords, encodeRecords } from '@tern/event-log';
import { logRows } from '@tern/read-models';
import { chunks } from './events.js';

/**
 * CPU cost per event of the in-process stages of ingest and projection, measured on the same
 * traffic, in µs/event (one core). Together with the throughput figures they tell how much of a
 * core each stage takes at the target rate: at 50 000 events/s a core has 20 µs per event.
 */
function microsPerEvent(count: number, fn: () => void): number {
  fn(); // warm up the JIT
  const started = performance.now();
  fn();
  return Math.round(((performance.now() - started) * 1000 * 100) / count) / 100;
}

export function ingestStages(events: readonly DeliveryEvent[]): Record<string, number> {
  const bodies = chunks(events, 1000).map((batch) => JSON.stringify({ events: batch }));
  let parsed: unknown[][] = [];
  let valid: DeliveryEvent[][] = [];
  return {
    'JSON.parse of the body': microsPerEvent(events.length, () => {
      parsed = bodies.map((b) => (JSON.parse(b) as { events: unknown[] }).events);
    }),
    'validateEvents (zod)': microsPerEvent(events.length, () => {
      valid = parsed.map((p) => {
        const r = validateEvents(p);
        if (!r.ok) throw new Error('bench traffic must be valid');
        return r.events;
      });
    }),
    'JSON.stringify per event (log record)': microsPerEvent(events.length, () => {
      for (const batch of valid) encodeRecords(batch);
    }),
  };
}

/**
 * The projector's in-memory work, as services/projector/src does it: parse each record (JSON +
 * zod), then per batch `foldBatch` (group by email, fold, diff contributions), build the row
 * updates and serialise them (the UPDATE's jsonb parameter) and the outbox row. New emails only (no state
 * loaded from Postgres), so a slight under-estimate.
 */
export function projectionStages(
  events: readonly DeliveryEvent[],
  batchSize: number,
): Record<string, number> {
  const records = encodeRecords(events).map((r, i) => ({ ...r, partition: 0, offset: String(i) }));
  let parsed: DeliveryEvent[] = [];
  return {
    'decode (JSON.parse + contract check)': microsPerEvent(records.length, () => {
      const batch = decodeRecords(records);
      if (batch.deadLetters.length > 0) throw new Error('bench traffic must be valid');
      parsed = batch.events;
    }),
    [`fold + rows + JSON of a ${batchSize} batch`]: microsPerEvent(records.length, () => {
      for (const batch of chunks(parsed, batchSize)) {
        // The projector's own fold and rows (packages/domain foldBatch, packages/read-models logRows).
        const folded = foldBatch(groupByEmail(batch), () => null);
        JSON.stringify(logRows(folded.emails));
        JSON.stringify(folded.deltas);
      }
    }),
    // Part of the fold above, timed again alone: what the sliceable rollup (SPEC §26) adds to it.
    [`of which dimension deltas + JSON of a ${batchSize} batch`]: (() => {
      const folded = chunks(parsed, batchSize).map((batch) => foldBatch(groupByEmail(batch), () => null));
      return microsPerEvent(records.length, () => {
        for (const f of folded)
          JSON.stringify(
            aggregateDimDeltas(f.emails.flatMap((e) => diffDimContributions(e.before, e.after))),
          );
      });
    })(),
  };
}
