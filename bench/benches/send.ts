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
import { randomBytes } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { signDashboardToken } from '@tern/auth';
import { createEventStream, type EventLog } from '@tern/event-log';
import type pg from 'pg';
import { runOnTableAndKafka } from '../lib/log-variants.js';
import { figureMaker } from '../lib/report.js';
import { sandboxDeliveryEvents, startSandboxPipeline } from '../lib/sandbox-pipeline.js';
import { measureDkim } from '../lib/send-dkim.js';
import { measureFairness } from '../lib/send-fairness.js';
import { deliveredCount, postJson, waitDelivered as waitDeliveredOf } from '../lib/sending.js';
import { listenSendingApi } from '../lib/sending-api.js';
import { benchEnv, runTag } from '../lib/services.js';
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

async function measure(variant: string, raw: EventLog, pool: pg.Pool, ch: ClickHouseClient) {
  const log = createEventStream(raw);
  const tag = runTag();
  const pipeline = await startSandboxPipeline({
    bench: 'send',
    tag,
    pool,
    ch,
    log,
    trackingSecret: JWT_SECRET,
  });
  const { api, url: apiUrl } = await listenSendingApi({ pool, ch, log, secret: JWT_SECRET });
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
  const delivered = (tenant: string, ids: string[] | null) => deliveredCount(pool, tenant, ids);
  const waitDelivered = (ids: string[] | null, count: number) =>
    waitDeliveredOf(pool, tenantId, ids, count, { intervalMs: POLL_MS });

  const sendMs: number[] = [];
  const ingestMs: number[] = [];
  try {
    // Latency, alternating the two paths so both see the same load; two warm-up rounds.
    for (let i = -2; i < samples; i++) {
      let started = performance.now();
      const { id } = await postJson(`${apiUrl}/emails/send`, mail(i), auth);
      if (!(await waitDelivered([id!], 1))) throw new Error(`send ${id} not DELIVERED within 120 s`);
      if (i >= 0) sendMs.push(performance.now() - started);
      const emailId = `ing_${tag}_${i + 2}`;
      started = performance.now();
      await pipeline.postEvents(sandboxDeliveryEvents(tenantId, emailId));
      if (!(await waitDelivered([emailId], 1))) throw new Error(`ingested ${emailId} not DELIVERED`);
      if (i >= 0) ingestMs.push(performance.now() - started);
    }

    // Throughput: every batch posted at once, then wait for all of them.
    const before = await delivered(tenantId, null);
    let started = performance.now();
    const batches = [];
    for (let i = 0; i < emails; i += 100) {
      batches.push(
        postJson(
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
        sandboxDeliveryEvents(tenantId, `thr_${tag}_${i + k}`),
      ).flat();
      posts.push(pipeline.postEvents(events));
    }
    await Promise.all(posts);
    if (!(await waitDelivered(null, before2 + emails)))
      throw new Error('ceiling run not DELIVERED within 120 s');
    const ingestRunMs = performance.now() - started;

    // Fairness (SPEC §23): tenant A's campaign of `fairBulk` emails is due (bulk rows, as its
    // fan-out leaves them); meanwhile tenant B sends one email every 100 ms through the API.
    const fair = await measureFairness({
      tag,
      log,
      pool,
      apiUrl,
      secret: JWT_SECRET,
      bulk: fairBulk,
      samples: fairSamples,
      pollMs: POLL_MS,
    });

    // DKIM: the sandbox sender leaves; an SMTP sender with the signing keys takes the due-list.
    await pipeline.sender.stop();
    const dkim = await measureDkim({
      tag,
      tenantId,
      log,
      pool,
      apiUrl,
      auth,
      mail,
      secret: JWT_SECRET,
      messages: dkimMessages,
      emails: dkimEmails,
      pollMs: POLL_MS,
    });

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
    await pipeline.stop();
  }
}

await runOnTableAndKafka('send', env, measure, { partitionConcurrency: 2 });
