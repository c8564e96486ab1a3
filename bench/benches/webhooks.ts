/**
 * Outgoing webhooks (SPEC §17): the dispatcher on the real Kafka broker and Postgres server,
 * delivering to a receiver on loopback.
 *  - throughput: a burst of BENCH_WEBHOOK_EVENTS events appended at once → deliveries/s until the
 *    last one is received, against a ceiling measured in the same run: the same number of signed
 *    POSTs made straight with `postWebhook` at the dispatcher's concurrency (no log, no Postgres).
 *  - latency: BENCH_WEBHOOK_SAMPLES single events, one at a time → event appended → received, p50/p95.
 *    Target (issue 13): deliveries within 2 s of the event.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DeliveryEvent } from '@tern/contracts';
import { createDispatcher, postWebhook } from '@tern/dispatcher';
import { createEventStream, createKafkaEventLog } from '@tern/event-log';
import * as webhookStore from '@tern/webhooks';
import { createSecretBox, generateWebhookSecret, webhookHeaders } from '@tern/webhooks';
import { openProjectionDatabase } from '../lib/projection-stores.js';
import { emitMeasured, type Figure, withPeakRss } from '../lib/report.js';
import { benchEnv, deleteTopic, pollUntil, runTag } from '../lib/services.js';
import { distribution, round } from '../lib/stats.js';

const env = benchEnv(process.env);
const burst = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 2000);
const samples = Number(process.env.BENCH_WEBHOOK_SAMPLES ?? 30);
const CONCURRENCY = 16;

const started = performance.now();
const tag = runTag();
const tenantId = `whb_${tag}`;
const topic = `tern-bench.webhooks-${tag}`;
const group = `tern-bench.dispatcher-${tag}`;

// Receiver: answers 200 at once and notes when each webhook-id arrived.
const arrivals = new Map<string, number>();
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    arrivals.set(String(req.headers['webhook-id']), performance.now());
    res.writeHead(200).end('ok');
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

const store = await openProjectionDatabase(env.databaseUrl, { max: 20 });
const log = createKafkaEventLog({ brokers: env.kafkaBrokers, topic, partitions: 6 });
const box = createSecretBox(`bench-${tag}-webhook-secrets-key`);
const secret = generateWebhookSecret();
await webhookStore.insertEndpoint(
  store.pool,
  tenantId,
  { id: `wh_bench${tag}`, url, events: null, description: null, secretEnc: box.encrypt(secret) },
  new Date(),
);
const stream = createEventStream(log);
const dispatcher = createDispatcher({
  pool: store.pool,
  log: stream,
  group,
  secretBox: box,
  allowPrivate: true,
  concurrency: CONCURRENCY,
  pollIntervalMs: 50,
  maxWaitMs: 20,
});

let seq = 0;
const queuedEvent = (): DeliveryEvent => {
  seq += 1;
  return {
    id: `whb-${tag}-${seq}`,
    type: 'email.queued',
    tenantId,
    emailId: `em-${tag}-${seq}`,
    occurredAt: new Date().toISOString(),
    data: { toEmail: `user${seq}@example.com`, subject: `Subject ${seq}`, tags: ['bench'] },
  };
};
const append = (events: DeliveryEvent[]) => stream.append(events);

const figures: Figure[] = [];
const details: Record<string, unknown> = { burst, samples, concurrency: CONCURRENCY };
try {
  await dispatcher.start();
  // Warm-up: the consumer joined and one delivery went through.
  const warm = queuedEvent();
  await append([warm]);
  if (!(await pollUntil(async () => arrivals.has(warm.id), { intervalMs: 10, timeoutMs: 60_000 }))) {
    throw new Error('warm-up delivery did not arrive within 60 s');
  }

  // Latency, one event at a time.
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const e = queuedEvent();
    const t0 = performance.now();
    await append([e]);
    if (await pollUntil(async () => arrivals.has(e.id), { intervalMs: 2, timeoutMs: 10_000 })) {
      latencies.push(arrivals.get(e.id)! - t0);
    }
  }
  const lat = distribution(latencies);

  // Throughput: a burst.
  const events = Array.from({ length: burst }, queuedEvent);
  const t0 = performance.now();
  for (let i = 0; i < events.length; i += 500) await append(events.slice(i, i + 500));
  const all = await pollUntil(async () => events.every((e) => arrivals.has(e.id)), {
    intervalMs: 20,
    timeoutMs: 120_000,
  });
  const lastArrival = Math.max(...events.map((e) => arrivals.get(e.id) ?? Number.NaN));
  const burstMs = lastArrival - t0;
  const perSecond = all ? (burst / burstMs) * 1000 : Number.NaN;

  // Ceiling: the same POSTs, signed, straight from this process at the same concurrency.
  const body = JSON.stringify({
    type: 'email.queued',
    timestamp: new Date().toISOString(),
    data: { emailId: 'x' },
  });
  let next = 0;
  const c0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < burst) {
        const id = `ceiling-${tag}-${next++}`;
        const headers = webhookHeaders([secret], id, Math.floor(Date.now() / 1000), body);
        await postWebhook(url, headers, body, { timeoutMs: 10_000, allowPrivate: true });
      }
    }),
  );
  const ceiling = (burst / (performance.now() - c0)) * 1000;

  console.error(
    `[webhooks] ${burst} events: ${perSecond.toFixed(0)} deliveries/s (ceiling ${ceiling.toFixed(0)} POST/s, ` +
      `ratio ${(perSecond / ceiling).toFixed(2)}); event → delivery p50 ${lat.p50.toFixed(0)} ms, p95 ${lat.p95.toFixed(0)} ms`,
  );
  const fig = (metric: string, value: number, unit: string, target?: Figure['target']): Figure => ({
    bench: 'webhooks',
    variant: 'kafka',
    metric,
    value,
    unit,
    ...(target ? { target } : {}),
  });
  figures.push(
    fig('deliveries per second (burst)', perSecond, '/s'),
    fig('raw signed POSTs per second (ceiling)', ceiling, '/s'),
    fig('deliveries / ceiling', perSecond / ceiling, 'ratio'),
    fig('event → delivery p50', lat.p50, 'ms', { op: '<=', value: 2000 }),
    fig('event → delivery p95', lat.p95, 'ms'),
  );
  details.latencyMs = Object.fromEntries(Object.entries(lat).map(([k, v]) => [k, round(v, 1)]));
  details.burstMs = round(burstMs, 1);
  details.allDelivered = all;
} finally {
  await dispatcher.stop();
  await log.close();
  await store.close();
  server.closeAllConnections();
  server.close();
  await deleteTopic(env.kafkaBrokers, topic, [group]);
}

emitMeasured('webhooks', figures, withPeakRss(details), started);
process.exit(0);
