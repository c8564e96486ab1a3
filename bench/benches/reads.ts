import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { load, probe, startCeiling, startWriter } from '../lib/outside-load.js';
import { readBreakdown } from '../lib/read-breakdown.js';
import { type Runs, readsFigures } from '../lib/reads-figures.js';
import { emitMeasured, type Figure, withPeakRss } from '../lib/report.js';
import { benchEnv, createFreshDatabase, quick, runTag, tempDir } from '../lib/services.js';
import { round } from '../lib/stats.js';
import {
  apiLogDetails,
  createApiKey,
  fillLogs,
  ownerJwt,
  productionEnv,
  startTern,
  type TernProcess,
} from '../lib/tern-process.js';

const ENTRIES = Number(process.env.BENCH_READS_ENTRIES ?? (quick ? 10_000 : 30_000));
const SECONDS = Number(process.env.BENCH_READS_SECONDS ?? (quick ? 1 : 2));
const ROUNDS = Number(process.env.BENCH_READS_ROUNDS ?? 2);
const WRITE_RATE = Number(process.env.BENCH_READS_WRITE_RATE ?? 2400);
const CPU_PROF = process.env.BENCH_READS_CPU_PROF;
const PHASES = new Set((process.env.BENCH_READS_PHASES ?? 'idle,writing,variants,breakdown').split(','));
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
const basePort = 40_000 + Math.floor(Math.random() * 20_000);
const common = productionEnv(
  db.url,
  process.env.BENCH_READS_KAFKA === '1'
    ? { brokers: env.kafkaBrokers, topic: `tern-bench.reads-${tag}` }
    : undefined,
);
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
    port: basePort,
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
  await fillLogs(pool, TENANT, ENTRIES);
  const apiUrl = servers.api.url;

  // --- Credentials and bodies -------------------------------------------------------------------
  const jwt = ownerJwt(common.JWT_SECRET!, TENANT);
  const apiKey = await createApiKey(apiUrl, jwt, TENANT, 'reader', ['email:read']);
  const keyHeaders = { authorization: `Bearer ${apiKey}` };
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

  if (BEFORE) {
    // Each build runs alone below, in turn.
    await servers.api.stop();
    delete servers.api;
  }
  const ceiling = await startCeiling({ page1, deep });
  type Who = 'bare route' | 'api' | 'before';
  const measured: Record<string, Runs> = {};
  const warm = new Set<string>();
  /** One load of `url` at 32 connections; the first of each server process warms it for 1 s. */
  const once = async (
    name: string,
    who: Who,
    url: string,
    headers: Record<string, string>,
    pid: number | undefined,
  ) => {
    const r = await load(url, {
      connections: 32,
      seconds: SECONDS,
      headers,
      warmup: !warm.has(`${pid} ${url}`),
      pid,
    });
    warm.add(`${pid} ${url}`);
    if (r.failed > 0) throw new Error(`${url}: ${r.failed} of ${r.total} requests failed`);
    const runs: Runs = measured[name] ?? {};
    measured[name] = runs;
    runs[who] = {
      reqPerSec: [...(runs[who]?.reqPerSec ?? []), r.reqPerSec],
      cpuUs: [...(runs[who]?.cpuUs ?? []), r.serverCpuUs],
    };
  };
  /** The ceiling, then the build's server: back to back, they see the same load of the machine. */
  const pair = async (
    name: string,
    who: 'api' | 'before',
    server: TernProcess,
    path: string,
    body: 'page1' | 'deep',
    headers = keyHeaders,
  ) => {
    await once(name, 'bare route', `${ceiling.url}/${body}`, {}, ceiling.pid);
    await once(name, who, `${server.url}${path}`, headers, server.child.pid);
  };
  const oneConn: Partial<Record<'api' | 'before', { p50: number[]; p99: number[] }>> = {};
  const writers: { eventsPerSec: number; projected: number; failed: number }[] = [];
  const count = async () =>
    Number(
      (await pool.query(`SELECT count(*) AS n FROM email_logs WHERE tenant_id = $1`, [TENANT])).rows[0].n,
    );

  try {
    // Every build runs alone (its own process, with the projector, sender… of `npm start`), in turn,
    // ROUNDS times, the order turning each round (before, after; after, before; …): the build that
    // runs first in a round reads 5–15 points higher, so neither may always be first.
    for (let round = 0; round < (PHASES.has('idle') ? ROUNDS : 0); round++) {
      const builds: ('api' | 'before')[] = !BEFORE
        ? ['api']
        : round % 2 === 0
          ? ['before', 'api']
          : ['api', 'before'];
      for (const build of builds) {
        const server = servers[build] ?? (await start(build, `r${round}`));
        servers[build] = server;
        await pair('logs page 1', build, server, page1Path, 'page1');
        await pair('logs deep page (cursor)', build, server, deepPath, 'deep');
        await pair('logs page 1, dashboard JWT', build, server, page1Path, 'page1', jwtHeaders);
        if (PHASES.has('writing')) {
          const writer = await startWriter({
            url: server.url,
            ingestToken: common.INGEST_TOKEN!,
            tenantId: TENANT,
            eventsPerSec: WRITE_RATE,
            batch: 120,
            tag: `${tag}${build}${round}`,
          });
          const rowsBefore = await count();
          const writeStarted = performance.now();
          let report: Awaited<ReturnType<typeof writer.stop>>;
          try {
            await new Promise((r) => setTimeout(r, 1000)); // the writer's first batches projected
            await pair('logs page 1, while writing', build, server, page1Path, 'page1');
            await pair('logs deep page (cursor), while writing', build, server, deepPath, 'deep');
            const p = await probe(`${server.url}${page1Path}`, keyHeaders, SECONDS);
            oneConn[build] = {
              p50: [...(oneConn[build]?.p50 ?? []), p.p50],
              p99: [...(oneConn[build]?.p99 ?? []), p.p99],
            };
          } finally {
            report = await writer.stop();
          }
          const projected = ((await count()) - rowsBefore) / ((performance.now() - writeStarted) / 1000);
          if (report.failed > 0)
            console.error(`[reads] writer: ${report.failed} failed requests: ${report.firstError}`);
          if (build === 'api')
            writers.push({ eventsPerSec: report.eventsPerSec, projected, failed: report.failed });
          console.error(
            `[reads] ${build}, round ${round + 1}: writer ${Math.round(report.eventsPerSec)} events/s accepted, ${Math.round(projected)} new entries/s projected`,
          );
        }
        if (build === 'api' && round === ROUNDS - 1) {
          Object.assign(details, apiLogDetails(server.logFile));
        }
        // Alone means alone: with two builds, each stops before the other starts.
        if (BEFORE || round === ROUNDS - 1) {
          await server.stop();
          delete servers[build];
        }
      }
    }

    // --- Where the time goes: page 1 with one piece off at a time (same data, restarted api) -----
    const variants: [string, string, Record<string, string>][] = [
      ['request logging off (LOG_LEVEL=warn)', 'nolog', { LOG_LEVEL: 'warn' }],
      ['limiter off (RATE_LIMIT_PER_MINUTE=0)', 'nolimit', { RATE_LIMIT_PER_MINUTE: '0' }],
    ];
    for (const [name, short, overrides] of PHASES.has('variants') ? variants : []) {
      const server = await start('api', short, overrides);
      servers.api = server;
      for (let round = 0; round < ROUNDS; round++)
        await pair(`logs page 1, ${name}`, 'api', server, page1Path, 'page1');
      await server.stop();
      delete servers.api;
    }

    figures.push(...readsFigures(measured, oneConn, writers));
    details.measured = measured;
  } finally {
    await ceiling.close();
  }

  // --- Where the time goes, in-process CPU per request (`lib/read-breakdown.ts`) ------------------
  if (PHASES.has('breakdown')) {
    const rows = await readBreakdown({
      databaseUrl: db.url,
      jwtSecret: common.JWT_SECRET!,
      apiKey,
      jwt,
      path: page1Path,
      requests: Number(process.env.BENCH_READS_BREAKDOWN_REQUESTS ?? (quick ? 200 : 500)),
      rounds: Math.max(3, ROUNDS),
    });
    for (const row of rows) {
      console.error(
        `[reads] in-process, ${row.variant}: ${round(row.cpuUsPerRequest, 1)} µs CPU per request`,
      );
      fig(`in-process: ${row.variant}`, 'CPU per request (app.inject)', row.cpuUsPerRequest, 'µs');
    }
  }
} finally {
  for (const server of Object.values(servers)) await server?.stop();
  await pool.end();
  await db.drop();
  dataDir.remove();
}

emitMeasured('reads', figures, withPeakRss(details), started);
