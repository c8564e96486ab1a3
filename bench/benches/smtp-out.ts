/**
 * Sending over SMTP (issue 29): Tern's sender handing DKIM-signed mail to a relay, against the
 * provider ceiling — nodemailer alone pushing the same messages into the same relay with the same
 * connection pool and the same DKIM key, as many in flight as a claim round (32). The relay is a
 * sink (`bench/lib/smtp-sink.ts`, `smtp-server` accepting everything) in its own process.
 *
 * Tern's run: a sender (SMTP provider, signing keys of a verified domain) is running; the clock
 * starts when `BENCH_SMTP_OUT_EMAILS` sends are queued (`enqueueSends`: the rows, then
 * email.queued) and stops when the sink has received them all. The same with the pool off
 * (a connection per message: the provider before issue 29). Tern and the ceiling alternate twice;
 * the ceiling's pool has as many connections as Tern's run had open at most (the sink counts them),
 * twice as many messages in flight (at least 32); the best of each counts.
 *
 * Issue 45: then a sink that answers each message after 200 ms (`--delay-ms`, as a remote MTA
 * does) takes `BENCH_SMTP_OUT_SLOW_EMAILS` sends of Tern's sender with its defaults as shipped.
 * Each run also reports its CPU per email from /proc: the sink's, Postgres's, this process's, and this
 * process's main thread alone (the sender's event loop; a DKIM signature is made in libuv's pool).
 */
import { randomBytes } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { createEventStream, type EventLog } from '@tern/event-log';
import { isSuppressed, suppressedAmong } from '@tern/read-models';
import { enqueueSends, type NewSend } from '@tern/sending';
import { getTemplate } from '@tern/templates';
import nodemailer from 'nodemailer';
import type pg from 'pg';
import { verifiedBenchDomain } from '../lib/bench-domain.js';
import { startTsx } from '../lib/child.js';
import { cpuMicrosPer, cpuSnapshot, mainThreadMs } from '../lib/cpu.js';
import { runOnTableAndKafka } from '../lib/log-variants.js';
import { figureMaker } from '../lib/report.js';
import { senderUnderTest } from '../lib/sender-under-test.js';
import { benchEnv, pollUntil, runTag } from '../lib/services.js';
import { round } from '../lib/stats.js';

const env = benchEnv(process.env);
const { createSender, createSmtpProvider, DEFAULT_SMTP_POOL, DKIM_SIGNED_HEADERS } = senderUnderTest;
const emails = Number(process.env.BENCH_SMTP_OUT_EMAILS ?? 500);
const slowEmails = Number(process.env.BENCH_SMTP_OUT_SLOW_EMAILS ?? 3000);
const slowDelayMs = Number(process.env.BENCH_SMTP_OUT_SLOW_DELAY_MS ?? 200);
const IN_FLIGHT = 32;
const SECRET = randomBytes(32).toString('base64url');
const sinkFile = new URL('../lib/smtp-sink.ts', import.meta.url).pathname;

/** The DNS says yes to every record: the bench measures sending, not DNS. */
const content = (i: number) => ({
  to: `reader${i}@example.com`,
  subject: `Bench ${i}`,
  html: `<p>Bench ${i} <a href="https://example.com/${i}">link</a></p>`,
  text: `Bench ${i}`,
});

/** `cpu`: µs per email of each process (the sink's included) and of this process's main thread. */
type Run = {
  perSecond: number;
  /** Tern's runs: the rate over the second half of the emails (the relay gate's slow start is in the first). */
  secondHalfPerSecond?: number;
  connections: number;
  peak: number;
  cpu: Record<string, number>;
};

/** CPU per email from `start()` to the returned call: each process group, and this process's main thread. */
function cpuPerEmail(sinkPid: number) {
  const named = new Map([[sinkPid, 'sink']]);
  const a = cpuSnapshot(named);
  const thread = mainThreadMs();
  return (n: number) => ({
    ...cpuMicrosPer(a, cpuSnapshot(named), n),
    'bench main thread': Math.round(((mainThreadMs() - thread) * 1000) / n),
  });
}

/** Runs `n` tasks with `c` in flight. */
async function inFlight(n: number, c: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (let i = next++; i < n; i = next++) await task(i);
    }),
  );
}

async function measure(variant: string, raw: EventLog, pool: pg.Pool, _ch: ClickHouseClient) {
  const log = createEventStream(raw);
  const tag = runTag();
  const tenantId = `smtpout${tag}`;
  const { domainName, key, signingKeys } = await verifiedBenchDomain({
    pool,
    log,
    tenantId,
    tag,
    secret: SECRET,
  });
  const from = `Bench <bench@${domainName}>`;

  /** A sink in its own process; `delayMs`: each message answered that long after its last byte. */
  async function startSink(delayMs: number) {
    const child = startTsx(sinkFile, delayMs > 0 ? [`--delay-ms=${delayMs}`] : [], (l) => l.startsWith('{'));
    const { smtpPort, httpPort } = JSON.parse(await child.line) as { smtpPort: number; httpPort: number };
    const counts = async (reset = false) =>
      (await (await fetch(`http://127.0.0.1:${httpPort}/${reset ? '?reset' : ''}`)).json()) as {
        messages: number;
        connections: number;
        peak: number;
      };
    const until = async (n: number, timeoutMs: number) => {
      if (!(await pollUntil(async () => (await counts()).messages >= n, { intervalMs: 20, timeoutMs })))
        throw new Error(`the sink did not receive ${n} messages within ${timeoutMs / 1000} s`);
    };
    return { child, pid: child.pid, smtpPort, url: `smtp://127.0.0.1:${smtpPort}`, counts, until };
  }
  const sink = await startSink(0);
  const { smtpPort, counts } = sink;
  const untilSink = (n: number) => sink.until(n, 180_000);

  /** nodemailer alone: `connections` pooled, twice as many in flight (≥ 32), the same DKIM key and headers. */
  async function ceiling(connections: number): Promise<Run> {
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort,
      secure: false,
      pool: true,
      maxConnections: connections,
      maxMessages: DEFAULT_SMTP_POOL.maxMessages,
    });
    const before = await counts(true);
    const cpu = cpuPerEmail(sink.pid);
    const started = performance.now();
    await inFlight(emails, Math.max(IN_FLIGHT, 2 * connections), async (i) => {
      await transport.sendMail({
        ...content(i),
        from,
        messageId: `<em_ceiling${tag}${i}@tern.test>`,
        headers: { 'X-Tern-Email-Id': `em_ceiling${tag}${i}` },
        dkim: {
          domainName: key!.domain,
          keySelector: key!.selector,
          privateKey: key!.privateKey as unknown as string,
          headerFieldNames: DKIM_SIGNED_HEADERS,
        },
      });
    });
    await untilSink(before.messages + emails);
    const ms = performance.now() - started;
    const used = cpu(emails);
    transport.close();
    const after = await counts();
    return {
      cpu: used,
      perSecond: emails / (ms / 1000),
      connections: after.connections - before.connections,
      peak: after.peak,
    };
  }

  /** Tern's sender (already running) from queued to the sink. */
  async function tern(
    pooled: boolean,
    run: number,
    to: Awaited<ReturnType<typeof startSink>> = sink,
    n = emails,
  ): Promise<Run> {
    const sender = createSender({
      pool,
      log,
      group: `tern-bench.smtp-out-${tag}-${run}`,
      provider: createSmtpProvider({ url: to.url, pool: pooled ? DEFAULT_SMTP_POOL : false }),
      signingKeys,
      isSuppressed,
      suppressedAmong,
      getTemplate,
      tracking: { secret: SECRET, publicUrl: 'http://127.0.0.1:3000' },
    });
    await sender.start();
    // The consumer group joined and the first passes found nothing.
    await new Promise((r) => setTimeout(r, 1500));
    const before = await to.counts(true);
    const cpu = cpuPerEmail(to.pid);
    const started = performance.now();
    const at = new Date();
    for (let i = 0; i < n; i += 500) {
      const sends: NewSend[] = [];
      for (let k = i; k < Math.min(n, i + 500); k++)
        sends.push({
          id: `em_smtpout${tag}r${run}n${k}`,
          message: { from, ...content(k) },
          subject: `Bench ${k}`,
          templateId: null,
          dueAt: at,
          scheduledAt: null,
          projectId: null,
        });
      await enqueueSends(pool, log, tenantId, sends, at);
    }
    // A relay of 200 ms and the sender of main (21/s): minutes, so the bound follows the size.
    await to.until(before.messages + Math.floor(n / 2), Math.max(180_000, n * 100));
    const half = performance.now();
    await to.until(before.messages + n, Math.max(180_000, n * 100));
    const ms = performance.now() - started;
    const used = cpu(n);
    await sender.stop();
    const after = await to.counts();
    return {
      cpu: used,
      perSecond: n / (ms / 1000),
      secondHalfPerSecond: (n - Math.floor(n / 2)) / ((started + ms - half) / 1000),
      connections: after.connections - before.connections,
      peak: after.peak,
    };
  }

  try {
    const runs: ({ kind: 'ceiling' | 'tern' | 'tern-unpooled' | 'tern-slow' } & Run)[] = [];
    let run = 0;
    for (let r = 0; r < 2; r++) {
      runs.push({ kind: 'tern', ...(await tern(true, run++)) });
      const t = runs.at(-1)!;
      console.error(
        `[smtp-out] ${variant}: Tern run ${r + 1}: ${t.perSecond.toFixed(0)}/s, ${t.peak} connections at most`,
      );
      runs.push({ kind: 'ceiling', ...(await ceiling(Math.max(1, t.peak))) });
      console.error(`[smtp-out] ${variant}: ceiling run ${r + 1}: ${runs.at(-1)!.perSecond.toFixed(0)}/s`);
    }
    runs.push({ kind: 'tern-unpooled', ...(await tern(false, run++)) });
    const slowSink = await startSink(slowDelayMs);
    try {
      runs.push({ kind: 'tern-slow', ...(await tern(true, run++, slowSink, slowEmails)) });
    } finally {
      await slowSink.child.stop();
    }
    const s = runs.at(-1)!;
    console.error(
      `[smtp-out] ${variant}: Tern → a ${slowDelayMs} ms relay: ${s.perSecond.toFixed(0)}/s ` +
        `(second half ${s.secondHalfPerSecond?.toFixed(0)}/s), ${s.peak} connections at most`,
    );
    const best = (kind: string) => {
      const of = runs.filter((x) => x.kind === kind);
      return of.reduce((a, b) => (b.perSecond > a.perSecond ? b : a), of[0]!);
    };
    const c = best('ceiling');
    const t = best('tern');
    const u = best('tern-unpooled');
    const slow = best('tern-slow');
    console.error(
      `[smtp-out] ${variant}: Tern ${t.perSecond.toFixed(0)} messages/s (${t.connections} connections), ` +
        `nodemailer alone ${c.perSecond.toFixed(0)} (${c.connections}), ratio ${(t.perSecond / c.perSecond).toFixed(2)}; ` +
        `Tern unpooled ${u.perSecond.toFixed(0)} (${u.connections} connections); CPU µs per email ` +
        `Tern ${JSON.stringify(t.cpu)}, nodemailer alone ${JSON.stringify(c.cpu)}, 200 ms relay ${JSON.stringify(slow.cpu)}`,
    );
    const fig = figureMaker('smtp-out', variant);
    return {
      figures: [
        fig(
          `ceiling: nodemailer alone, pooled + DKIM (${emails}, Tern's ${c.peak} connections, twice as many in flight)`,
          c.perSecond,
          '/s',
        ),
        fig(`Tern sender → sink, pooled + DKIM (${emails} queued → received)`, t.perSecond, '/s'),
        fig('ratio Tern / ceiling', t.perSecond / c.perSecond, '×', { op: '>=', value: 0.8 }),
        fig('Tern sender → sink, a connection per message (pool off)', u.perSecond, '/s'),
        fig('connections opened: Tern pooled', t.connections, 'connections'),
        fig('connections opened: Tern unpooled', u.connections, 'connections'),
        fig(
          `Tern sender → a relay answering after ${slowDelayMs} ms (${slowEmails} queued → received)`,
          slow.perSecond,
          '/s',
          { op: '>=', value: 1000 },
        ),
        fig(
          `the same, over the second half of the emails (the gate's slow start from ${DEFAULT_SMTP_POOL.startConnections} connections is in the first)`,
          slow.secondHalfPerSecond ?? 0,
          '/s',
        ),
        fig(`connections open at most: Tern → the ${slowDelayMs} ms relay`, slow.peak, 'connections'),
        fig('CPU per email, Tern → sink, main thread', t.cpu['bench main thread'] ?? 0, 'µs'),
        fig('CPU per email, nodemailer alone, main thread', c.cpu['bench main thread'] ?? 0, 'µs'),
      ],
      details: {
        emails,
        slowEmails,
        slowDelayMs,
        inFlight: IN_FLIGHT,
        pool: DEFAULT_SMTP_POOL,
        runs: runs.map((x) => ({
          ...x,
          perSecond: round(x.perSecond, 1),
          ...(x.secondHalfPerSecond === undefined
            ? {}
            : { secondHalfPerSecond: round(x.secondHalfPerSecond, 1) }),
        })),
      },
    };
  } finally {
    await sink.child.stop();
  }
}

await runOnTableAndKafka('smtp-out', env, measure, { partitionConcurrency: 2 }, 'postgres');
