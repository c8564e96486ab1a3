/**
 * Sending (SPEC §11, issue 12): the whole path of a send — `POST /emails/send` → email.queued in
 * the log → sender (its own consumer group, due-list claim, sandbox provider) → email.sent +
 * email.delivered in the log → projector → DELIVERED in Postgres. Per log adapter:
 *  - latency: one email at a time, POST → its log row is DELIVERED (p50, p95);
 *  - throughput: `BENCH_SEND_EMAILS` emails posted as batches of 100, first POST → all DELIVERED.
 * Each is printed next to its ceiling measured in the same run on the same stores: the same
 * three events per email posted to `POST /events` (no sender in the path), so the ratio is the
 * sender's own cost, whatever the machine's load.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { ClickHouseClient } from '@clickhouse/client';
import { createApiApp, getTemplate, isSuppressed } from '@tern/api';
import { createJwtVerifier, signDashboardToken } from '@tern/auth';
import { createEventStream, type EventLog } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { createProjector } from '@tern/projector';
import { createSandboxProvider, createSender } from '@tern/sender';
import type pg from 'pg';
import { onKafkaLog, onPostgresTableLog, runOnLogs } from '../lib/log-variants.js';
import type { Figure } from '../lib/report.js';
import { benchEnv, pollUntil, runTag } from '../lib/services.js';
import { distribution, round } from '../lib/stats.js';

const env = benchEnv(process.env);
const samples = Number(process.env.BENCH_SEND_SAMPLES ?? 30);
const emails = Number(process.env.BENCH_SEND_EMAILS ?? 1000);
const POLL_MS = 5;
const JWT_SECRET = randomBytes(32).toString('base64url');

async function delivered(pool: pg.Pool, tenantId: string, ids: readonly string[] | null): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    ids === null
      ? `SELECT count(*) AS n FROM email_logs WHERE tenant_id = $1 AND status = 'DELIVERED'`
      : `SELECT count(*) AS n FROM email_logs WHERE tenant_id = $1 AND id = ANY($2::text[]) AND status = 'DELIVERED'`,
    ids === null ? [tenantId] : [tenantId, ids],
  );
  return Number(rows[0]?.n ?? 0);
}

/** The three events the sandbox path produces for one email, for the ceiling through POST /events. */
function ingestEvents(tenantId: string, emailId: string) {
  const at = (ms: number) => new Date(Date.now() + ms).toISOString();
  const base = { tenantId, emailId };
  return [
    {
      ...base,
      id: `${emailId}:q`,
      type: 'email.queued',
      occurredAt: at(0),
      data: { toEmail: 'delivered@sandbox.test', subject: 'Bench' },
    },
    {
      ...base,
      id: `${emailId}:s`,
      type: 'email.sent',
      occurredAt: at(1),
      data: { provider: 'x', messageId: 'm' },
    },
    { ...base, id: `${emailId}:d`, type: 'email.delivered', occurredAt: at(2) },
  ];
}

async function measure(variant: string, raw: EventLog, pool: pg.Pool, ch: ClickHouseClient) {
  const log = createEventStream(raw);
  const tag = runTag();
  const projector = createProjector({ pool, ch, log, group: `tern-bench.send-projector-${tag}` });
  await projector.start();
  const sender = createSender({
    pool,
    log,
    group: `tern-bench.send-sender-${tag}`,
    provider: createSandboxProvider({ pool }),
    isSuppressed,
    getTemplate,
    tracking: { secret: JWT_SECRET, publicUrl: 'http://127.0.0.1:3000' },
  });
  await sender.start();
  const api = await createApiApp({
    pool,
    ch,
    jwt: createJwtVerifier({ secret: JWT_SECRET }),
    retentionDays: 90,
    rateLimit: false,
    trackingSecret: JWT_SECRET,
    sending: { log },
  });
  await api.listen({ host: '127.0.0.1', port: 0 });
  const ingestToken = randomBytes(24).toString('base64url');
  const ingest = await createIngestApp({ log, ingestToken });
  await ingest.listen({ host: '127.0.0.1', port: 0 });
  const apiUrl = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
  const ingestUrl = `http://127.0.0.1:${(ingest.server.address() as AddressInfo).port}`;
  const tenantId = `send${tag}`;
  const auth = {
    authorization: `Bearer ${signDashboardToken({ secret: JWT_SECRET, tenantId, role: 'owner', expiresInSeconds: 3600 })}`,
    'content-type': 'application/json',
  };
  const mail = (i: number) => ({
    from: 'bench@acme.test',
    to: 'delivered@sandbox.test',
    subject: `Bench ${i}`,
    html: `<p>Bench ${i} <a href="https://example.com/${i}">link</a></p>`,
  });
  const post = async (url: string, body: unknown, headers: Record<string, string>) => {
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    if (res.status !== 202) throw new Error(`${url} answered ${res.status}: ${text}`);
    return JSON.parse(text) as { id?: string; data?: { id: string }[] };
  };
  const waitDelivered = (ids: string[] | null, count: number) =>
    pollUntil(async () => (await delivered(pool, tenantId, ids)) >= count, {
      intervalMs: POLL_MS,
      timeoutMs: 120_000,
    });

  const sendMs: number[] = [];
  const ingestMs: number[] = [];
  try {
    // Latency, alternating the two paths so both see the same load; two warm-up rounds.
    for (let i = -2; i < samples; i++) {
      let started = performance.now();
      const { id } = await post(`${apiUrl}/emails/send`, mail(i), auth);
      if (!(await waitDelivered([id!], 1))) throw new Error(`send ${id} not DELIVERED within 120 s`);
      if (i >= 0) sendMs.push(performance.now() - started);
      const emailId = `ing_${tag}_${i + 2}`;
      started = performance.now();
      await post(
        `${ingestUrl}/events`,
        { events: ingestEvents(tenantId, emailId) },
        {
          authorization: `Bearer ${ingestToken}`,
          'content-type': 'application/json',
        },
      );
      if (!(await waitDelivered([emailId], 1))) throw new Error(`ingested ${emailId} not DELIVERED`);
      if (i >= 0) ingestMs.push(performance.now() - started);
    }

    // Throughput: every batch posted at once, then wait for all of them.
    const before = await delivered(pool, tenantId, null);
    let started = performance.now();
    const batches = [];
    for (let i = 0; i < emails; i += 100) {
      batches.push(
        post(
          `${apiUrl}/emails/batch`,
          Array.from({ length: Math.min(100, emails - i) }, (_, k) => mail(i + k)),
          auth,
        ),
      );
    }
    await Promise.all(batches);
    const acceptedMs = performance.now() - started;
    if (!(await waitDelivered(null, before + emails)))
      throw new Error('throughput run not DELIVERED within 120 s');
    const sendRunMs = performance.now() - started;

    const before2 = await delivered(pool, tenantId, null);
    started = performance.now();
    const posts = [];
    for (let i = 0; i < emails; i += 100) {
      const events = Array.from({ length: Math.min(100, emails - i) }, (_, k) =>
        ingestEvents(tenantId, `thr_${tag}_${i + k}`),
      ).flat();
      posts.push(
        post(
          `${ingestUrl}/events`,
          { events },
          { authorization: `Bearer ${ingestToken}`, 'content-type': 'application/json' },
        ),
      );
    }
    await Promise.all(posts);
    if (!(await waitDelivered(null, before2 + emails)))
      throw new Error('ceiling run not DELIVERED within 120 s');
    const ingestRunMs = performance.now() - started;

    const send = distribution(sendMs);
    const ceiling = distribution(ingestMs);
    const sendsPerSecond = emails / (sendRunMs / 1000);
    const ceilingPerSecond = emails / (ingestRunMs / 1000);
    console.error(
      `[send] ${variant}: send → DELIVERED p50 ${send.p50.toFixed(0)} ms (p95 ${send.p95.toFixed(0)}), ` +
        `ceiling POST /events → DELIVERED p50 ${ceiling.p50.toFixed(0)} ms; ${emails} emails: ` +
        `${sendsPerSecond.toFixed(0)} sends/s (accepted in ${acceptedMs.toFixed(0)} ms), ceiling ${ceilingPerSecond.toFixed(0)} emails/s`,
    );
    const fig = (metric: string, value: number, unit: string, target?: Figure['target']): Figure => ({
      bench: 'send',
      variant,
      metric,
      value,
      unit,
      ...(target ? { target } : {}),
    });
    return {
      figures: [
        // Issue 12: a send to delivered@sandbox.test reaches DELIVERED within 5 s.
        fig('send → DELIVERED p50', send.p50, 'ms', { op: '<=', value: 5000 }),
        fig('send → DELIVERED p95', send.p95, 'ms', { op: '<=', value: 5000 }),
        fig('ceiling: POST /events → DELIVERED p50', ceiling.p50, 'ms'),
        fig('latency ratio send / ceiling (p50)', send.p50 / ceiling.p50, '×'),
        fig(`sends/s (${emails} via batch → all DELIVERED)`, sendsPerSecond, '/s'),
        fig(`ceiling: emails/s via POST /events → DELIVERED`, ceilingPerSecond, '/s'),
        fig('throughput ratio sends / ceiling', sendsPerSecond / ceilingPerSecond, '×'),
        fig(`sends accepted/s (202)`, emails / (acceptedMs / 1000), '/s'),
      ],
      details: {
        samples,
        emails,
        sendMs: Object.fromEntries(Object.entries(send).map(([k, v]) => [k, round(v, 1)])),
        ceilingMs: Object.fromEntries(Object.entries(ceiling).map(([k, v]) => [k, round(v, 1)])),
        sendRunMs: round(sendRunMs, 0),
        ingestRunMs: round(ingestRunMs, 0),
        acceptedMs: round(acceptedMs, 0),
      },
    };
  } finally {
    await api.close();
    await ingest.close();
    await sender.stop();
    await projector.stop();
  }
}

await runOnLogs({
  bench: 'send',
  defaultLogs: 'postgres,kafka',
  postgres: (ch) => onPostgresTableLog(env, ch, measure, { pollIntervalMs: 100 }),
  kafka: (ch) => onKafkaLog(env, ch, measure, { topicPrefix: 'tern-bench.send', partitionConcurrency: 2 }),
});
