/**
 * Reads while writing, measured from outside (issue 29). What users run: the built
 * `services/tern/dist/main.js` (`npm start`, every service in one process) in its own process on
 * a fresh Postgres database (event log: a Postgres table, or Kafka with BENCH_READS_KAFKA=1; chDB
 * embedded: no ClickHouse server here), NODE_ENV=production, request logging at the default level
 * (`info`, into a file), the rate limiter on (RATE_LIMIT_PER_MINUTE raised so that the bench's
 * load is never refused), sealing on. The tenant holds BENCH_READS_ENTRIES log entries (default
 * 30 000, written with SQL as the projector leaves them); a program reads with an API key.
 *
 * The ceiling: a bare Fastify route in its OWN process answering the SAME bytes as a ready string.
 * autocannon (its own process) at 32 connections, the ceiling and the api in turn, ROUNDS times
 * (medians: the machine is shared, a pair measured back to back sees the same load): logs page 1,
 * a deep page (the cursor at ≈ 2/3 of the entries), page 1 with a dashboard JWT; then page 1 and
 * the deep page while a writer process posts events of new emails of the same tenant to
 * `POST /events` at BENCH_READS_WRITE_RATE events/s (default 2400; the achieved rate is printed),
 * and p50/p99 at one connection while writing. Beside req/s, the main thread's CPU per request of
 * each server (from /proc), steadier than req/s on a busy machine. Then, for where the time goes,
 * page 1 on the api restarted with request logging off (LOG_LEVEL=warn), then the limiter off.
 *
 * BENCH_READS_BEFORE=<another build's main.js> (e.g. a copy of services/tern/dist made before a
 * change, kept beside it: services/tern/dist-before/main.js): that build runs too, on the same
 * data, and every case measures ceiling, before, after in turn — before → after in the same run.
 * BENCH_READS_SECONDS per load (default 2), BENCH_READS_ROUNDS (2), BENCH_READS_PHASES
 * (`idle,writing,variants`), BENCH_READS_CPU_PROF=<dir>: the api writes a V8 CPU profile there.
 * Needs `npm run build` first.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { signDashboardToken } from '@tern/auth';
import pg from 'pg';
import { load, probe, startCeiling, startWriter } from '../lib/outside-load.js';
import { type BenchResult, emitResult, type Figure } from '../lib/report.js';
import { benchEnv, createFreshDatabase, runTag, tempDir } from '../lib/services.js';
import { round, rssMiB } from '../lib/stats.js';
import { fillLogs, logWarnings, requestLogLines, startTern, type TernProcess } from '../lib/tern-process.js';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const quick = process.argv.includes('--quick');
const ENTRIES = Number(process.env.BENCH_READS_ENTRIES ?? (quick ? 10_000 : 30_000));
const SECONDS = Number(process.env.BENCH_READS_SECONDS ?? (quick ? 1 : 2));
const ROUNDS = Number(process.env.BENCH_READS_ROUNDS ?? 2);
const WRITE_RATE = Number(process.env.BENCH_READS_WRITE_RATE ?? 2400);
const CPU_PROF = process.env.BENCH_READS_CPU_PROF;
const PHASES = new Set((process.env.BENCH_READS_PHASES ?? 'idle,writing,variants').split(','));
const MAIN = resolve(import.meta.dirname, '../../services/tern/dist/main.js');
const BEFORE = process.env.BENCH_READS_BEFORE ? resolve(process.env.BENCH_READS_BEFORE) : undefined;
for (const main of [MAIN, BEFORE])
  if (main && !existsSync(main)) throw new Error(`${main} missing: npm run build`);
const started = performance.now();
const env = benchEnv(process.env);
const tag = runTag();
const TENANT = `reads_${tag}`;

const db = await createFreshDatabase(env.databaseUrl);
const dataDir = tempDir('tern-bench-reads-');
const secret = (n: number) => randomBytes(n).toString('base64url');
const basePort = 40_000 + Math.floor(Math.random() * 20_000);
const common: Record<string, string> = {
  PATH: process.env.PATH ?? '',
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
  DATABASE_URL: db.url,
  JWT_SECRET: secret(32),
  INGEST_TOKEN: secret(32),
  TRACKING_SECRET: secret(24),
  WEBHOOK_SECRETS_KEY: secret(24),
  ENCRYPTION_KEY: secret(32),
  // On, as configured by default, but never refusing the bench's own load (≤ 1 000 000 a minute).
  RATE_LIMIT_PER_MINUTE: '1000000',
  ...(process.env.BENCH_READS_KAFKA === '1'
    ? { KAFKA_BROKERS: env.kafkaBrokers.join(','), KAFKA_TOPIC: `tern-bench.reads-${tag}` }
    : {}),
};
/** Each build has a port and a DATA_DIR (its chDB) of its own; both use the same database. */
const start = (
  build: 'api' | 'before',
  name: string,
  overrides: Record<string, string> = {},
  flags: string[] = [],
) =>
  startTern({
    main: build === 'api' ? MAIN : BEFORE!,
    env: { ...common, DATA_DIR: join(dataDir.path, `${build}-${name}`), ...overrides },
    port: basePort + (build === 'api' ? 0 : 1),
    logFile: join(dataDir.path, `${build}-${name}.log`),
    nodeFlags: flags,
  });

const pool = new pg.Pool({ connectionString: db.url, max: 2 });
const figures: Figure[] = [];
const details: Record<string, unknown> = {
  entries: ENTRIES,
  seconds: SECONDS,
  rounds: ROUNDS,
  writeRate: WRITE_RATE,
};
const servers: Partial<Record<'api' | 'before', TernProcess>> = {};
const fig = (variant: string, metric: string, value: number, unit: string, target?: Figure['target']) =>
  figures.push({ bench: 'reads', variant, metric, value, unit, ...(target ? { target } : {}) });
try {
  servers.api = await start('api', 'main', {}, CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : []);
  if (BEFORE) servers.before = await start('before', 'main');
  await fillLogs(pool, TENANT, ENTRIES);
  const apiUrl = servers.api.url;

  // --- Credentials and bodies -------------------------------------------------------------------
  const jwt = signDashboardToken({
    secret: common.JWT_SECRET!,
    tenantId: TENANT,
    role: 'owner',
    expiresInSeconds: 3600,
  });
  const created = await fetch(`${apiUrl}/tenants/${TENANT}/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'reader', scopes: ['email:read'] }),
  });
  if (created.status !== 201) throw new Error(`POST api-keys: ${created.status} ${await created.text()}`);
  const keyHeaders = { authorization: `Bearer ${((await created.json()) as { key: string }).key}` };
  const jwtHeaders = { authorization: `Bearer ${jwt}` };
  const text = async (path: string) => {
    const res = await fetch(`${apiUrl}${path}`, { headers: keyHeaders });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.text();
  };
  const page1Path = '/emails/logs?limit=20';
  const page1 = await text(page1Path);
  const total = (JSON.parse(page1) as { meta: { total: number } }).meta.total;
  if (total !== ENTRIES) throw new Error(`total ${total}, expected ${ENTRIES}`);
  const deepPageNo = Math.max(2, Math.floor((ENTRIES * 2) / 3 / 20));
  const there = JSON.parse(await text(`/emails/logs?limit=20&page=${deepPageNo}`)) as {
    meta: { nextCursor: string };
  };
  const deepPath = `/emails/logs?limit=20&cursor=${there.meta.nextCursor}`;
  const deep = await text(deepPath);
  details.bodyBytes = { page1: Buffer.byteLength(page1), deep: Buffer.byteLength(deep) };

  const ceiling = await startCeiling({ page1, deep });
  const warm = new Set<string>();
  const once = async (url: string, headers: Record<string, string>, pid: number | undefined) => {
    // One uncounted second the first time a URL is loaded: every route runs JIT-compiled code.
    const r = await load(url, { connections: 32, seconds: SECONDS, headers, warmup: !warm.has(url), pid });
    warm.add(url);
    if (r.failed > 0) throw new Error(`${url}: ${r.failed} of ${r.total} requests failed`);
    return r;
  };
  type Medians = { reqPerSec: number; cpuUs: number };
  const measured: Record<string, Record<string, { reqPerSec: number[]; cpuUs: number[] }>> = {};
  /** The ceiling and each build in turn, ROUNDS times; medians per server. */
  const pair = async (name: string, path: string, body: 'page1' | 'deep', headers = keyHeaders) => {
    const runs: Record<string, { reqPerSec: number[]; cpuUs: number[] }> = {};
    const targets: [string, string, number | undefined][] = [
      [`bare route`, `${ceiling.url}/${body}`, ceiling.pid],
    ];
    for (const build of ['before', 'api'] as const) {
      const server = servers[build];
      if (server) targets.push([build, `${server.url}${path}`, server.child.pid]);
    }
    for (let i = 0; i < ROUNDS; i++) {
      for (const [who, url, pid] of targets) {
        const r = await once(url, who === 'bare route' ? {} : headers, pid);
        runs[who] ??= { reqPerSec: [], cpuUs: [] };
        runs[who].reqPerSec.push(r.reqPerSec);
        runs[who].cpuUs.push(r.serverCpuUs);
      }
    }
    measured[name] = runs;
    const out: Record<string, Medians> = {};
    for (const [who, r] of Object.entries(runs))
      out[who] = { reqPerSec: median(r.reqPerSec), cpuUs: median(r.cpuUs) };
    const line = Object.entries(out)
      .map(
        ([who, m]) =>
          `${who} ${Math.round(m.reqPerSec)} req/s (${runs[who]!.reqPerSec.map(Math.round).join(', ')}), ${Math.round(m.cpuUs)} µs CPU`,
      )
      .join('; ');
    console.error(`[reads] ${name}: ${line}`);
    for (const [who, m] of Object.entries(out)) {
      const variant = who === 'api' ? name : who === 'before' ? `${name} [before]` : `${name} [bare route]`;
      fig(variant, 'req/s at 32 connections', m.reqPerSec, 'req/s');
      fig(variant, 'main-thread CPU per request', m.cpuUs, 'µs');
      if (who !== 'bare route') {
        const bare = out['bare route']!;
        fig(variant, 'CPU ratio: bare route / api per request', (bare.cpuUs / m.cpuUs) * 100, '%');
      }
    }
    return out;
  };
  const ratio = (name: string, of: Record<string, Medians>, ceilingReqPerSec: number, target = true) => {
    for (const who of ['before', 'api'] as const) {
      if (!of[who]) continue;
      fig(
        who === 'api' ? name : `${name} [before]`,
        'ratio to the bare route (same bytes, own process), 32 connections',
        (of[who].reqPerSec / ceilingReqPerSec) * 100,
        '%',
        target && who === 'api' ? { op: '>=', value: 40 } : undefined,
      );
    }
  };

  try {
    const p1 = await pair('logs page 1', page1Path, 'page1');
    ratio('logs page 1', p1, p1['bare route']!.reqPerSec);
    const dp = await pair('logs deep page (cursor)', deepPath, 'deep');
    ratio('logs deep page (cursor)', dp, dp['bare route']!.reqPerSec);
    const jwtP1 = await pair('logs page 1, dashboard JWT', page1Path, 'page1', jwtHeaders);
    ratio('logs page 1, dashboard JWT', jwtP1, jwtP1['bare route']!.reqPerSec, false);
    const idle = await probe(`${apiUrl}${page1Path}`, keyHeaders, Math.max(1, SECONDS));
    fig('logs page 1, idle', 'p50 at 1 connection', idle.p50, 'ms');
    fig('logs page 1, idle', 'p99 at 1 connection', idle.p99, 'ms');

    // --- While writing (into the api build's ingest; every build hears the projector's notices) ---
    if (PHASES.has('writing')) {
      const writer = await startWriter({
        url: apiUrl,
        ingestToken: common.INGEST_TOKEN!,
        tenantId: TENANT,
        eventsPerSec: WRITE_RATE,
        batch: 120,
        tag,
      });
      const count = async () =>
        Number(
          (await pool.query(`SELECT count(*) AS n FROM email_logs WHERE tenant_id = $1`, [TENANT])).rows[0].n,
        );
      const rowsBefore = await count();
      const writeStarted = performance.now();
      const oneConn: Record<string, Awaited<ReturnType<typeof probe>>> = {};
      let p1w: Record<string, Medians>;
      let dpw: Record<string, Medians>;
      try {
        await new Promise((r) => setTimeout(r, 1000)); // the writer's first batches projected
        p1w = await pair('logs page 1, while writing', page1Path, 'page1');
        dpw = await pair('logs deep page (cursor), while writing', deepPath, 'deep');
        for (const build of ['before', 'api'] as const) {
          const server = servers[build];
          if (server) oneConn[build] = await probe(`${server.url}${page1Path}`, keyHeaders, SECONDS);
        }
      } finally {
        details.writer = await writer.stop();
      }
      const writeSeconds = (performance.now() - writeStarted) / 1000;
      const projected = ((await count()) - rowsBefore) / writeSeconds;
      const written = details.writer as { eventsPerSec: number; failed: number; firstError?: string };
      if (written.failed > 0)
        console.error(`[reads] writer: ${written.failed} failed requests: ${written.firstError}`);
      console.error(
        `[reads] writer: ${Math.round(written.eventsPerSec)} events/s accepted, ${Math.round(projected)} new entries/s projected; page 1 at one connection: ${Object.entries(
          oneConn,
        )
          .map(([who, r]) => `${who} p50 ${round(r.p50, 2)} ms, p99 ${round(r.p99, 2)} ms`)
          .join('; ')}`,
      );
      // Against the idle ceiling (what the bare route serves on this machine), as the issue measured;
      // against the ceiling measured while writing beside it.
      ratio('logs page 1, while writing', p1w, p1['bare route']!.reqPerSec);
      ratio('logs deep page (cursor), while writing', dpw, dp['bare route']!.reqPerSec);
      ratio(
        'logs page 1, while writing, to the bare route while writing',
        p1w,
        p1w['bare route']!.reqPerSec,
        false,
      );
      ratio(
        'logs deep page, while writing, to the bare route while writing',
        dpw,
        dpw['bare route']!.reqPerSec,
        false,
      );
      for (const [who, r] of Object.entries(oneConn)) {
        const variant = who === 'api' ? 'logs page 1, while writing' : 'logs page 1, while writing [before]';
        fig(variant, 'p50 at 1 connection', r.p50, 'ms');
        fig(variant, 'p99 at 1 connection', r.p99, 'ms', who === 'api' ? { op: '<=', value: 10 } : undefined);
      }
      fig('writer', 'events accepted per second', written.eventsPerSec, 'events/s');
      fig('writer', 'new entries projected per second', projected, 'entries/s');
    }
    details.requestLogLines = requestLogLines(servers.api.logFile);
    details.apiWarnings = logWarnings(servers.api.logFile);
    for (const build of ['api', 'before'] as const) {
      await servers[build]?.stop();
      delete servers[build];
    }

    // --- Where the time goes: page 1 with one piece off at a time (same data, restarted api) -----
    const variants: [string, string, Record<string, string>][] = [
      ['request logging off (LOG_LEVEL=warn)', 'nolog', { LOG_LEVEL: 'warn' }],
      ['limiter off (RATE_LIMIT_PER_MINUTE=0)', 'nolimit', { RATE_LIMIT_PER_MINUTE: '0' }],
    ];
    for (const [name, short, overrides] of PHASES.has('variants') ? variants : []) {
      servers.api = await start('api', short, overrides);
      const r = await pair(`logs page 1, ${name}`, page1Path, 'page1');
      ratio(`logs page 1, ${name}`, r, r['bare route']!.reqPerSec, false);
      await servers.api.stop();
      delete servers.api;
    }
    details.measured = measured;
  } finally {
    await ceiling.close();
  }
} finally {
  for (const server of Object.values(servers)) await server?.stop();
  await pool.end();
  await db.drop();
  dataDir.remove();
}

const result: BenchResult = {
  bench: 'reads',
  figures,
  details: { ...details, maxRssMiB: round(process.resourceUsage().maxRSS / 1024, 1) },
  rssMiB: rssMiB(),
  wallMs: Math.round(performance.now() - started),
};
emitResult(result);
