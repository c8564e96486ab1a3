/**
 * Sending (SPEC §11, issue 12): the whole path of a send — `POST /emails/send` → email.queued in
 * the log → sender (its own consumer group, due-list claim, sandbox provider) → email.sent +
 * email.delivered in the log → projector → DELIVERED in Postgres. Per log adapter:
 *  - latency: one email at a time, POST → its log row is DELIVERED (p50, p95);
 *  - throughput: `BENCH_SEND_EMAILS` emails posted as batches of 100, first POST → all DELIVERED.
 * Each is printed next to its ceiling measured in the same run on the same stores: the same
 * three events per email posted to `POST /events` (no sender in the path), so the ratio is the
 * sender's own cost, whatever the machine's load.
 *
 * DKIM (SPEC §20), in the same run: the signing cost per message (nodemailer composing a message
 * signed and unsigned, `BENCH_SEND_DKIM_MESSAGES` each), and sends/s over SMTP to a sink
 * (`smtp-server` in this process) from a verified domain (signed) ÷ from an unverified one
 * (unsigned), `BENCH_SEND_DKIM_EMAILS` each, the two runs alternated twice.
 */
import { type KeyObject, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { ClickHouseClient } from '@clickhouse/client';
import { createApiApp, getTemplate, isSuppressed, suppressedAmong } from '@tern/api';
import { createJwtVerifier, signDashboardToken } from '@tern/auth';
import { createEventStream, type EventLog, type EventStream } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { createProjector } from '@tern/projector';
import { createSandboxProvider, createSender, createSmtpProvider, DKIM_SIGNED_HEADERS } from '@tern/sender';
import { enqueueSends, type NewSend } from '@tern/sending';
import nodemailer from 'nodemailer';
import type pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { verifiedBenchDomain } from '../lib/bench-domain.js';
import { onKafkaLog, onPostgresTableLog, runOnLogs } from '../lib/log-variants.js';
import { figureMaker } from '../lib/report.js';
import { deliveredCount, postJson, waitDelivered as waitDeliveredOf } from '../lib/sending.js';
import { benchEnv, pollUntil, runTag } from '../lib/services.js';
import { distribution, round } from '../lib/stats.js';

const env = benchEnv(process.env);
const samples = Number(process.env.BENCH_SEND_SAMPLES ?? 30);
// 5000: the sender's claim rounds grow over the first ≈ 1000 emails of a backlog (bench/README.md).
const emails = Number(process.env.BENCH_SEND_EMAILS ?? 5000);
const dkimMessages = Number(process.env.BENCH_SEND_DKIM_MESSAGES ?? 300);
const dkimEmails = Number(process.env.BENCH_SEND_DKIM_EMAILS ?? 200);
const fairBulk = Number(process.env.BENCH_SEND_FAIR_BULK ?? 5000);
const fairSamples = Number(process.env.BENCH_SEND_FAIR_SAMPLES ?? 20);
const POLL_MS = 5;
const JWT_SECRET = randomBytes(32).toString('base64url');

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

/** An SMTP relay that accepts everything and counts the messages (the sink of the DKIM runs). */
function startSink(): Promise<{ url: string; count: () => number; close(): Promise<void> }> {
  let count = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      stream.on('data', () => undefined);
      stream.on('end', () => {
        count++;
        callback();
      });
    },
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.server.address() as AddressInfo;
      resolve({
        url: `smtp://127.0.0.1:${port}`,
        count: () => count,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}

/** The DNS says yes to every record: the bench measures signing, not DNS. */
/** µs per message nodemailer spends composing a message (and signing it, with `dkim`), best of 3 rounds. */
async function composeMicros(
  n: number,
  dkim: { domainName: string; keySelector: string; privateKey: KeyObject } | null,
) {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true });
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 3; round++) {
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      await transport.sendMail({
        from: 'Bench <bench@acme.test>',
        to: 'delivered@example.com',
        subject: `Bench ${i}`,
        html: `<p>Bench ${i} <a href="https://example.com/${i}">link</a></p>`,
        messageId: `<bench-${i}@tern.test>`,
        ...(dkim
          ? {
              dkim: {
                ...dkim,
                // A parsed key, as the SMTP provider passes it (nodemailer's types say string).
                privateKey: dkim.privateKey as unknown as string,
                headerFieldNames: DKIM_SIGNED_HEADERS,
              },
            }
          : {}),
      });
    }
    best = Math.min(best, ((performance.now() - started) * 1000) / n);
  }
  return best;
}

/**
 * Tenant A's campaign backlog (`fairBulk` bulk emails queued on the real send path) against tenant
 * B's single sends posted one every 100 ms: B's POST → DELIVERED distribution, and how much of A
 * was still due when B's last email was DELIVERED (so B did not simply wait for A to finish).
 */
async function measureFairness(
  tag: string,
  log: EventStream,
  pool: pg.Pool,
  apiUrl: string,
  post: (url: string, body: unknown, headers: Record<string, string>) => Promise<{ id?: string }>,
  waitDelivered: (ids: string[] | null, count: number, tenantId: string) => Promise<boolean>,
) {
  const tenantA = `fairA${tag}`;
  const tenantB = `fairB${tag}`;
  const authB = {
    authorization: `Bearer ${signDashboardToken({ secret: JWT_SECRET, tenantId: tenantB, role: 'owner', expiresInSeconds: 3600 })}`,
    'content-type': 'application/json',
  };
  const at = new Date();
  for (let i = 0; i < fairBulk; i += 500) {
    const sends: NewSend[] = [];
    for (let k = i; k < Math.min(fairBulk, i + 500); k++) {
      sends.push({
        id: `em_fair${tag}${String(k).padStart(8, '0')}`,
        message: { from: 'news@acme.test', to: 'delivered@sandbox.test', subject: `News ${k}`, text: 'News' },
        subject: `News ${k}`,
        templateId: null,
        dueAt: at,
        scheduledAt: null,
        projectId: null,
        bulk: true,
      });
    }
    await enqueueSends(pool, log, tenantA, sends, at);
  }
  const ms: number[] = [];
  const pending: Promise<void>[] = [];
  for (let i = 0; i < fairSamples; i++) {
    const started = performance.now();
    const { id } = await post(
      `${apiUrl}/emails/send`,
      { from: 'auth@acme.test', to: 'delivered@sandbox.test', subject: `Reset ${i}`, text: 'Your code' },
      authB,
    );
    pending.push(
      waitDelivered([id!], 1, tenantB).then((ok) => {
        if (!ok) throw new Error(`fairness: ${id} not DELIVERED within 120 s`);
        ms.push(performance.now() - started);
      }),
    );
    await new Promise((r) => setTimeout(r, 100));
  }
  await Promise.all(pending);
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM outgoing_emails WHERE tenant_id = $1 AND state <> 'done'`,
    [tenantA],
  );
  const bulkLeft = rows[0]?.n ?? 0;
  if (!(await waitDelivered(null, fairBulk, tenantA))) throw new Error('fairness: campaign not DELIVERED');
  const d = distribution(ms);
  console.error(
    `[send] fairness: B p50 ${d.p50.toFixed(0)} ms, p95 ${d.p95.toFixed(0)} ms while A's ${fairBulk} bulk emails sent (${bulkLeft} still due at B's last)`,
  );
  return { p50: d.p50, p95: d.p95, bulkLeft };
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
    suppressedAmong,
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
  const post = (url: string, body: unknown, headers: Record<string, string>) => postJson(url, body, headers);
  const delivered = (tenant: string, ids: string[] | null) => deliveredCount(pool, tenant, ids);
  const waitDelivered = (ids: string[] | null, count: number) =>
    waitDeliveredOf(pool, tenantId, ids, count, { intervalMs: POLL_MS });

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
    const before = await delivered(tenantId, null);
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

    const before2 = await delivered(tenantId, null);
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

    // Fairness (SPEC §23): tenant A's campaign of `fairBulk` emails is due (bulk rows, as its
    // fan-out leaves them); meanwhile tenant B sends one email every 100 ms through the API.
    const fair = await measureFairness(tag, log, pool, apiUrl, post, (ids, count, tenant) =>
      waitDeliveredOf(pool, tenant, ids, count, { intervalMs: POLL_MS }),
    );

    // DKIM: the sandbox sender leaves; an SMTP sender with the signing keys takes the due-list.
    await sender.stop();
    const dkim = await measureDkim(tag, tenantId, log, pool, apiUrl, auth, mail, post);

    const send = distribution(sendMs);
    const ceiling = distribution(ingestMs);
    const sendsPerSecond = emails / (sendRunMs / 1000);
    const ceilingPerSecond = emails / (ingestRunMs / 1000);
    console.error(
      `[send] ${variant}: send → DELIVERED p50 ${send.p50.toFixed(0)} ms (p95 ${send.p95.toFixed(0)}), ` +
        `ceiling POST /events → DELIVERED p50 ${ceiling.p50.toFixed(0)} ms; ${emails} emails: ` +
        `${sendsPerSecond.toFixed(0)} sends/s (accepted in ${acceptedMs.toFixed(0)} ms), ceiling ${ceilingPerSecond.toFixed(0)} emails/s`,
    );
    const fig = figureMaker('send', variant);
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
        fig(
          `fairness: B's single sends → DELIVERED p50 while A's ${fairBulk}-email campaign sends`,
          fair.p50,
          'ms',
        ),
        fig(`fairness: B's single sends → DELIVERED p95 while A's campaign sends`, fair.p95, 'ms', {
          op: '<=',
          value: 2000,
        }),
        fig(
          "fairness: A's campaign emails still due when B's last send was DELIVERED",
          fair.bulkLeft,
          'emails',
        ),
        fig('DKIM signing cost per message (compose signed − unsigned)', dkim.signingMicros, 'µs'),
        fig('compose µs/message, unsigned (nodemailer)', dkim.composeUnsigned, 'µs'),
        fig(`SMTP sends/s, unsigned (${dkimEmails} via batch → relay)`, dkim.unsignedPerSecond, '/s'),
        fig(`SMTP sends/s, DKIM-signed (${dkimEmails} via batch → relay)`, dkim.signedPerSecond, '/s'),
        fig('throughput ratio signed / unsigned', dkim.signedPerSecond / dkim.unsignedPerSecond, '×'),
      ],
      details: {
        samples,
        emails,
        sendMs: Object.fromEntries(Object.entries(send).map(([k, v]) => [k, round(v, 1)])),
        ceilingMs: Object.fromEntries(Object.entries(ceiling).map(([k, v]) => [k, round(v, 1)])),
        sendRunMs: round(sendRunMs, 0),
        ingestRunMs: round(ingestRunMs, 0),
        acceptedMs: round(acceptedMs, 0),
        dkim: { messages: dkimMessages, emails: dkimEmails, runs: dkim.runs },
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

/**
 * DKIM (SPEC §20): the signing cost per message, and sends/s over SMTP signed ÷ unsigned. One
 * verified domain (through the domains service; a DNS that says yes), one SMTP sender with the
 * signing keys, a sink relay; unsigned and signed runs alternate twice, the best of each counts.
 */
async function measureDkim(
  tag: string,
  tenantId: string,
  log: EventStream,
  pool: pg.Pool,
  apiUrl: string,
  auth: Record<string, string>,
  mail: (i: number) => Record<string, unknown>,
  post: (url: string, body: unknown, headers: Record<string, string>) => Promise<unknown>,
) {
  const { domainName, key, signingKeys } = await verifiedBenchDomain({
    pool,
    log,
    tenantId,
    tag,
    secret: JWT_SECRET,
  });

  const composeUnsigned = await composeMicros(dkimMessages, null);
  const composeSigned = await composeMicros(dkimMessages, {
    domainName: key.domain,
    keySelector: key.selector,
    privateKey: key.privateKey,
  });

  const sink = await startSink();
  const sender = createSender({
    pool,
    log,
    group: `tern-bench.send-smtp-${tag}`,
    provider: createSmtpProvider({ url: sink.url }),
    signingKeys,
    isSuppressed,
    suppressedAmong,
    getTemplate,
    tracking: { secret: JWT_SECRET, publicUrl: 'http://127.0.0.1:3000' },
  });
  await sender.start();
  const runs: { signed: boolean; perSecond: number }[] = [];
  try {
    for (const signed of [false, true, false, true]) {
      const from = signed ? `bench@${domainName}` : 'bench@unverified.example.test';
      const before = sink.count();
      const started = performance.now();
      const batches = [];
      for (let i = 0; i < dkimEmails; i += 100) {
        const size = Math.min(100, dkimEmails - i);
        batches.push(
          post(
            `${apiUrl}/emails/batch`,
            Array.from({ length: size }, (_, k) => ({ ...mail(i + k), from })),
            auth,
          ),
        );
      }
      await Promise.all(batches);
      if (
        !(await pollUntil(async () => sink.count() >= before + dkimEmails, {
          intervalMs: POLL_MS,
          timeoutMs: 120_000,
        }))
      )
        throw new Error(`DKIM run (${signed ? 'signed' : 'unsigned'}) not at the relay within 120 s`);
      runs.push({ signed, perSecond: dkimEmails / ((performance.now() - started) / 1000) });
    }
  } finally {
    await sender.stop();
    await sink.close();
  }
  const best = (signed: boolean) =>
    Math.max(...runs.filter((r) => r.signed === signed).map((r) => r.perSecond));
  const result = {
    signingMicros: composeSigned - composeUnsigned,
    composeUnsigned,
    unsignedPerSecond: best(false),
    signedPerSecond: best(true),
    runs: runs.map((r) => ({ signed: r.signed, perSecond: round(r.perSecond, 1) })),
  };
  console.error(
    `[send] DKIM: signing ${result.signingMicros.toFixed(0)} µs/message (compose ${composeUnsigned.toFixed(0)} µs unsigned), ` +
      `SMTP ${result.signedPerSecond.toFixed(0)} signed vs ${result.unsignedPerSecond.toFixed(0)} unsigned sends/s ` +
      `(ratio ${(result.signedPerSecond / result.unsignedPerSecond).toFixed(2)})`,
  );
  return result;
}
