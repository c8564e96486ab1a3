/**
 * Memory of the inbound MX listener under large mail (issue 43), measured from outside as users
 * run Tern: the built `services/tern/dist/main.js` (`npm start`: every service in one process,
 * embedded stores in a fresh DATA_DIR, the MX listener on `INBOUND_SMTP_PORT`), its VmRSS read
 * from /proc/<pid>/status every 100 ms, its V8 heap and external memory (Buffers) from its own
 * `GET /metrics` (prom-client's `nodejs_*` gauges) every 100 ms around the big message.
 *
 * Phases: baseline (3 s); then 20 clients — each its own loopback address (127.0.1.<n>), so the
 * listener's per-client limits see 20 MTAs — send 1 MB messages (a 750 KiB attachment) to the
 * tenant's receiving address for `BENCH_INBOUND_MEMORY_SECONDS` (default 60). Flat is judged on
 * the RSS sampled every second: its least-squares slope (MiB per minute) over the whole load and
 * over its second half, the mean of the last 10 s over the mean of 10–20 s (the first 10 s are the
 * ramp from idle), and the peak of each sixth. Then 15 s of drain, then one message with a
 * 30 000 000-byte attachment (≈ 41 MB of MIME, under INBOUND_MAX_BYTES' 40 MiB default), whose
 * peak RSS and peak heap + external over what the process held before it are printed as ratios to
 * the attachment's size (target ≤ 2) and to the message's. Every message must be answered 250 (a
 * 4xx is counted and the client waits 1 s, as an MTA would retry), else the bench fails.
 * Needs `npm run build` first; `BENCH_INBOUND_MEMORY_MAIN=<another build's main.js>` measures
 * that build instead (a worktree of the commit before a change: before/after with one bench).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { signDashboardToken } from '@tern/auth';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { type BenchResult, emitResult, type Figure, type Target } from '../lib/report.js';
import { readMemory, sampleRss } from '../lib/rss-sampler.js';
import { tempDir } from '../lib/services.js';
import { round, rssMiB } from '../lib/stats.js';
import { boundBench, freshSecrets, logWarnings, randomSecret, startTern } from '../lib/tern-process.js';

const MAIN = resolve(
  process.env.BENCH_INBOUND_MEMORY_MAIN ?? resolve(import.meta.dirname, '../../services/tern/dist/main.js'),
);
const SECONDS = Number(process.env.BENCH_INBOUND_MEMORY_SECONDS ?? 60);
const CLIENTS = 20;
const WINDOWS = 6;
const MESSAGE_RAW_BYTES = 750 * 1024;
const BIG_RAW_BYTES = 30_000_000;
const INBOUND_DOMAIN = 'in.bench.test';
const MIB = 1024 * 1024;
if (!existsSync(MAIN)) throw new Error(`${MAIN} missing: npm run build`);

const started = performance.now();
const bound = boundBench('inbound-memory', 600);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const small = randomBytes(MESSAGE_RAW_BYTES);

/** One MTA: its own loopback address, plain SMTP (an MX need not offer TLS to be used). */
const transportOf = (port: number, localAddress: string) =>
  nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    localAddress,
    name: `mta-${localAddress}.bench.test`,
    socketTimeout: 120_000,
  } as Parameters<typeof nodemailer.createTransport>[0]);

/** Sends until `until`; answers [accepted, refused]. A 4xx waits 1 s and the message is sent again. */
async function client(port: number, n: number, to: string, until: number): Promise<[number, number]> {
  const transport = transportOf(port, `127.0.1.${n + 1}`);
  let accepted = 0;
  let refused = 0;
  try {
    while (performance.now() < until) {
      try {
        const info = await transport.sendMail({
          from: `Sender ${n} <sender${n}@mta.test>`,
          to,
          subject: `1 MB from client ${n}, #${accepted}`,
          text: 'the attachment',
          attachments: [{ filename: 'one.bin', content: small }],
        });
        if (!info.response.startsWith('250')) throw new Error(`SMTP: ${info.response}`);
        accepted++;
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        if (code === undefined || code < 400 || code >= 500) throw error;
        refused++;
        await sleep(1000);
      }
    }
  } finally {
    transport.close();
  }
  return [accepted, refused];
}

/** Least-squares slope of (seconds, MiB) samples, in MiB per minute. */
function slopePerMinute(samples: readonly { s: number; mib: number }[]): number {
  const n = samples.length;
  if (n < 2) return Number.NaN;
  const mx = samples.reduce((a, p) => a + p.s, 0) / n;
  const my = samples.reduce((a, p) => a + p.mib, 0) / n;
  const sxy = samples.reduce((a, p) => a + (p.s - mx) * (p.mib - my), 0);
  const sxx = samples.reduce((a, p) => a + (p.s - mx) ** 2, 0);
  return (sxy / sxx) * 60;
}
const mean = (xs: readonly number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;

/** The child's V8 heap used and external memory (Buffers), MiB, from its prom-client gauges. */
async function heapOf(url: string, token: string): Promise<{ heap: number; external: number } | undefined> {
  try {
    const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) return undefined;
    const text = await res.text();
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN);
    return {
      heap: gauge('nodejs_heap_size_used_bytes') / MIB,
      external: gauge('nodejs_external_memory_bytes') / MIB,
    };
  } catch {
    return undefined;
  }
}

const dir = tempDir('tern-bench-inbound-memory-');
const port = 40_000 + Math.floor(Math.random() * 20_000);
const mxPort = port + 1;
const jwtSecret = randomSecret(32);
const metricsToken = randomSecret(24);
const tern = await startTern({
  main: MAIN,
  env: {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? dir.path,
    HOST: '127.0.0.1',
    DATA_DIR: join(dir.path, 'data'),
    INBOUND_SMTP_PORT: String(mxPort),
    INBOUND_DOMAIN,
    ...freshSecrets(jwtSecret),
    METRICS_TOKEN: metricsToken,
  },
  port,
  logFile: join(dir.path, 'tern.log'),
});
bound.watch(tern.child);
const pid = tern.child.pid!;
const sampler = sampleRss(pid);
const figures: Figure[] = [];
const details: Record<string, unknown> = {
  main: MAIN,
  clients: CLIENTS,
  seconds: SECONDS,
  messageBytes: MESSAGE_RAW_BYTES,
  bigBytes: BIG_RAW_BYTES,
};
try {
  const jwt = signDashboardToken({
    secret: jwtSecret,
    tenantId: 'inbound_memory',
    role: 'owner',
    expiresInSeconds: 3600,
  });
  const res = await fetch(`${tern.url}/inbound/domain`, { headers: { authorization: `Bearer ${jwt}` } });
  if (!res.ok) throw new Error(`GET /inbound/domain: ${res.status} ${await res.text()}`);
  const to = `support@${((await res.json()) as { domain: string }).domain}`;

  sampler.phase('baseline');
  await sleep(3000);

  // The RSS every second of the load, for the slope.
  const series: { s: number; mib: number }[] = [];
  const loadStart = performance.now();
  const everySecond = setInterval(() => {
    const m = readMemory(pid);
    if (m) series.push({ s: (performance.now() - loadStart) / 1000, mib: m.rssMiB });
  }, 1000);
  const windowMs = (SECONDS * 1000) / WINDOWS;
  const until = loadStart + SECONDS * 1000;
  const load = Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(mxPort, n, to, until)));
  for (let w = 0; w < WINDOWS; w++) {
    sampler.phase(`load-${w}`);
    await sleep(windowMs);
  }
  clearInterval(everySecond);
  sampler.phase('load-end');
  const counts = await load;
  const accepted = counts.reduce((a, [n]) => a + n, 0);
  const refused = counts.reduce((a, [, r]) => a + r, 0);
  sampler.phase('drain');
  await sleep(15_000);

  // The big message, composed once up front (its exact MIME size), sent as raw bytes.
  const bigMime = await new MailComposer({
    from: 'Big <big@mta.test>',
    to,
    subject: '30 MB attachment',
    text: 'the attachment',
    attachments: [{ filename: 'big.bin', content: randomBytes(BIG_RAW_BYTES) }],
  })
    .compile()
    .build();
  const heapBefore = await heapOf(tern.url, metricsToken);
  sampler.phase('before-big');
  await sleep(1000);
  sampler.phase('big');
  let heapPeak = heapBefore ?? { heap: Number.NaN, external: Number.NaN };
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const h = await heapOf(tern.url, metricsToken);
      if (h && h.heap + h.external > heapPeak.heap + heapPeak.external) heapPeak = h;
      await sleep(100);
    }
  })();
  const t = performance.now();
  const transport = transportOf(mxPort, '127.0.1.100');
  try {
    const info = await transport.sendMail({ envelope: { from: 'big@mta.test', to: [to] }, raw: bigMime });
    if (!info.response.startsWith('250')) throw new Error(`SMTP: ${info.response}`);
  } finally {
    transport.close();
  }
  const bigSeconds = (performance.now() - t) / 1000;
  sampler.phase('after');
  await sleep(3000);
  polling = false;
  await poll;
  sampler.phase('end');

  const s = sampler.summary();
  const peaks = Array.from({ length: WINDOWS }, (_, w) => s[`load-${w}`]!.peakMiB);
  const baseline = s.baseline!.lastMiB;
  const beforeBig = s['before-big']!.lastMiB;
  const bigPeak = Math.max(s.big!.peakMiB, s.after!.peakMiB);
  const rssOver = bigPeak - beforeBig;
  const heapOver =
    heapPeak.heap + heapPeak.external - ((heapBefore?.heap ?? 0) + (heapBefore?.external ?? 0));
  const bigMiB = BIG_RAW_BYTES / MIB;
  const mimeMiB = bigMime.length / MIB;
  const slope = slopePerMinute(series);
  const secondHalf = slopePerMinute(series.filter((p) => p.s >= SECONDS / 2));
  const between = (a: number, b: number) => series.filter((p) => p.s >= a && p.s < b).map((p) => p.mib);
  const early = mean(between(10, 20));
  const late = mean(between(SECONDS - 10, SECONDS + 1));
  const mbPerSecond = (accepted * (MESSAGE_RAW_BYTES * (4 / 3))) / MIB / SECONDS;
  const every5 = series.filter((_, i) => i % 5 === 4).map((p) => round(p.mib, 0));
  details.rssEverySecond = series.map((p) => round(p.mib, 0));
  console.error(
    `[inbound-memory] ${MAIN}\n` +
      `  ${CLIENTS} clients × 1 MB for ${SECONDS} s: ${accepted} stored (${round(mbPerSecond)} MB/s), ${refused} answered 4xx\n` +
      `  RSS baseline ${round(baseline)} MiB; every 5 s of the load: ${every5.join(' ')} MiB\n` +
      `  slope ${round(slope)} MiB/min (second half ${round(secondHalf)}); last 10 s ${round(early > 0 ? late / early : Number.NaN, 2)}× the 10–20 s mean; ` +
      `sixth peaks ${peaks.map((p) => round(p)).join(' / ')} MiB\n` +
      `  30 MB attachment (${round(mimeMiB)} MiB of MIME): RSS ${round(beforeBig)} → peak ${round(bigPeak)} MiB ` +
      `(+${round(rssOver)}, ${round(rssOver / bigMiB, 2)}× the attachment) in ${round(bigSeconds)} s; ` +
      `heap+external ${round((heapBefore?.heap ?? 0) + (heapBefore?.external ?? 0))} → ${round(heapPeak.heap + heapPeak.external)} MiB ` +
      `(heap ${round(heapPeak.heap)}, external ${round(heapPeak.external)}); RSS 3 s after ${round(s.after!.lastMiB)} MiB`,
  );
  const fig = (metric: string, value: number, unit: string, target?: Target) =>
    figures.push({
      bench: 'inbound-memory',
      variant: 'npm start',
      metric,
      value: round(value, 2),
      unit,
      ...(target ? { target } : {}),
    });
  fig('baseline RSS', baseline, 'MiB');
  fig(`messages of 1 MB stored (${CLIENTS} clients, ${SECONDS} s)`, accepted, '');
  fig('messages answered 4xx (then sent again)', refused, '');
  fig('RSS slope over the load (least squares, 1 s samples)', slope, 'MiB/min');
  fig('RSS slope over its second half', secondHalf, 'MiB/min');
  fig('RSS mean, last 10 s / 10–20 s (flat: ≤ 1.05)', late / early, '×', { op: '<=', value: 1.05 });
  for (const [w, peak] of peaks.entries()) fig(`peak RSS, sixth ${w + 1} of the load`, peak, 'MiB');
  fig('last sixth peak / first sixth peak', peaks[WINDOWS - 1]! / peaks[0]!, '×');
  fig('RSS before the 30 MB attachment', beforeBig, 'MiB');
  fig('peak RSS, one 30 MB attachment', bigPeak, 'MiB');
  fig('peak RSS over the RSS before it', rssOver, 'MiB');
  fig('peak RSS over before / attachment size (30 MB)', rssOver / bigMiB, '×', { op: '<=', value: 2 });
  fig(`peak RSS over before / message size (${round(mimeMiB)} MiB of MIME)`, rssOver / mimeMiB, '×');
  fig('peak heap + external over before it (sampled)', heapOver, 'MiB');
  fig('peak heap + external over before / attachment size', heapOver / bigMiB, '×', { op: '<=', value: 2 });
  fig('RSS 3 s after the 30 MB attachment', s.after!.lastMiB, 'MiB');
  fig('VmHWM (high-water, whole run)', s.end!.hwmMiB, 'MiB');
  const warnings = logWarnings(tern.logFile);
  if (Object.keys(warnings).length > 0)
    console.error(`[inbound-memory] warnings: ${JSON.stringify(warnings)}`);
} finally {
  sampler.stop();
  await tern.stop();
  dir.remove();
}

const result: BenchResult = {
  bench: 'inbound-memory',
  figures,
  details,
  rssMiB: rssMiB(),
  wallMs: performance.now() - started,
};
emitResult(result);
