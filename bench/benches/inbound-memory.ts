/**
 * Memory of the inbound MX listener under large mail (issue 43), measured from outside as users
 * run Tern: the built `services/tern/dist/main.js` (`npm start`: every service in one process,
 * embedded stores in a fresh DATA_DIR, the MX listener on `INBOUND_SMTP_PORT`), its VmRSS and VmHWM
 * read from /proc/<pid>/status every 100 ms.
 *
 * Phases: baseline (3 s); then 20 clients — each its own loopback address (127.0.1.<n>), so the
 * listener's per-client limits see 20 MTAs — send 1 MB messages (a 750 KiB attachment) to the
 * tenant's receiving address for `BENCH_INBOUND_MEMORY_SECONDS` (default 60), in six equal windows
 * whose RSS peaks are printed (flat: the last window's peak over the first's); then 15 s of drain;
 * then one message with a 30 000 000-byte attachment (≈ 41 MB of MIME, under INBOUND_MAX_BYTES'
 * 40 MiB default), whose peak is printed over the RSS before it. Every message must be answered
 * 250 (a 4xx is counted and the client waits 1 s, as an MTA would retry), else the bench fails.
 * Needs `npm run build` first.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { signDashboardToken } from '@tern/auth';
import nodemailer from 'nodemailer';
import { type BenchResult, emitResult, type Figure } from '../lib/report.js';
import { sampleRss } from '../lib/rss-sampler.js';
import { tempDir } from '../lib/services.js';
import { round, rssMiB } from '../lib/stats.js';
import { boundBench, logWarnings, startTern } from '../lib/tern-process.js';

const MAIN = resolve(import.meta.dirname, '../../services/tern/dist/main.js');
const SECONDS = Number(process.env.BENCH_INBOUND_MEMORY_SECONDS ?? 60);
const CLIENTS = 20;
const WINDOWS = 6;
const MESSAGE_RAW_BYTES = 750 * 1024;
const BIG_RAW_BYTES = 30_000_000;
const INBOUND_DOMAIN = 'in.bench.test';
if (!existsSync(MAIN)) throw new Error(`${MAIN} missing: npm run build`);

const started = performance.now();
const bound = boundBench('inbound-memory', 600);
const secret = (n: number) => randomBytes(n).toString('base64url');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const small = randomBytes(MESSAGE_RAW_BYTES);
const big = randomBytes(BIG_RAW_BYTES);

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

const dir = tempDir('tern-bench-inbound-memory-');
const port = 40_000 + Math.floor(Math.random() * 20_000);
const mxPort = port + 1;
const jwtSecret = secret(32);
const tern = await startTern({
  main: MAIN,
  env: {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? dir.path,
    HOST: '127.0.0.1',
    DATA_DIR: join(dir.path, 'data'),
    INBOUND_SMTP_PORT: String(mxPort),
    INBOUND_DOMAIN,
    JWT_SECRET: jwtSecret,
    INGEST_TOKEN: secret(32),
    TRACKING_SECRET: secret(24),
    WEBHOOK_SECRETS_KEY: secret(24),
    ENCRYPTION_KEY: secret(32),
  },
  port,
  logFile: join(dir.path, 'tern.log'),
});
bound.watch(tern.child);
const sampler = sampleRss(tern.child.pid!);
const figures: Figure[] = [];
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

  const windowMs = (SECONDS * 1000) / WINDOWS;
  const until = performance.now() + SECONDS * 1000;
  const load = Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(mxPort, n, to, until)));
  for (let w = 0; w < WINDOWS; w++) {
    sampler.phase(`load-${w}`);
    await sleep(windowMs);
  }
  sampler.phase('load-end');
  const counts = await load;
  const accepted = counts.reduce((a, [n]) => a + n, 0);
  const refused = counts.reduce((a, [, r]) => a + r, 0);
  sampler.phase('drain');
  await sleep(15_000);

  sampler.phase('big');
  const t = performance.now();
  const transport = transportOf(mxPort, '127.0.1.100');
  try {
    const info = await transport.sendMail({
      from: 'Big <big@mta.test>',
      to,
      subject: '30 MB attachment',
      text: 'the attachment',
      attachments: [{ filename: 'big.bin', content: big }],
    });
    if (!info.response.startsWith('250')) throw new Error(`SMTP: ${info.response}`);
  } finally {
    transport.close();
  }
  const bigSeconds = (performance.now() - t) / 1000;
  sampler.phase('after');
  await sleep(3000);
  sampler.phase('end');

  const s = sampler.summary();
  const peaks = Array.from({ length: WINDOWS }, (_, w) => s[`load-${w}`]!.peakMiB);
  const baseline = s.baseline!.lastMiB;
  const beforeBig = s.drain!.lastMiB;
  const bigPeak = s.big!.peakMiB;
  const mbPerSecond = (accepted * (MESSAGE_RAW_BYTES * (4 / 3))) / 1024 / 1024 / SECONDS;
  console.error(
    `[inbound-memory] ${CLIENTS} clients × 1 MB for ${SECONDS} s: ${accepted} stored (${round(mbPerSecond)} MB/s), ` +
      `${refused} answered 4xx; RSS baseline ${round(baseline)} MiB, window peaks ${peaks.map((p) => round(p)).join(' / ')} MiB; ` +
      `30 MB attachment: ${round(beforeBig)} → peak ${round(bigPeak)} MiB in ${round(bigSeconds)} s`,
  );
  const fig = (metric: string, value: number, unit: string, target?: Figure['target']) =>
    figures.push({
      bench: 'inbound-memory',
      variant: 'npm start',
      metric,
      value: round(value),
      unit,
      ...(target ? { target } : {}),
    });
  fig('baseline RSS', baseline, 'MiB');
  fig(`messages of 1 MB stored (${CLIENTS} clients, ${SECONDS} s)`, accepted, '');
  fig('messages answered 4xx (then sent again)', refused, '');
  for (const [w, peak] of peaks.entries()) fig(`peak RSS, window ${w + 1} of ${WINDOWS}`, peak, 'MiB');
  fig('last window peak / first window peak', peaks[WINDOWS - 1]! / peaks[0]!, '×');
  fig('RSS before the 30 MB attachment', beforeBig, 'MiB');
  fig('peak RSS, one 30 MB attachment', bigPeak, 'MiB');
  fig('peak over the RSS before it', bigPeak - beforeBig, 'MiB');
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
  details: { clients: CLIENTS, seconds: SECONDS, messageBytes: MESSAGE_RAW_BYTES, bigBytes: BIG_RAW_BYTES },
  rssMiB: rssMiB(),
  wallMs: performance.now() - started,
};
emitResult(result);
