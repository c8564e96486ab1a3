/**
 * Memory of concurrent large messages (issue 40 item 8), measured from outside as users run Tern:
 * the built `services/tern/dist/main.js` (`npm start`: every service in one process, embedded
 * stores in a fresh DATA_DIR, SMTP submission on `SMTP_SUBMISSION_PORT` with the generated
 * development TLS pair), its VmRSS and VmHWM read from /proc/<pid>/status every 100 ms.
 *
 * Phases: baseline (3 s after three tenants' `email:send` keys are made), three concurrent
 * `POST /emails/send` of the largest message allowed (one attachment whose base64 is 40 MiB less
 * 64 KiB: SPEC §22 counts the base64 text toward the 40 MB), one per tenant; then three concurrent
 * messages of a 30 000 000-byte attachment over SMTP submission (nodemailer; the MIME message,
 * base64 with line breaks, ≈ 41 MB, under the listener's 40 MiB); then 30 s idle (the process
 * releases memory after 15 s without a request). A sender refused for the content budget (429
 * with Retry-After over HTTP, 451 over SMTP) waits and sends again, as a client does; refusals
 * are counted. Every message must end accepted, else the bench fails.
 *
 * BENCH_BIG_SENDS_BEFORE=<another build's main.js> (e.g. a worktree of the commit before the fix,
 * built): that build runs first, alone, then this one, and both are printed side by side.
 * BENCH_BIG_SENDS_IDLE_SECONDS (default 30). Needs `npm run build` first.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { signDashboardToken } from '@tern/auth';
import nodemailer from 'nodemailer';
import { type BenchResult, emitResult, type Figure } from '../lib/report.js';
import { sampleRss } from '../lib/rss-sampler.js';
import { tempDir } from '../lib/services.js';
import { round, rssMiB } from '../lib/stats.js';
import { boundBench, freshSecrets, logWarnings, randomSecret, startTern } from '../lib/tern-process.js';

const MAIN = resolve(import.meta.dirname, '../../services/tern/dist/main.js');
const BEFORE = process.env.BENCH_BIG_SENDS_BEFORE ? resolve(process.env.BENCH_BIG_SENDS_BEFORE) : undefined;
const IDLE_SECONDS = Number(process.env.BENCH_BIG_SENDS_IDLE_SECONDS ?? 30);
const CONCURRENT = 3;
/** Base64 of the HTTP attachment: the 40 MiB message limit less 64 KiB for the rest. */
const HTTP_B64_CHARS = 40 * 1024 * 1024 - 64 * 1024;
const HTTP_RAW_BYTES = (HTTP_B64_CHARS / 4) * 3;
const SMTP_RAW_BYTES = 30_000_000;
/** Each phase's bound: a sender still refused after this fails the bench. */
const PHASE_BOUND_MS = 90_000;
for (const main of [MAIN, BEFORE])
  if (main && !existsSync(main)) throw new Error(`${main} missing: npm run build`);

const started = performance.now();
const bound = boundBench('big-sends', 900);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const raw = randomBytes(HTTP_RAW_BYTES);
const httpBody = (tenant: string) =>
  JSON.stringify({
    from: 'Big <big@acme.test>',
    to: 'delivered@sandbox.test',
    subject: `40 MB over HTTP (${tenant})`,
    text: 'the attachment',
    attachments: [
      { filename: 'big.bin', content: raw.toString('base64'), contentType: 'application/octet-stream' },
    ],
  });

interface BuildFigures {
  baselineMiB: number;
  httpPeakMiB: number;
  httpHwmMiB: number;
  httpSeconds: number;
  httpRefused: number;
  smtpPeakMiB: number;
  smtpHwmMiB: number;
  smtpSeconds: number;
  smtpRefused: number;
  afterMiB: number;
  afterPeakMiB: number;
  warnings: Record<string, number>;
}

async function sendHttp(url: string, key: string, body: string): Promise<number> {
  const deadline = performance.now() + PHASE_BOUND_MS;
  for (let refused = 0; ; refused++) {
    const res = await fetch(`${url}/emails/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
    });
    const text = await res.text();
    if (res.ok) return refused;
    if (res.status !== 429 || performance.now() > deadline)
      throw new Error(`POST /emails/send: ${res.status} ${text.slice(0, 300)}`);
    await sleep(Number(res.headers.get('retry-after') ?? 2) * 1000);
  }
}

async function sendSmtp(port: number, ca: string, key: string, tenant: string): Promise<number> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    requireTLS: true,
    tls: { ca, servername: 'localhost' },
    auth: { user: 'apikey', pass: key },
    socketTimeout: 120_000,
  });
  const deadline = performance.now() + PHASE_BOUND_MS;
  try {
    for (let refused = 0; ; refused++) {
      try {
        const info = await transport.sendMail({
          from: 'Big <big@acme.test>',
          to: 'delivered@sandbox.test',
          subject: `40 MB over SMTP (${tenant})`,
          text: 'the attachment',
          attachments: [{ filename: 'big.bin', content: raw.subarray(0, SMTP_RAW_BYTES) }],
        });
        if (!/queued as em_/.test(info.response)) throw new Error(`SMTP: ${info.response}`);
        return refused;
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        if (code !== 451 || performance.now() > deadline) throw error;
        await sleep(2000);
      }
    }
  } finally {
    transport.close();
  }
}

async function measure(build: string, main: string): Promise<BuildFigures> {
  const dir = tempDir(`tern-bench-big-sends-${build}-`);
  const port = 40_000 + Math.floor(Math.random() * 20_000);
  const smtpPort = port + 1;
  const jwtSecret = randomSecret(32);
  const tern = await startTern({
    main,
    // As `npm start` runs it on a laptop: embedded stores (no DATABASE_URL, KAFKA_BROKERS).
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? dir.path,
      HOST: '127.0.0.1',
      DATA_DIR: join(dir.path, 'data'),
      SMTP_SUBMISSION_PORT: String(smtpPort),
      ...freshSecrets(jwtSecret),
    },
    port,
    logFile: join(dir.path, 'tern.log'),
  });
  bound.watch(tern.child);
  const sampler = sampleRss(tern.child.pid!);
  try {
    const tenants = Array.from({ length: CONCURRENT }, (_, i) => `big_${build}_${i}`);
    const keys = await Promise.all(
      tenants.map(async (tenant) => {
        const jwt = signDashboardToken({
          secret: jwtSecret,
          tenantId: tenant,
          role: 'owner',
          expiresInSeconds: 3600,
        });
        const res = await fetch(`${tern.url}/tenants/${tenant}/api-keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'big', scopes: ['email:send'] }),
        });
        if (res.status !== 201) throw new Error(`POST api-keys: ${res.status} ${await res.text()}`);
        return ((await res.json()) as { key: string }).key;
      }),
    );
    const bodies = tenants.map(httpBody);
    const ca = readFileSync(join(dir.path, 'data', 'smtp-tls', 'cert.pem'), 'utf8');
    sampler.phase('baseline');
    await sleep(3000);

    sampler.phase('http');
    let t = performance.now();
    const httpRefused = await Promise.all(keys.map((key, i) => sendHttp(tern.url, key, bodies[i]!)));
    const httpSeconds = (performance.now() - t) / 1000;
    console.error(`[big-sends] ${build}: HTTP ${CONCURRENT} × 40 MB in ${round(httpSeconds)} s`);

    sampler.phase('smtp');
    t = performance.now();
    const smtpRefused = await Promise.all(keys.map((key, i) => sendSmtp(smtpPort, ca, key, tenants[i]!)));
    const smtpSeconds = (performance.now() - t) / 1000;
    console.error(`[big-sends] ${build}: SMTP ${CONCURRENT} × 40 MB in ${round(smtpSeconds)} s`);

    sampler.phase('after');
    await sleep(IDLE_SECONDS * 1000);
    sampler.phase('end');
    const s = sampler.summary();
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    return {
      baselineMiB: s.baseline!.lastMiB,
      httpPeakMiB: s.http!.peakMiB,
      httpHwmMiB: s.http!.hwmMiB,
      httpSeconds,
      httpRefused: sum(httpRefused),
      smtpPeakMiB: s.smtp!.peakMiB,
      smtpHwmMiB: s.smtp!.hwmMiB,
      smtpSeconds,
      smtpRefused: sum(smtpRefused),
      afterMiB: s.after!.lastMiB,
      afterPeakMiB: s.after!.peakMiB,
      warnings: logWarnings(tern.logFile),
    };
  } finally {
    sampler.stop();
    await tern.stop();
    dir.remove();
  }
}

const runs: Record<string, BuildFigures> = {};
const builds: [string, string][] = BEFORE
  ? [
      ['before', BEFORE],
      ['after', MAIN],
    ]
  : [['after', MAIN]];
for (const [build, main] of builds) {
  runs[build] = await measure(build, main);
  console.error(
    `[big-sends] ${build}: ${JSON.stringify(runs[build], (_k, v) => (typeof v === 'number' ? round(v) : v))}`,
  );
}

const figures: Figure[] = [];
for (const [build, r] of Object.entries(runs)) {
  const fig = (metric: string, value: number, unit: string) =>
    figures.push({ bench: 'big-sends', variant: build, metric, value: round(value), unit });
  fig('baseline RSS', r.baselineMiB, 'MiB');
  fig(`peak RSS, ${CONCURRENT} × 40 MB HTTP`, r.httpPeakMiB, 'MiB');
  fig('VmHWM after HTTP', r.httpHwmMiB, 'MiB');
  fig(`HTTP sends answered in`, r.httpSeconds, 's');
  fig('HTTP 429 (then retried)', r.httpRefused, '');
  fig(`peak RSS, ${CONCURRENT} × 40 MB SMTP`, r.smtpPeakMiB, 'MiB');
  fig('VmHWM (high-water, whole run)', r.smtpHwmMiB, 'MiB');
  fig('SMTP sends answered in', r.smtpSeconds, 's');
  fig('SMTP 451 (then retried)', r.smtpRefused, '');
  fig(`RSS ${IDLE_SECONDS} s after`, r.afterMiB, 'MiB');
}
if (runs.before && runs.after) {
  const sideBySide = (metric: string, k: keyof BuildFigures) =>
    `${metric.padEnd(34)} ${String(round(runs.before![k] as number)).padStart(8)} ${String(round(runs.after![k] as number)).padStart(8)}`;
  console.log(
    [
      `\nbig-sends (MiB)                    ${'before'.padStart(8)} ${'after'.padStart(8)}`,
      sideBySide('baseline', 'baselineMiB'),
      sideBySide(`peak, ${CONCURRENT} × 40 MB HTTP`, 'httpPeakMiB'),
      sideBySide(`peak, ${CONCURRENT} × 40 MB SMTP`, 'smtpPeakMiB'),
      sideBySide('high-water (VmHWM)', 'smtpHwmMiB'),
      sideBySide(`${IDLE_SECONDS} s after`, 'afterMiB'),
    ].join('\n'),
  );
}
const result: BenchResult = {
  bench: 'big-sends',
  figures,
  details: {
    runs,
    httpAttachmentBytes: HTTP_RAW_BYTES,
    httpBase64Chars: HTTP_B64_CHARS,
    smtpAttachmentBytes: SMTP_RAW_BYTES,
  },
  rssMiB: rssMiB(),
  wallMs: performance.now() - started,
};
emitResult(result);
