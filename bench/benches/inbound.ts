/**
 * Inbound mail (SPEC §24, issue 43): messages/s accepted by the MX listener (parse, SPF/DKIM/DMARC/
 * ARC through a DNS server, sealed store in Postgres, `email.received` sealed in the log, then `250`)
 * against `POST /events` of the same number of events, one event per request, with the same number
 * in flight, on the same stores and log in the same run; and the time from the final `.` of DATA to
 * the `250` (p50/p99). The SMTP client is a plain socket (EHLO once, then MAIL/RCPT/DATA per
 * message on `BENCH_INBOUND_CONCURRENCY` connections, default 8), so the latency is the listener's
 * alone. `BENCH_INBOUND_MESSAGES` per round (default 300), each ≈ 6 KB with a 4 KB attachment;
 * SMTP and HTTP rounds alternate twice, the best of each counts. The DNS server is the tests'
 * in-process one with no records (every verdict `none`): the lookups happen, answered locally.
 * The listener gets what the runtime gives it (`arrivalSteps`: the DMARC consumer, the automation
 * trigger's contact look-up), not the bare pipeline; each round prints the Postgres statements
 * this process sent per message.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import type { ClickHouseClient } from '@clickhouse/client';
import type { EventLog } from '@tern/event-log';
import {
  createInboundListener,
  createRecipientResolver,
  dnsResolverOf,
  ensureInboundAddress,
} from '@tern/inbound';
import { createIngestApp } from '@tern/ingest';
import { silentLogger } from '@tern/kernel';
import { createKeyring, sealedEventStream } from '@tern/privacy';
import { DEFAULT_SMTP_LISTENER_LIMITS } from '@tern/smtp-limits';
import pg from 'pg';
import { arrivalSteps } from '../../services/tern/src/roles/inbound.js';
import { startTestDnsServer } from '../../test/support/dns-server.js';
import { cpuMicrosPer, cpuSnapshot } from '../lib/cpu.js';
import { inboundMessage } from '../lib/inbound-message.js';
import { runOnTableAndKafka } from '../lib/log-variants.js';
import { figureMaker } from '../lib/report.js';
import { BENCH_ENCRYPTION_KEY, sealedAsRuntime } from '../lib/sealing.js';
import { postJson } from '../lib/sending.js';
import { benchEnv, runTag } from '../lib/services.js';
import { distribution, round } from '../lib/stats.js';

const env = benchEnv(process.env);
const messages = Number(process.env.BENCH_INBOUND_MESSAGES ?? 300);
const concurrency = Number(process.env.BENCH_INBOUND_CONCURRENCY ?? 8);
const INBOUND_DOMAIN = 'in.bench.test';
const message = (to: string, i: number) => inboundMessage(to, runTag(), i);

/** One SMTP session on a plain socket: each command awaits its whole reply (multi-line included). */
async function smtpSession(port: number) {
  const socket: Socket = connect({ host: '127.0.0.1', port });
  socket.setNoDelay(true);
  const waiting: ((reply: string) => void)[] = [];
  let buffer = '';
  let lines: string[] = [];
  socket.on('data', (chunk) => {
    buffer += chunk.toString('latin1');
    let nl = buffer.indexOf('\r\n');
    while (nl >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 2);
      lines.push(line);
      if (/^\d{3} /.test(line)) {
        const reply = lines.join('\n');
        lines = [];
        waiting.shift()?.(reply);
      }
      nl = buffer.indexOf('\r\n');
    }
  });
  const reply = () => new Promise<string>((resolve) => waiting.push(resolve));
  const expect = async (pending: Promise<string>, code: string) => {
    const r = await pending;
    if (!r.startsWith(code)) throw new Error(`SMTP answered ${r}`);
    return r;
  };
  const cmd = (line: string, code: string) => {
    const pending = reply();
    socket.write(`${line}\r\n`);
    return expect(pending, code);
  };
  await expect(reply(), '220');
  await cmd('EHLO bench.sender.test', '250');
  return {
    /** One message; answers the ms from the final `.` written to the `250` read. */
    async send(to: string, body: string): Promise<number> {
      await cmd('MAIL FROM:<ann@sender.test>', '250');
      await cmd(`RCPT TO:<${to}>`, '250');
      await cmd('DATA', '354');
      const pending = reply();
      socket.write(body);
      const t0 = performance.now();
      socket.write('\r\n.\r\n');
      await expect(pending, '250');
      return performance.now() - t0;
    },
    async close() {
      await cmd('QUIT', '221').catch(() => undefined);
      socket.destroy();
    },
  };
}

/** Statements this process's pg clients have sent (a count around `pg.Client#query`). */
const queriesSent = { n: 0 };
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  queriesSent.n++;
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

/** Runs `n` tasks on `c` workers (worker index given); the wall time in ms. */
async function inFlight(n: number, c: number, task: (i: number, worker: number) => Promise<void>) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: c }, async (_, w) => {
      for (let i = next++; i < n; i = next++) await task(i, w);
    }),
  );
  return performance.now() - started;
}

async function measure(variant: string, raw: EventLog, pool: pg.Pool, _ch: ClickHouseClient) {
  const dns = await startTestDnsServer();
  const keyring = createKeyring({ pool, encryptionKey: BENCH_ENCRYPTION_KEY });
  const tenantId = `inb${runTag()}`;
  const to = `support@${await ensureInboundAddress(pool, tenantId)}.${INBOUND_DOMAIN}`;
  const listener = createInboundListener({
    pool,
    keyring,
    // The stream sealed with the listener's own keyring, as the runtime hands them to the inbound
    // role (services/tern/src/runtime.ts: one `ctx.keyring`, `ctx.stream` sealed with it): the key
    // an arrival recorded for its id is the one its `email.received` is sealed under, known.
    log: sealedEventStream(raw, keyring),
    // Through DNS_SERVERS, as the runtime resolves (services/tern/src/roles/inbound.ts).
    resolve: dnsResolverOf([dns.server]),
    host: '127.0.0.1',
    port: 0,
    maxBytes: 40 * 1024 * 1024,
    hostname: 'mx.bench.test',
    // One client sending as fast as it can: the per-client minute caps would stop it.
    limits: { ...DEFAULT_SMTP_LISTENER_LIMITS, messagesPerMinute: 1_000_000, recipientsPerMinute: 1_000_000 },
    // What the runtime adds to every arrival (services/tern/src/roles/inbound.ts): the DMARC report
    // consumer and the `email.received` automation trigger.
    ...arrivalSteps(pool, silentLogger),
    tenantsOf: createRecipientResolver({
      pool,
      inboundDomain: INBOUND_DOMAIN,
      receivingTenants: async () => [],
    }),
  });
  const port = await listener.start();
  const token = randomBytes(24).toString('base64url');
  const ingest = await createIngestApp({ log: sealedAsRuntime(raw, pool), ingestToken: token });
  await ingest.listen({ host: '127.0.0.1', port: 0 });
  const eventsUrl = `http://127.0.0.1:${(ingest.server.address() as AddressInfo).port}/events`;
  const sessions = await Promise.all(Array.from({ length: concurrency }, () => smtpSession(port)));
  let seq = 0;
  const latencies: number[] = [];
  const overSmtp = () =>
    inFlight(messages, concurrency, async (_i, w) => {
      latencies.push(await sessions[w]!.send(to, message(to, seq++)));
    });
  const postOne = async () => {
    const i = seq++;
    const emailId = `em_${tenantId}_${i}`;
    await postJson(
      eventsUrl,
      {
        events: [
          {
            id: `${emailId}-queued`,
            type: 'email.queued',
            tenantId,
            emailId,
            occurredAt: new Date().toISOString(),
            data: { toEmail: 'ann@sender.test', subject: `Bench ${i}` },
          },
        ],
      },
      { authorization: `Bearer ${token}` },
      [202],
    );
  };
  const overHttp = () => inFlight(messages, concurrency, postOne);
  try {
    // Warm-up, one of each side: sessions, parser, keyring, the HTTP client and route, JIT.
    await sessions[0]!.send(to, message(to, seq++));
    await postOne();
    latencies.length = 0;
    const runs: { smtp: number[]; http: number[] } = { smtp: [], http: [] };
    // CPU µs per message of each process (this one, Postgres, the broker), in each side's best round.
    const cpu: { smtp: Record<string, number>[]; http: Record<string, number>[] } = { smtp: [], http: [] };
    // Statements sent to Postgres per message (every `query` of this process's pg clients).
    const statements: { smtp: number[]; http: number[] } = { smtp: [], http: [] };
    const timed = async (side: 'smtp' | 'http', round: () => Promise<number>) => {
      const before = cpuSnapshot();
      const sent = queriesSent.n;
      runs[side].push(await round());
      cpu[side].push(cpuMicrosPer(before, cpuSnapshot(), messages));
      statements[side].push((queriesSent.n - sent) / messages);
    };
    for (let r = 0; r < 2; r++) {
      await timed('smtp', overSmtp);
      await timed('http', overHttp);
    }
    const { rows } = await pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM inbound_messages WHERE tenant_id = $1 AND announced',
      [tenantId],
    );
    const expected = 1 + 2 * messages;
    if (Number(rows[0]?.n) !== expected)
      throw new Error(`${rows[0]?.n} messages stored, expected ${expected}`);
    const best = (side: 'smtp' | 'http') => runs[side].indexOf(Math.min(...runs[side]));
    const smtpPerSecond = messages / (runs.smtp[best('smtp')]! / 1000);
    const httpPerSecond = messages / (runs.http[best('http')]! / 1000);
    const smtpCpu = cpu.smtp[best('smtp')]!;
    const httpCpu = cpu.http[best('http')]!;
    const lat = distribution(latencies);
    console.error(
      `[inbound] ${variant}: ${smtpPerSecond.toFixed(0)} messages/s over SMTP, ${httpPerSecond.toFixed(0)} events/s ` +
        `over POST /events (1 per request); final . → 250 p50 ${lat.p50.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms; ` +
        `CPU µs per message SMTP ${JSON.stringify(smtpCpu)}, POST ${JSON.stringify(httpCpu)}; ` +
        `statements per message SMTP ${statements.smtp[best('smtp')]!.toFixed(2)}, POST ${statements.http[best('http')]!.toFixed(2)}`,
    );
    const fig = figureMaker('inbound', variant);
    return {
      figures: [
        fig(`messages/s stored over SMTP (${concurrency} connections)`, smtpPerSecond, '/s'),
        fig(`POST /events/s, 1 event each (${concurrency} in flight)`, httpPerSecond, '/s'),
        fig('ratio SMTP / POST /events', smtpPerSecond / httpPerSecond, '×', { op: '>=', value: 0.5 }),
        fig('final . → 250 p50', lat.p50, 'ms'),
        fig('final . → 250 p99', lat.p99, 'ms'),
        fig('CPU per message over SMTP, bench process', smtpCpu['bench process'] ?? 0, 'µs'),
        fig('CPU per message over SMTP, Postgres', smtpCpu.postgres ?? 0, 'µs'),
        fig('CPU per event over POST, bench process', httpCpu['bench process'] ?? 0, 'µs'),
        fig('CPU per event over POST, Postgres', httpCpu.postgres ?? 0, 'µs'),
        fig('Postgres statements per message over SMTP', statements.smtp[best('smtp')]!, ''),
        fig('Postgres statements per event over POST', statements.http[best('http')]!, ''),
      ],
      details: {
        messages,
        concurrency,
        runsMs: { smtp: runs.smtp.map((v) => round(v, 0)), http: runs.http.map((v) => round(v, 0)) },
        cpuMicrosPerMessage: cpu,
        statementsPerMessage: statements,
      },
    };
  } finally {
    for (const s of sessions) await s.close();
    await listener.stop();
    await ingest.close();
    await dns.close();
  }
}

await runOnTableAndKafka('inbound', env, measure);
