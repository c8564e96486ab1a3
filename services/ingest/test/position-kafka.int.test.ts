// Read-your-writes on a multi-partition Kafka log (SPEC §25, issue 49 item 5), over real sockets.
// A write of several emails puts their events on several partitions, and the projector folds each
// partition on its own: here one partition's batches fail (and are redelivered, as a store error
// or a slow member would hold them) while the others are folded, so the write's last event is in
// the read models before an earlier one. The write's `position` must still hold a read of that
// earlier email until it is folded: `GET /emails/:id` with it answers 503 NOT_CONSISTENT_YET
// while the partition is held, then the email — never a stale answer, never a 404. Real Kafka
// (a 4-partition topic), Postgres, chDB, the projector.
import { randomBytes } from 'node:crypto';
import { createKafkaEventLog, type EventLog } from '@tern/event-log';
import { eventsProjected } from '@tern/read-models';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServices, uniqueName, waitFor } from '../../../test/support/services.js';
import { openSendingWorld, type SendingWorld, wallClock } from '../../api/test/sending-support.js';
import { createKey, jwtFor } from '../../api/test/support.js';
import { listenWithIngest } from './support.js';

const TOKEN = `ingest-${randomBytes(16).toString('hex')}`;
const TENANT = `pos-kafka-${randomBytes(4).toString('hex')}`;
const PARTITIONS = 4;
/** The partition whose batches the projector cannot fold while held. */
const HELD = 0;
let world: SendingWorld;
let ingest: FastifyInstance;
let apiUrl: string;
let ingestUrl: string;
let key: string;
const held = new Set<number>();

/** A Kafka log whose consumers fail (so redeliver) every batch of a held partition. */
function holdingLog(log: EventLog): EventLog {
  return {
    ...log,
    consume: (opts) =>
      log.consume({
        ...opts,
        handle: async (batch) => {
          // A consumer's call may carry several partitions (issue 45): any held one fails it.
          const partition = batch.find((r) => held.has(r.partition))?.partition;
          if (partition !== undefined) throw new Error(`partition ${partition} held by the test`);
          return opts.handle(batch);
        },
      }),
  };
}

beforeAll(async () => {
  world = await openSendingWorld({
    sender: false,
    log: async () => {
      const kafka = createKafkaEventLog({
        brokers: testServices().kafkaBrokers,
        topic: uniqueName('position'),
        partitions: PARTITIONS,
      });
      await kafka.ping();
      return holdingLog(kafka);
    },
  });
  ({ ingest, apiUrl, ingestUrl } = await listenWithIngest(world, TOKEN));
  key = (
    await createKey(world.app, jwtFor(wallClock, TENANT), TENANT, { scopes: ['email:send', 'email:read'] })
  ).key;
}, 120_000);

afterAll(async () => {
  held.clear();
  await ingest?.close();
  await world?.close();
});

const read = (id: string, position: string) =>
  fetch(`${apiUrl}/emails/${id}`, {
    headers: { authorization: `Bearer ${key}`, 'tern-consistent-with': position },
  });

const projected = (eventIds: string[]) => eventsProjected(world.stores.pool, TENANT, eventIds);

/**
 * With `HELD` held and the write's last event folded: the read of `emailId` with the write's
 * position is a 503 (never a 404 or an answer without the write), and once the partition is
 * released it answers the email with its `email.queued`.
 */
async function expectHeldThenFresh(emailId: string, queuedId: string, position: string): Promise<void> {
  expect(await projected([queuedId])).toBe(false);
  const stale = await read(emailId, position);
  expect(stale.status).toBe(503);
  expect(stale.headers.get('retry-after')).toBe('1');
  expect(((await stale.json()) as { code: string }).code).toBe('NOT_CONSISTENT_YET');

  held.delete(HELD);
  // The held partition is redelivered after its backoff (≤ 5 s): a read may lapse once more (503).
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await read(emailId, position);
    if (res.status === 200) {
      const detail = (await res.json()) as { id: string; events: { type: string }[] };
      expect(detail.id).toBe(emailId);
      expect(detail.events.map((e) => e.type)).toContain('email.queued');
      expect(await projected([queuedId])).toBe(true);
      return;
    }
    expect(res.status).toBe(503);
    expect(Date.now()).toBeLessThan(deadline);
  }
}

describe('a write’s position covers every partition it went to (Kafka, 4 partitions)', () => {
  it('POST /emails/batch: an earlier email on a held partition is waited for, never answered stale', async () => {
    held.add(HELD);
    try {
      // Email ids are the server's: send batches until the last email is off the held partition
      // and an earlier one is on it (each batch has a 1 − (3/4)^11 chance of the latter).
      let found:
        | {
            earlier: string;
            last: string;
            position: string;
            body: { data: { id: string; position: string }[] };
            partitions: number[];
          }
        | undefined;
      for (let attempt = 0; attempt < 20 && !found; attempt++) {
        const res = await fetch(`${apiUrl}/emails/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(
            Array.from({ length: 12 }, (_, i) => ({
              from: 'Acme <hello@acme.test>',
              to: `user${i}@example.com`,
              subject: `Batch ${attempt}.${i}`,
              text: 'Hello',
            })),
          ),
        });
        expect(res.status).toBe(202);
        const body = (await res.json()) as { data: { id: string; position: string }[]; position: string };
        const ids = body.data.map((d) => d.id);
        const partitions = await world.log.partitionsOf(ids);
        const earlier = ids.find((_, i) => partitions[i] === HELD);
        if (partitions.at(-1) !== HELD && earlier !== undefined)
          found = { earlier, last: ids.at(-1)!, position: body.position, body, partitions };
      }
      if (!found) throw new Error('no batch put an earlier email on the held partition and the last off it');
      // The projector folds the other partitions: the batch's last email is in, the earlier one is not.
      await waitFor(() => projected([`${found.last}:queued`]), { timeoutMs: 20_000 });
      await expectHeldThenFresh(found.earlier, `${found.earlier}:queued`, found.position);
      // Each email keeps its own one-event position; the batch's lists the last email of each
      // partition, partitions ascending.
      for (const d of found.body.data) expect(d.position).toBe(`${d.id}:queued`);
      const lastOn = new Map<number, string>();
      for (const [i, d] of found.body.data.entries()) lastOn.set(found.partitions[i]!, `${d.id}:queued`);
      expect(found.position).toBe(
        [...lastOn]
          .sort(([a], [b]) => a - b)
          .map(([, id]) => id)
          .join(','),
      );
    } finally {
      held.delete(HELD);
    }
  }, 120_000);

  it('POST /events: an earlier event on a held partition is waited for, never a 404', async () => {
    const run = randomBytes(4).toString('hex');
    const emailIds = Array.from({ length: 16 }, (_, i) => `em_${run}${i}`);
    const partitions = await world.log.partitionsOf(emailIds);
    // First an email of the held partition, last one of another.
    const first = emailIds.find((_, i) => partitions[i] === HELD);
    const last = emailIds.find((_, i) => partitions[i] !== HELD);
    if (!first || !last) throw new Error('16 keys all on one partition');
    const events = [first, last].map((emailId) => ({
      id: `ev-${emailId}`,
      type: 'email.queued',
      tenantId: TENANT,
      emailId,
      occurredAt: new Date().toISOString(),
      data: { toEmail: `${emailId}@example.com`, subject: 'Ingested' },
    }));
    held.add(HELD);
    try {
      const res = await fetch(`${ingestUrl}/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
      expect(res.status).toBe(202);
      const answer = (await res.json()) as { accepted: number; position: string };
      await waitFor(() => projected([`ev-${last}`]), { timeoutMs: 20_000 });
      await expectHeldThenFresh(first, `ev-${first}`, answer.position);
      // The held partition (0) first, then the other one's.
      expect(answer.position).toBe(`ev-${first},ev-${last}`);
    } finally {
      held.delete(HELD);
    }
  }, 120_000);
});
