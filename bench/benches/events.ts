import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import {
  type EventWriterReport,
  type StreamClients,
  startEventWriter,
  startStreamClients,
} from '../lib/event-stream-load.js';
import { load, startCeiling } from '../lib/outside-load.js';
import { emitMeasured, type Figure, withPeakRss } from '../lib/report.js';
import { readMemory } from '../lib/rss-sampler.js';
import { benchEnv, createFreshDatabase, pollUntil, quick, runTag, tempDir } from '../lib/services.js';
import { round } from '../lib/stats.js';
import {
  apiLogDetails,
  createApiKey,
  ownerJwt,
  productionEnv,
  startTern,
  type TernProcess,
} from '../lib/tern-process.js';

const num = (name: string, quickValue: number, value: number) => {
  const raw = Number(process.env[name]);
  return Number.isFinite(raw) && raw > 0 ? raw : quick ? quickValue : value;
};
const STREAMS = num('BENCH_EVENTS_STREAMS', 200, 1000);
const TENANTS = num('BENCH_EVENTS_TENANTS', 20, 20);
const RATE = num('BENCH_EVENTS_RATE', 500, 2000);
const SECONDS = num('BENCH_EVENTS_SECONDS', 5, 10);
const MAX_SECONDS = num('BENCH_EVENTS_MAX_SECONDS', 2, 4);
const LIST_SECONDS = num('BENCH_EVENTS_LIST_SECONDS', 1, 3);
const ROUNDS = num('BENCH_EVENTS_ROUNDS', 1, 2);
const BATCH = 120;
const CPU_PROF = process.env.BENCH_EVENTS_CPU_PROF;
const SERVERS = process.env.BENCH_EVENTS_SERVERS === '1';
const LIST_ONLY = process.env.BENCH_EVENTS_ONLY === 'list';
// BENCH_EVENTS_MAIN: another build of main.js (e.g. the one before a change, beside dist/ so that it
// resolves the same node_modules), measured under the same conditions.
const MAIN = resolve(
  process.env.BENCH_EVENTS_MAIN ?? resolve(import.meta.dirname, '../../services/tern/dist/main.js'),
);
if (!existsSync(MAIN)) throw new Error(`${MAIN} missing: npm run build`);
const started = performance.now();
const env = benchEnv(process.env);
const tag = runTag();
const tenants = Array.from({ length: TENANTS }, (_, i) => `ev${i}_${tag}`);

const db = await createFreshDatabase(env.databaseUrl);
const dataDir = tempDir('tern-bench-events-');
const common: Record<string, string> = {
  ...productionEnv(
    db.url,
    process.env.BENCH_EVENTS_KAFKA === '1'
      ? { brokers: env.kafkaBrokers, topic: `tern-bench.events-${tag}` }
      : undefined,
  ),
  DATA_DIR: join(dataDir.path, 'data'),
  // `EVENT_PAGE_CACHE_MB=0 npm run bench -- events`: every page read from the rows (the cache's miss path).
  ...(process.env.EVENT_PAGE_CACHE_MB === undefined
    ? {}
    : { EVENT_PAGE_CACHE_MB: process.env.EVENT_PAGE_CACHE_MB }),
};
const PAGE_CACHE = process.env.EVENT_PAGE_CACHE_MB === '0' ? ', page cache off' : '';

const pool = new pg.Pool({ connectionString: db.url, max: 2 });
const figures: Figure[] = [];
const details: Record<string, unknown> = {
  streams: STREAMS,
  tenants: TENANTS,
  rate: RATE,
  seconds: SECONDS,
  maxSeconds: MAX_SECONDS,
  listSeconds: LIST_SECONDS,
  rounds: ROUNDS,
};
const fig = (variant: string, metric: string, value: number, unit: string, target?: Figure['target']) =>
  figures.push({ bench: 'events', variant, metric, value, unit, ...(target ? { target } : {}) });
const log = (line: string) => console.error(`[events] ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let server: TernProcess | undefined;
let ingest: TernProcess | undefined;
let clients: StreamClients | undefined;
details.mode = SERVERS ? 'servers: ingest | projector,api' : 'npm start';
try {
  const port = 40_000 + Math.floor(Math.random() * 20_000);
  const nodeFlags = CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : [];
  server = await startTern({
    main: MAIN,
    args: SERVERS ? ['--services=projector,api'] : [],
    env: common,
    port,
    logFile: join(dataDir.path, 'tern.log'),
    nodeFlags,
  });
  const url = server.url;
  const pid = server.child.pid!;
  if (SERVERS)
    ingest = await startTern({
      main: MAIN,
      args: ['--services=ingest'],
      env: { ...common, DATA_DIR: join(dataDir.path, 'ingest'), INGEST_WORKERS: '1' },
      port: port + 1,
      logFile: join(dataDir.path, 'ingest.log'),
      nodeFlags,
    });
  const writeUrl = ingest?.url ?? url;

  // --- One key with events:read per tenant ---------------------------------------------------------
  const keys = new Map<string, string>();
  for (const tenantId of tenants) {
    const jwt = ownerJwt(common.JWT_SECRET!, tenantId);
    keys.set(tenantId, await createApiKey(url, jwt, tenantId, 'stream reader', ['events:read']));
  }

  const streamed = async () =>
    Number((await pool.query('SELECT count(*)::bigint AS n FROM event_stream')).rows[0].n);
  /** Waits (≤ 90 s) until every accepted event is in the stream: the projector has caught up. */
  const drained = async (accepted: number) => {
    const ok = await pollUntil(async () => (await streamed()) >= accepted, {
      timeoutMs: 90_000,
      intervalMs: 200,
    });
    if (!ok) log(`projection not caught up after 90 s: ${await streamed()} of ${accepted} events`);
  };
  let accepted = 0;
  /** One writer phase: paced (`rate`) or unpaced (0), for `seconds`; the projected rate beside it. */
  const write = async (name: string, rate: number, seconds: number, to = tenants, atLeast = 0) => {
    const before = await streamed();
    const writer = await startEventWriter({
      url: writeUrl,
      ingestToken: common.INGEST_TOKEN!,
      tenants: to,
      eventsPerSec: rate,
      batch: BATCH,
      tag: `${tag}${name.replace(/\W/g, '')}`,
    });
    const t0 = performance.now();
    await sleep(seconds * 1000);
    // `atLeast`: until that many more events are in the stream (≤ 60 s).
    if (atLeast > 0)
      await pollUntil(async () => (await streamed()) - before >= atLeast, {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
    const report: EventWriterReport = await writer.stop();
    const inStream = (await streamed()) - before;
    const projected = inStream / ((performance.now() - t0) / 1000);
    accepted += report.acceptedEvents;
    if (report.failed > 0) log(`${name}: ${report.failed} failed requests: ${report.firstError}`);
    log(
      `${name}: ${Math.round(report.eventsPerSec)} events/s accepted, POST p99 ${round(report.postP99)} ms, ` +
        `${Math.round(projected)} events/s in the stream meanwhile`,
    );
    await drained(accepted);
    return { ...report, projected };
  };

  if (!LIST_ONLY) {
    // --- 1. Ingest without streams --------------------------------------------------------------------
    const alonePaced = await write('paced, no stream', RATE, SECONDS);
    const aloneMax = await write('unpaced, no stream', 0, MAX_SECONDS);

    // --- 2. Streams opened: RSS per stream ----------------------------------------------------------
    await sleep(1000);
    const rssBefore = readMemory(pid)?.rssMiB ?? Number.NaN;
    const heads = new Map<string, string>();
    for (const tenantId of tenants) {
      const res = await fetch(`${url}/events?order=newest&limit=1`, {
        headers: { authorization: `Bearer ${keys.get(tenantId)}` },
      });
      const page = (await res.json()) as { data: { cursor: string }[]; next: string };
      heads.set(tenantId, page.data[0]?.cursor ?? page.next);
    }
    clients = await startStreamClients({
      url,
      streams: Array.from({ length: STREAMS }, (_, i) => {
        const tenantId = tenants[i % TENANTS]!;
        return { key: keys.get(tenantId)!, after: heads.get(tenantId)! };
      }),
    });
    await sleep(2000);
    const opened = await clients.report();
    const rssAfter = readMemory(pid)?.rssMiB ?? Number.NaN;
    log(
      `${opened.open} of ${STREAMS} streams open (${opened.errors} refused: ${opened.firstError ?? '-'}), ` +
        `RSS ${round(rssBefore)} → ${round(rssAfter)} MiB`,
    );
    if (opened.open < STREAMS)
      throw new Error(`only ${opened.open} of ${STREAMS} streams opened: ${opened.firstError}`);

    // --- 3. Ingest while the streams follow ---------------------------------------------------------
    await clients.reset();
    const withPaced = await write('paced, with streams', RATE, SECONDS);
    await sleep(2000); // the last events on their way to the clients
    const lat = await clients.report();
    // The projector's share of that latency: from each POST (its subject's `t=`) to the event's row in
    // the stream (`recorded_at`, in the projector's transaction; one clock, this machine's).
    const inStream = (
      await pool.query<{ p50: number | null; p99: number | null }>(
        `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY lag) AS p50,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) AS p99
           FROM (SELECT extract(epoch FROM recorded_at) * 1000
                          - substr(payload -> 'data' ->> 'subject', 3)::bigint AS lag
                   FROM event_stream WHERE event_id LIKE $1) x`,
        [`em_s${tag}pacedwithstreams\\_%`],
      )
    ).rows[0];
    const perTenant = STREAMS / TENANTS;
    const expected = withPaced.acceptedEvents * perTenant;
    const rssStreaming = readMemory(pid)?.rssMiB ?? Number.NaN;
    log(
      `append → client: p50 ${lat.p50} ms, p99 ${lat.p99} ms, max ${lat.max} ms (append → in the stream: ` +
        `p50 ${Math.round(inStream?.p50 ?? Number.NaN)} ms, p99 ${Math.round(inStream?.p99 ?? Number.NaN)} ms); ${lat.messages} messages ` +
        `of ${Math.round(expected)} expected; ${lat.open} streams open; highest per second of arrival: ` +
        `${lat.maxPerSecond.join(' ')} ms`,
    );
    const withMax = await write('unpaced, with streams', 0, MAX_SECONDS);
    await clients.close();
    clients = undefined;

    const streamsVariant = `${STREAMS} streams, ${TENANTS} tenants, ${RATE} events/s${SERVERS ? ', servers mode' : ''}`;
    fig(streamsVariant, 'append → client p99', lat.p99, 'ms', { op: '<=', value: 1000 });
    fig(streamsVariant, 'append → client p50', lat.p50, 'ms');
    // What the tail adds is the difference: the rest is the projector's backlog.
    fig(
      streamsVariant,
      'append → in the stream (projected) p99',
      Math.round(inStream?.p99 ?? Number.NaN),
      'ms',
    );
    fig(
      streamsVariant,
      'append → in the stream (projected) p50',
      Math.round(inStream?.p50 ?? Number.NaN),
      'ms',
    );
    fig(streamsVariant, 'messages delivered / expected', (lat.messages / Math.max(1, expected)) * 100, '%');
    fig(streamsVariant, 'RSS per open stream (idle)', ((rssAfter - rssBefore) * 1024) / STREAMS, 'KiB');
    fig(streamsVariant, 'server RSS while streaming', rssStreaming, 'MiB');
    fig('ingest, paced, no stream', 'accepted', alonePaced.eventsPerSec, 'events/s');
    fig('ingest, paced, with streams', 'accepted', withPaced.eventsPerSec, 'events/s');
    fig('ingest, paced, no stream', 'POST p99', alonePaced.postP99, 'ms');
    fig('ingest, paced, with streams', 'POST p99', withPaced.postP99, 'ms');
    fig('ingest, unpaced, no stream', 'accepted', aloneMax.eventsPerSec, 'events/s');
    fig('ingest, unpaced, with streams', 'accepted', withMax.eventsPerSec, 'events/s');
    fig(
      'ingest, unpaced',
      'with streams / without',
      (withMax.eventsPerSec / aloneMax.eventsPerSec) * 100,
      '%',
    );
    // The tail follows the projector: when it projects less than is appended, the lag above is mostly its.
    fig('ingest, paced, no stream', 'projected into the stream', alonePaced.projected, 'events/s');
    fig('ingest, paced, with streams', 'projected into the stream', withPaced.projected, 'events/s');
    fig('ingest, unpaced, no stream', 'projected into the stream', aloneMax.projected, 'events/s');
    fig('ingest, unpaced, with streams', 'projected into the stream', withMax.projected, 'events/s');
    details.phases = { alonePaced, aloneMax, withPaced, withMax, opened, latency: lat, rssBefore, rssAfter };
  }

  // --- 4. A page of 1 000 events against the bare route --------------------------------------------
  const listTenant = tenants[0]!;
  const headers = { authorization: `Bearer ${keys.get(listTenant)}` };
  const listPath = '/events?limit=1000';
  // A full page: the list tenant gets the events it lacks (short phases leave it fewer than 1 000).
  const held = Number(
    (await pool.query('SELECT count(*)::int AS n FROM event_stream WHERE tenant_id = $1', [listTenant]))
      .rows[0].n,
  );
  if (held < 1000) await write('list tenant filled', RATE, 0, [listTenant], 1000 - held);
  const body = await (await fetch(`${url}${listPath}`, { headers })).text();
  const listed = (JSON.parse(body) as { data: unknown[] }).data.length;
  if (listed < 1000) log(`the list tenant holds ${listed} events only: the page is that size`);
  details.listBytes = Buffer.byteLength(body);
  details.listEvents = listed;
  // The body as one encoded buffer, as the api sends it: the same advantage.
  const ceiling = await startCeiling({ list: body }, { buffers: true });
  const runs: { api: number[]; bare: number[]; apiCpuUs: number[]; bareCpuUs: number[] } = {
    api: [],
    bare: [],
    apiCpuUs: [],
    bareCpuUs: [],
  };
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const bare = await load(`${ceiling.url}/list`, {
        connections: 16,
        seconds: LIST_SECONDS,
        pid: ceiling.pid,
      });
      const api = await load(`${url}${listPath}`, { connections: 16, seconds: LIST_SECONDS, headers, pid });
      if (api.failed > 0 || bare.failed > 0)
        throw new Error(`list: ${api.failed} / ${bare.failed} requests failed`);
      runs.bare.push(bare.reqPerSec);
      runs.api.push(api.reqPerSec);
      runs.bareCpuUs.push(bare.serverCpuUs);
      runs.apiCpuUs.push(api.serverCpuUs);
      log(
        `list round ${r + 1}: api ${round(api.reqPerSec)} req/s, bare route ${round(bare.reqPerSec)} req/s`,
      );
    }
  } finally {
    await ceiling.close();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
  const listVariant = `GET /events?limit=1000 (${listed} events, ${Math.round(Buffer.byteLength(body) / 1024)} KiB), 16 connections${SERVERS ? ', servers mode' : ''}${PAGE_CACHE}`;
  fig(listVariant, 'api', median(runs.api), 'req/s');
  fig(listVariant, 'bare route, same bytes, own process', median(runs.bare), 'req/s');
  fig(listVariant, 'ratio to the bare route', (median(runs.api) / median(runs.bare)) * 100, '%', {
    op: '>=',
    value: 50,
  });
  // Where the api's time goes: its main thread's CPU per page (the rest is Postgres building the page).
  fig(listVariant, 'api main-thread CPU per request', median(runs.apiCpuUs) / 1000, 'ms');
  fig(listVariant, 'bare route main-thread CPU per request', median(runs.bareCpuUs) / 1000, 'ms');
  details.list = runs;
  Object.assign(details, apiLogDetails(server.logFile));
} finally {
  await clients?.close();
  await ingest?.stop();
  await server?.stop();
  await pool.end();
  if (process.env.BENCH_KEEP_DB === '1') log(`database kept: ${db.url}`);
  else await db.drop();
  dataDir.remove();
}

emitMeasured('events', figures, withPeakRss(details), started);
