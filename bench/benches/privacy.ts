/**
 * The cost of crypto-shredding (SPEC §14, issue 14 part 2), measured in one run against the same
 * traffic without it:
 * - ingest: `POST /events` (the real ingest app, batches of 1000, 4 in flight) into the
 *   Postgres-table log, plain vs through the sealing log (email.queued's toEmail and subject
 *   sealed with AES-256-GCM; the batch's data keys created in Postgres, two statements a batch);
 * - projection: the real projector over each filled log, plain vs opening the sealed fields (the
 *   batch's keys read in one query, then cached).
 * Recipients repeat (BENCH_PRIVACY_RECIPIENTS distinct addresses, default 5000), as a tenant's
 * customers do; the keyring starts cold in each measured phase. Printed: events/s of each and
 * the ratio sealed / plain (100 % = free).
 */
import type { AddressInfo } from 'node:net';
import type { DeliveryEvent } from '@tern/contracts';
import {
  createEventStream,
  createPostgresEventLog,
  decodeBatch,
  type EventStream,
  encodeEvents,
} from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { createKeyring, createSealer, sealedEventStream } from '@tern/privacy';
import { createProjector } from '@tern/projector';
import type pg from 'pg';
import { chunks, generateTraffic } from '../lib/events.js';
import { openChdb, openProjectionDatabase } from '../lib/projection-stores.js';
import { emitMeasured, type Figure, figureMaker } from '../lib/report.js';
import { benchEnv, runTag } from '../lib/services.js';
import { round } from '../lib/stats.js';

const env = benchEnv(process.env);
const total = Number(process.env.BENCH_PRIVACY_EVENTS ?? 60_000);
const recipients = Number(process.env.BENCH_PRIVACY_RECIPIENTS ?? 5000);
const ENCRYPTION_KEY = 'bench-privacy-encryption-key-0123456789abcdef';
const TOKEN = 'bench-privacy-ingest-token-0123456789';

function traffic(tag: string): DeliveryEvent[] {
  return generateTraffic({ events: total, tag, endMs: Date.now(), days: 20 }).map((e) =>
    e.type === 'email.queued'
      ? {
          ...e,
          data: { ...e.data, toEmail: `user${Number(e.emailId.split('_').at(-1)) % recipients}@example.com` },
        }
      : e,
  );
}

/** events/s through the real ingest app: batches of 1000, 4 requests in flight. */
async function ingest(log: EventStream, events: readonly DeliveryEvent[]): Promise<number> {
  const app = await createIngestApp({ log, ingestToken: TOKEN });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/events`;
  const bodies = chunks(events, 1000).map((batch) => JSON.stringify({ events: batch }));
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < bodies.length) {
        const res = await fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: bodies[next++]!,
        });
        if (res.status !== 202) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
      }
    }),
  );
  const rate = (events.length / (performance.now() - started)) * 1000;
  await app.close();
  return rate;
}

/** events/s of the real projector over the whole log (maxBatchSize 5000). */
async function project(
  log: EventStream,
  pool: pg.Pool,
  ch: Awaited<ReturnType<typeof openChdb>>['ch'],
  n: number,
) {
  let handled = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((r) => {
    done = r;
  });
  const projector = createProjector({
    pool,
    ch,
    log,
    group: `bench-privacy-${runTag()}`,
    maxBatchSize: 5000,
    onBatch: (stats) => {
      handled += stats.records;
      if (handled >= n) done();
    },
  });
  const started = performance.now();
  await projector.start();
  await finished;
  const rate = (handled / (performance.now() - started)) * 1000;
  await projector.stop();
  return rate;
}

const wallStart = performance.now();
const [plainDb, sealedDb] = [
  await openProjectionDatabase(env.databaseUrl, { max: 12 }),
  await openProjectionDatabase(env.databaseUrl, { max: 12 }),
];
const chdb = await openChdb();
try {
  const plainEvents = traffic(`pp${runTag()}`);
  const sealedEvents = traffic(`ps${runTag()}`);
  const plainLog = createPostgresEventLog({ pool: plainDb.pool, pollIntervalMs: 20 });
  const rawSealedLog = createPostgresEventLog({ pool: sealedDb.pool, pollIntervalMs: 20 });
  await plainLog.ensureSchema();
  await rawSealedLog.ensureSchema();

  const ingestPlain = await ingest(createEventStream(plainLog), plainEvents);
  const ingestSealed = await ingest(
    sealedEventStream(rawSealedLog, createKeyring({ pool: sealedDb.pool, encryptionKey: ENCRYPTION_KEY })),
    sealedEvents,
  );
  const { rows: keys } = await sealedDb.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM data_keys');
  const { rows: clear } = await sealedDb.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM event_log WHERE value LIKE '%@example.com%'",
  );
  if (clear[0]!.n !== 0) throw new Error(`${clear[0]!.n} sealed-log records hold a clear address`);

  // Warm-up (chDB's first inserts, JIT): a small log of its own, so neither measured run pays it.
  const warmLog = createPostgresEventLog({ pool: plainDb.pool, table: 'warm_log', pollIntervalMs: 20 });
  await warmLog.ensureSchema();
  const warm = traffic(`pw${runTag()}`).slice(0, 5000);
  await createEventStream(warmLog).append(warm);
  await project(createEventStream(warmLog), plainDb.pool, chdb.ch, warm.length);
  await warmLog.close();

  const projectPlain = await project(createEventStream(plainLog), plainDb.pool, chdb.ch, plainEvents.length);
  const projectSealed = await project(
    sealedEventStream(rawSealedLog, createKeyring({ pool: sealedDb.pool, encryptionKey: ENCRYPTION_KEY })),
    sealedDb.pool,
    chdb.ch,
    sealedEvents.length,
  );
  const { rows: opened } = await sealedDb.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM email_logs WHERE to_email IS NOT NULL',
  );
  await plainLog.close();
  await rawSealedLog.close();

  // The CPU of sealing and opening alone (keys cached, no I/O): µs per email.queued.
  // Encoding and decoding with and without the sealer: the difference is the sealing's own cost.
  const sealer = createSealer(createKeyring({ pool: sealedDb.pool, encryptionKey: ENCRYPTION_KEY }));
  const queued = sealedEvents.filter((e) => e.type === 'email.queued');
  await encodeEvents(queued, sealer); // loads the keys
  let t = performance.now();
  const sealedRecords = await encodeEvents(queued, sealer);
  const sealMicros = ((performance.now() - t) * 1000) / queued.length;
  t = performance.now();
  await encodeEvents(queued);
  const plainEncodeMicros = ((performance.now() - t) * 1000) / queued.length;
  const consumed = sealedRecords.map((r, i) => ({ ...r, partition: 0, offset: String(i) }));
  await decodeBatch(consumed.slice(0, 1), sealer);
  t = performance.now();
  await decodeBatch(consumed, sealer);
  const openMicros = ((performance.now() - t) * 1000) / queued.length;
  const plainConsumed = (await encodeEvents(queued)).map((r, i) => ({
    ...r,
    partition: 0,
    offset: String(i),
  }));
  t = performance.now();
  await decodeBatch(plainConsumed);
  const plainDecodeMicros = ((performance.now() - t) * 1000) / queued.length;

  console.error(
    `[privacy] ${total} events, ${recipients} recipients, ${keys[0]!.n} data keys; ingest plain ${Math.round(ingestPlain)} ev/s, sealed ${Math.round(ingestSealed)} ev/s (${round((ingestSealed / ingestPlain) * 100)} %); ` +
      `projection plain ${Math.round(projectPlain)} ev/s, opened ${Math.round(projectSealed)} ev/s (${round((projectSealed / projectPlain) * 100)} %); ${opened[0]!.n} entries with their recipient opened; ` +
      `CPU alone: encode sealed ${round(sealMicros, 1)} µs (plain ${round(plainEncodeMicros, 1)}), decode opened ${round(openMicros, 1)} µs (plain ${round(plainDecodeMicros, 1)}) per email.queued`,
  );
  const fig = (variant: string, metric: string, value: number, unit: string): Figure =>
    figureMaker('privacy', variant)(metric, value, unit);
  const figures = [
    fig('ingest, Postgres-table log', 'plain', ingestPlain, 'events/s'),
    fig('ingest, Postgres-table log', 'sealed', ingestSealed, 'events/s'),
    fig('ingest, Postgres-table log', 'sealed / plain', (ingestSealed / ingestPlain) * 100, '%'),
    fig('projection, batch 5000', 'plain', projectPlain, 'events/s'),
    fig('projection, batch 5000', 'opened', projectSealed, 'events/s'),
    fig('projection, batch 5000', 'opened / plain', (projectSealed / projectPlain) * 100, '%'),
    fig('CPU alone, keys cached', 'encode sealed per email.queued', sealMicros, 'µs'),
    fig('CPU alone, keys cached', 'encode plain per email.queued', plainEncodeMicros, 'µs'),
    fig('CPU alone, keys cached', 'decode opened per email.queued', openMicros, 'µs'),
    fig('CPU alone, keys cached', 'decode plain per email.queued', plainDecodeMicros, 'µs'),
  ];
  emitMeasured(
    'privacy',
    figures,
    {
      events: total,
      recipients,
      dataKeys: keys[0]!.n,
      entriesOpened: opened[0]!.n,
      ingestPlain: Math.round(ingestPlain),
      ingestSealed: Math.round(ingestSealed),
      projectPlain: Math.round(projectPlain),
      projectSealed: Math.round(projectSealed),
    },
    wallStart,
  );
} finally {
  await chdb.close();
  await plainDb.close();
  await sealedDb.close();
}
