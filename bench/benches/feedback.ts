/**
 * Provider notifications (SPEC §21, issue 27): notifications/s through `POST /providers/*` of the
 * real api app (verify the signature, find the email by its message id, append, answer), against
 * `POST /events` of the real ingest app with the same one event a request, in the same run, into
 * the same Postgres-table log. Each provider's burst is BENCH_FEEDBACK_NOTIFICATIONS / 5 (default
 * 10 000 in all) `delivered` notifications signed as that provider signs them (SNS: RSA with a
 * certificate the bench serves over HTTPS; SendGrid: ECDSA P-256; Postmark: basic auth; Mailgun:
 * HMAC; Resend: Standard Webhooks), BENCH_FEEDBACK_CONCURRENCY in flight (default 32). Then the
 * real projector folds the log and the bench checks every notified email is DELIVERED: all
 * applied, none lost.
 */
import type { AddressInfo } from 'node:net';
import { createApiApp } from '@tern/api';
import { createJwtVerifier } from '@tern/auth';
import type { DeliveryEvent } from '@tern/contracts';
import { attemptEvents, queuedEvent } from '@tern/domain';
import { createEventStream, createPostgresEventLog } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { applyBatchToPostgres, createProjector } from '@tern/projector';
import {
  notification,
  openProviderSenders,
  type ProviderKind,
} from '../../services/api/test/providers-support.js';
import { openChdb, openProjectionDatabase } from '../lib/projection-stores.js';
import { type BenchResult, emitResult, type Figure, figureMaker } from '../lib/report.js';
import { deliveredCount } from '../lib/sending.js';
import { benchEnv, runTag } from '../lib/services.js';
import { round, rssMiB } from '../lib/stats.js';

const env = benchEnv(process.env);
const total = Number(process.env.BENCH_FEEDBACK_NOTIFICATIONS ?? 10_000);
const concurrency = Number(process.env.BENCH_FEEDBACK_CONCURRENCY ?? 32);
const PROVIDERS: ProviderKind[] = ['ses', 'sendgrid', 'postmark', 'mailgun', 'resend'];
const per = Math.floor(total / PROVIDERS.length);
const TOKEN = 'bench-feedback-ingest-token-0123456789';
const tenantId = `fb-${runTag()}`;

/** Requests/s of `requests` sent `concurrency` at a time; every answer must be `ok`. */
async function burst(
  requests: readonly { url: string; body: string; headers: Record<string, string> }[],
  ok: number,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests.length) {
        const r = requests[next++]!;
        const res = await fetch(r.url, { method: 'POST', body: r.body, headers: r.headers });
        const text = await res.text();
        if (res.status !== ok) throw new Error(`${r.url} answered ${res.status}: ${text.slice(0, 200)}`);
      }
    }),
  );
  return (requests.length / (performance.now() - started)) * 1000;
}

const wallStart = performance.now();
const db = await openProjectionDatabase(env.databaseUrl, { max: 16 });
const chdb = await openChdb();
const senders = await openProviderSenders();
const rawLog = createPostgresEventLog({ pool: db.pool, pollIntervalMs: 20 });
await rawLog.ensureSchema();
const log = createEventStream(rawLog);
try {
  // 2 × total emails, queued and sent (the sender's events, folded by the projector's own sink):
  // the first half is notified through POST /events, the second through the provider routes.
  const emailIds = Array.from({ length: 2 * per * PROVIDERS.length }, (_, i) => `em_fb_${i}`);
  const at = new Date(Date.now() - 3_600_000);
  const seed: DeliveryEvent[] = emailIds.flatMap((emailId, i) => [
    queuedEvent({ tenantId, emailId, at, toEmail: `${emailId}@example.com`, subject: 'hello' }),
    attemptEvents(tenantId, emailId, 1, new Date(at.getTime() + 1000)).sent({
      provider: 'smtp',
      messageId: `<${emailId}@tern.bench>`,
      providerMessageId: `relay-${i}`,
    }),
  ]);
  for (let i = 0; i < seed.length; i += 5000) {
    await applyBatchToPostgres(db.pool, seed.slice(i, i + 5000), [], () => `seed-${runTag()}`);
  }

  const api = await createApiApp({
    data: { pool: db.pool, ch: chdb.ch },
    jwt: createJwtVerifier({ secret: 'bench-feedback-jwt-secret-0123456789' }),
    policy: { retentionDays: 90 },
    limits: { rateLimit: false },
    features: { sending: { log }, providers: senders.options },
  });
  await api.listen({ host: '127.0.0.1', port: 0 });
  const apiBase = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
  const ingest = await createIngestApp({ log, ingestToken: TOKEN });
  await ingest.listen({ host: '127.0.0.1', port: 0 });
  const eventsUrl = `http://127.0.0.1:${(ingest.server.address() as AddressInfo).port}/events`;

  // Warm-up of both apps (JIT, pools, the SNS certificate fetch): not measured, not counted.
  const warm = emailIds.slice(0, 20);
  await burst(
    warm.map((emailId) => ({
      url: eventsUrl,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        id: `warm-${emailId}`,
        type: 'email.opened',
        tenantId,
        emailId,
        occurredAt: new Date().toISOString(),
        data: {},
      }),
    })),
    202,
  );
  for (const provider of PROVIDERS) {
    await burst(
      [
        {
          url: `${apiBase}/providers/${provider}`,
          ...notification(senders, provider, 'open', 'relay-0', `warm-${provider}`),
        },
      ],
      200,
    );
  }

  // POST /events: one email.delivered a request, the first half of the emails.
  const eventsRequests = emailIds.slice(0, per * PROVIDERS.length).map((emailId) => ({
    url: eventsUrl,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      id: `bench-delivered-${emailId}`,
      type: 'email.delivered',
      tenantId,
      emailId,
      occurredAt: new Date().toISOString(),
      data: {},
    }),
  }));
  const eventsRate = await burst(eventsRequests, 202);

  // Each provider's burst, signed beforehand (signing is the provider's work, not Tern's).
  const rates: Record<string, number> = {};
  let providerMs = 0;
  for (const [p, provider] of PROVIDERS.entries()) {
    const requests = Array.from({ length: per }, (_, k) => {
      const i = per * PROVIDERS.length + p * per + k;
      const messageId = provider === 'mailgun' ? `em_fb_${i}@tern.bench` : `relay-${i}`;
      return {
        url: `${apiBase}/providers/${provider}`,
        ...notification(senders, provider, 'delivered', messageId, `bench-${provider}-${i}`),
      };
    });
    const started = performance.now();
    rates[provider] = await burst(requests, 200);
    providerMs += performance.now() - started;
  }
  const providersRate = ((per * PROVIDERS.length) / providerMs) * 1000;

  // Every notification applied, none lost: the real projector folds the log.
  let folded = 0;
  const projector = createProjector({
    pool: db.pool,
    ch: chdb.ch,
    log,
    group: `bench-feedback-${runTag()}`,
    maxBatchSize: 5000,
  });
  const projectStart = performance.now();
  await projector.start();
  const deadline = Date.now() + 120_000;
  for (;;) {
    folded = await deliveredCount(db.pool, tenantId);
    if (folded >= emailIds.length || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const projectSeconds = (performance.now() - projectStart) / 1000;
  await projector.stop();
  await api.close();
  await ingest.close();
  if (folded !== emailIds.length) throw new Error(`only ${folded} of ${emailIds.length} emails DELIVERED`);

  console.error(
    `[feedback] ${per * PROVIDERS.length} notifications (${per} a provider), ${concurrency} in flight: providers ${Math.round(providersRate)}/s ` +
      `(${PROVIDERS.map((p) => `${p} ${Math.round(rates[p]!)}`).join(', ')}), POST /events ${Math.round(eventsRate)}/s ` +
      `(${round((providersRate / eventsRate) * 100)} %); all ${folded} emails DELIVERED after ${round(projectSeconds)} s of projection`,
  );
  const fig = (variant: string, metric: string, value: number, unit: string): Figure =>
    figureMaker('feedback', variant)(metric, value, unit);
  const result: BenchResult = {
    bench: 'feedback',
    figures: [
      fig('POST /events, 1 event a request', 'events/s', eventsRate, 'events/s'),
      fig('POST /providers/*, all five', 'notifications/s', providersRate, 'notifications/s'),
      ...PROVIDERS.map((p) => fig(`POST /providers/${p}`, 'notifications/s', rates[p]!, 'notifications/s')),
      fig('POST /providers/* vs POST /events', 'ratio', (providersRate / eventsRate) * 100, '%'),
      fig('applied', 'emails DELIVERED / notified', (folded / emailIds.length) * 100, '%'),
    ],
    details: { total: per * PROVIDERS.length, concurrency, rates, eventsRate, projectSeconds },
    rssMiB: rssMiB(),
    wallMs: performance.now() - wallStart,
  };
  emitResult(result);
} finally {
  await log.close();
  await senders.close();
  await chdb.close();
  await db.close();
}
