/**
 * SMTP submission (SPEC §22, issue 28): messages/s accepted over SMTP (STARTTLS, AUTH PLAIN with an
 * API key, nodemailer's pooled transport) against `POST /emails/send` over HTTP with the same key,
 * in the same run on the same stores. Accepted = `250 … queued as <id>` / `202 { id }`, i.e.
 * `email.queued` is in the log (no sender in the path: this is the submission's own cost).
 * `BENCH_SMTP_IN_MESSAGES` per round (default 400), `BENCH_SMTP_IN_CONCURRENCY` connections or
 * requests in flight (default 8); HTTP and SMTP rounds alternate twice, the best of each counts.
 */
import { randomBytes } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { selfSignedPair, startSubmissionServer } from '@tern/api';
import { signDashboardToken } from '@tern/auth';
import { createEventStream, type EventLog } from '@tern/event-log';
import { DEFAULT_SMTP_LISTENER_LIMITS } from '@tern/smtp-limits';
import nodemailer from 'nodemailer';
import type pg from 'pg';
import { runOnTableAndKafka } from '../lib/log-variants.js';
import type { Figure } from '../lib/report.js';
import { postJson } from '../lib/sending.js';
import { listenSendingApi } from '../lib/sending-api.js';
import { benchEnv, runTag } from '../lib/services.js';
import { round } from '../lib/stats.js';

const env = benchEnv(process.env);
const messages = Number(process.env.BENCH_SMTP_IN_MESSAGES ?? 400);
const concurrency = Number(process.env.BENCH_SMTP_IN_CONCURRENCY ?? 8);
const JWT_SECRET = randomBytes(32).toString('base64url');

const mail = (i: number) => ({
  from: 'Bench <bench@acme.test>',
  to: 'delivered@sandbox.test',
  subject: `Bench ${i}`,
  html: `<p>Bench ${i} <a href="https://example.com/${i}">link</a></p>`,
  text: `Bench ${i}`,
});

/** Runs `n` tasks with `c` in flight; the wall time in ms. */
async function inFlight(n: number, c: number, task: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (let i = next++; i < n; i = next++) await task(i);
    }),
  );
  return performance.now() - started;
}

async function measure(variant: string, raw: EventLog, pool: pg.Pool, ch: ClickHouseClient) {
  const log = createEventStream(raw);
  const { api, url: apiUrl } = await listenSendingApi({ pool, ch, log, secret: JWT_SECRET });
  const tls = await selfSignedPair('localhost');
  const smtp = await startSubmissionServer({
    app: api,
    port: 0,
    host: '127.0.0.1',
    tls,
    requireTls: true,
    // The bench is one client sending as fast as it can: the per-client minute caps would stop it.
    limits: { ...DEFAULT_SMTP_LISTENER_LIMITS, messagesPerMinute: 1_000_000, recipientsPerMinute: 1_000_000 },
  });
  const tenantId = `smtpin${runTag()}`;
  const jwt = signDashboardToken({ secret: JWT_SECRET, tenantId, role: 'owner', expiresInSeconds: 3600 });
  const { key } = await postJson<{ key: string }>(
    `${apiUrl}/tenants/${tenantId}/api-keys`,
    { name: 'bench', scopes: ['email:send'] },
    { authorization: `Bearer ${jwt}` },
    [201],
  );
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: smtp.port,
    secure: false,
    requireTLS: true,
    tls: { ca: tls.cert, servername: 'localhost' },
    auth: { user: 'apikey', pass: key },
    pool: true,
    maxConnections: concurrency,
    maxMessages: Number.POSITIVE_INFINITY,
  });
  let seq = 0;
  const overHttp = () =>
    inFlight(messages, concurrency, async () => {
      await postJson(`${apiUrl}/emails/send`, mail(seq++), { 'x-api-key': key });
    });
  const overSmtp = () =>
    inFlight(messages, concurrency, async () => {
      const info = await transport.sendMail(mail(seq++));
      if (!/queued as em_/.test(info.response)) throw new Error(`SMTP answered ${info.response}`);
    });
  try {
    // Warm-up: connections, TLS sessions, JIT.
    await transport.sendMail(mail(seq++));
    const runs: { http: number[]; smtp: number[] } = { http: [], smtp: [] };
    for (let round = 0; round < 2; round++) {
      runs.http.push(await overHttp());
      runs.smtp.push(await overSmtp());
    }
    const httpPerSecond = messages / (Math.min(...runs.http) / 1000);
    const smtpPerSecond = messages / (Math.min(...runs.smtp) / 1000);
    const { rows } = await pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM outgoing_emails WHERE tenant_id = $1',
      [tenantId],
    );
    const expected = 1 + 4 * messages;
    if (Number(rows[0]?.n) !== expected) throw new Error(`${rows[0]?.n} emails queued, expected ${expected}`);
    console.error(
      `[smtp-in] ${variant}: ${smtpPerSecond.toFixed(0)} messages/s over SMTP, ${httpPerSecond.toFixed(0)} over HTTP ` +
        `(${messages} per round, ${concurrency} in flight)`,
    );
    const fig = (metric: string, value: number, unit: string): Figure => ({
      bench: 'smtp-in',
      variant,
      metric,
      value,
      unit,
    });
    return {
      figures: [
        fig(
          `messages/s accepted over SMTP (STARTTLS + AUTH, ${concurrency} connections)`,
          smtpPerSecond,
          '/s',
        ),
        fig(`POST /emails/send/s accepted (${concurrency} in flight)`, httpPerSecond, '/s'),
        fig('ratio SMTP / HTTP', smtpPerSecond / httpPerSecond, '×'),
      ],
      details: {
        messages,
        concurrency,
        runsMs: { http: runs.http.map((v) => round(v, 0)), smtp: runs.smtp.map((v) => round(v, 0)) },
      },
    };
  } finally {
    transport.close();
    await smtp.close();
    await api.close();
  }
}

await runOnTableAndKafka('smtp-in', env, measure, { partitionConcurrency: 2 });
