/**
 * A long-running case (issue 32, item 6): steady load, an idle spell, renewed load — as an operator
 * saw it in servers mode (projector lag 6 500–10 700 and read p50 0.3–1.5 s in the first 25 s of
 * renewed load after an idle minute; deep-page and filter p99 growing over ten minutes).
 *
 * Per variant, on a fresh Kafka topic and a fresh Postgres database holding BENCH_SOAK_ENTRIES
 * log entries of the read tenant (filled with SQL, as the read-path bench does): the real
 * projector (runtime options) folds events appended at BENCH_SOAK_RATE events/s while the real api
 * app answers BENCH_SOAK_READS reads/s (page 1, a deep page, a status filter; 4 connections), for
 * LOAD seconds; then nothing for IDLE seconds; then the same load for RENEW seconds, and the lag
 * is followed until it drains. Figures per phase and 10-second window: read p50/p99, projector lag
 * (max), dead rows of the projection's tables, the share of Postgres block reads served from its
 * buffer cache.
 *
 * Variants: `vacuum-off` (this machine's Postgres runs with autovacuum off, so nothing removes
 * dead rows) and `vacuum-on`. The server-wide switch is off here and a per-table
 * `autovacuum_enabled` cannot turn on what the launcher does not run, so `vacuum-on` runs the
 * launcher's rule itself every BENCH_SOAK_NAPTIME seconds: VACUUM a table whose dead rows exceed
 * 50 + 20 % of its live rows, ANALYZE one whose changes since the last analyze exceed 50 + 10 %
 * (Postgres's defaults), for the run's database only.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { createEventStream, type EventStream } from '@tern/event-log';
import { createProjector } from '@tern/projector';
import { generateTraffic } from '../lib/events.js';
import { onKafkaLog, type VariantResult } from '../lib/log-variants.js';
import { openChdb } from '../lib/projection-stores.js';
import { startReadApi } from '../lib/read-api.js';
import { emitMeasured, type Figure, figureMaker } from '../lib/report.js';
import { benchEnv, runTag } from '../lib/services.js';
import {
  type AutovacuumLog,
  type Blocks,
  blocks,
  deadRows,
  emulateAutovacuum,
  fillSoakTenant,
  hitShare,
} from '../lib/soak-db.js';
import { distribution, round } from '../lib/stats.js';

const env = benchEnv(process.env);
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ENTRIES = num('BENCH_SOAK_ENTRIES', 300_000);
const RATE = num('BENCH_SOAK_RATE', 1500);
const READS = num('BENCH_SOAK_READS', 20);
const LOAD_S = num('BENCH_SOAK_LOAD_SECONDS', 30);
const IDLE_S = num('BENCH_SOAK_IDLE_SECONDS', 40);
const RENEW_S = num('BENCH_SOAK_RENEW_SECONDS', 20);
const NAPTIME_S = num('BENCH_SOAK_NAPTIME', 10);
const DRAIN_MAX_S = 60;
const VARIANTS = (process.env.BENCH_SOAK_VACUUM ?? 'off,on').split(',') as ('off' | 'on')[];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Phase = 'load' | 'idle' | 'renew' | 'drain';
interface Read {
  at: number;
  phase: Phase;
  path: string;
  ms: number;
}

/** Appends `events` at RATE per second for `seconds` (from `from`); returns where it stopped. */
async function pump(
  stream: EventStream,
  events: readonly unknown[],
  from: number,
  seconds: number,
): Promise<number> {
  const t0 = performance.now();
  let i = from;
  while (performance.now() - t0 < seconds * 1000 && i < events.length) {
    const due = Math.min(events.length, from + Math.floor((RATE * (performance.now() - t0)) / 1000));
    while (i < due) {
      const batch = events.slice(i, Math.min(due, i + 500));
      await stream.append(batch as Parameters<EventStream['append']>[0]);
      i += batch.length;
    }
    await sleep(50);
  }
  return i;
}

const windowOf = (reads: readonly Read[], phase: Phase, fromS: number, toS: number, t0: number) =>
  distribution(
    reads
      .filter((r) => r.phase === phase && r.at - t0 >= fromS * 1000 && r.at - t0 < toS * 1000)
      .map((r) => r.ms),
  );

async function variant(vacuum: 'off' | 'on', chdb: { ch: ClickHouseClient }): Promise<VariantResult> {
  return await onKafkaLog(
    env,
    chdb.ch,
    async (_name, raw, pool, ch) => {
      const tag = `soak${runTag()}`;
      const tenant = `${tag}_t0`;
      const fillStarted = performance.now();
      await fillSoakTenant(pool, tenant, ENTRIES);
      const fillS = round((performance.now() - fillStarted) / 1000, 1);
      console.error(`[soak] vacuum-${vacuum}: filled ${ENTRIES} entries in ${fillS} s`);
      const events = generateTraffic({
        events: RATE * (LOAD_S + RENEW_S) + 1000,
        tag,
        tenants: 4,
        endMs: Date.now(),
        days: 2,
        window: 200,
      });
      const stream = createEventStream(raw);
      const projector = createProjector({ pool, ch, log: stream, group: `tern-bench.soak-${tag}` });
      await projector.start();

      const api = await startReadApi({ pool, ch, tenantId: tenant, retentionDays: 90 });
      const { url: base, headers } = api;
      const paths = [
        '/emails/logs?limit=20',
        `/emails/logs?limit=20&page=${Math.floor(ENTRIES / 40)}`,
        '/emails/logs?limit=20&status=BOUNCED&page=20',
      ];

      const reads: Read[] = [];
      const lags: { at: number; phase: Phase; lag: number }[] = [];
      let phase: Phase = 'load';
      let reading = true;
      let sampling = true;
      const t0 = performance.now();
      const phaseStart: Record<Phase, number> = { load: t0, idle: 0, renew: 0, drain: 0 };
      const readers = Array.from({ length: 4 }, async (_, w) => {
        let n = w;
        while (sampling) {
          if (!reading) {
            await sleep(100);
            continue;
          }
          const path = paths[n++ % paths.length]!;
          const t = performance.now();
          const res = await fetch(`${base}${path}`, { headers });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
          reads.push({ at: t, phase, path, ms: performance.now() - t });
          await sleep(Math.max(0, 4000 / READS - (performance.now() - t)));
        }
      });
      const sampler = (async () => {
        while (sampling) {
          lags.push({ at: performance.now(), phase, lag: await projector.lag() });
          await sleep(500);
        }
      })();
      const autovacuum: AutovacuumLog = { vacuums: 0, analyzes: 0, ms: 0, tables: {} };
      const stopVacuum = vacuum === 'on' ? emulateAutovacuum(pool, NAPTIME_S, autovacuum) : async () => {};
      const blocksAt: Record<string, Blocks> = { start: await blocks(pool) };
      const deadAt: Record<string, unknown> = {};

      let next = await pump(stream, events, 0, LOAD_S);
      blocksAt.load = await blocks(pool);
      deadAt.endOfLoad = await deadRows(pool);
      phase = 'idle';
      reading = false;
      phaseStart.idle = performance.now();
      await sleep(IDLE_S * 1000);
      blocksAt.idle = await blocks(pool);
      deadAt.endOfIdle = await deadRows(pool);
      phase = 'renew';
      reading = true;
      phaseStart.renew = performance.now();
      next = await pump(stream, events, next, RENEW_S);
      blocksAt.renew = await blocks(pool);
      phase = 'drain';
      phaseStart.drain = performance.now();
      const drainEnd = performance.now() + DRAIN_MAX_S * 1000;
      while (performance.now() < drainEnd && (await projector.lag()) > 0) await sleep(200);
      const drainS = round((performance.now() - phaseStart.drain) / 1000, 1);
      sampling = false;
      await Promise.all([...readers, sampler]);
      await stopVacuum();
      deadAt.end = await deadRows(pool);
      await api.close();
      await projector.stop();

      const v = `vacuum-${vacuum}`;
      const maxLag = (p: Phase, fromS = 0, toS = Number.POSITIVE_INFINITY) =>
        Math.max(
          0,
          ...lags
            .filter(
              (l) =>
                l.phase === p && l.at - phaseStart[p] >= fromS * 1000 && l.at - phaseStart[p] < toS * 1000,
            )
            .map((l) => l.lag),
        );
      const windows: Record<string, unknown> = {};
      for (const p of ['load', 'renew'] as const) {
        const length = p === 'load' ? LOAD_S : RENEW_S;
        for (let s = 0; s < length; s += 10) {
          const all = windowOf(reads, p, s, s + 10, phaseStart[p]);
          windows[`${p} ${s}-${s + 10}s`] = {
            reads: all.count,
            p50: round(all.p50, 1),
            p99: round(all.p99, 1),
            maxLag: maxLag(p, s, s + 10),
          };
        }
      }
      const loadFirst = windowOf(reads, 'load', 0, 10, phaseStart.load);
      const loadLast = windowOf(reads, 'load', LOAD_S - 10, LOAD_S, phaseStart.load);
      const renewFirst = windowOf(reads, 'renew', 0, 10, phaseStart.renew);
      console.error(`[soak] ${v}: ${next} events, windows ${JSON.stringify(windows)}`);
      const fig = figureMaker('soak', v);
      const figures: Figure[] = [
        fig('read p50, first 10 s of load', round(loadFirst.p50, 1), 'ms'),
        fig('read p99, first 10 s of load', round(loadFirst.p99, 1), 'ms'),
        fig('read p50, last 10 s of load', round(loadLast.p50, 1), 'ms'),
        fig('read p99, last 10 s of load', round(loadLast.p99, 1), 'ms'),
        fig(`read p50, first 10 s after ${IDLE_S} s idle`, round(renewFirst.p50, 1), 'ms'),
        fig(`read p99, first 10 s after ${IDLE_S} s idle`, round(renewFirst.p99, 1), 'ms'),
        fig('projector lag max, load', maxLag('load'), 'events'),
        fig('projector lag max, renewed load', maxLag('renew'), 'events'),
        fig('drain after renewed load', drainS, 's'),
        fig('buffer cache hits, renewed load', hitShare(blocksAt.idle!, blocksAt.renew!), '%'),
      ];
      return {
        figures,
        details: {
          events: next,
          fillS,
          windows,
          deadRows: deadAt,
          autovacuum: vacuum === 'on' ? { ...autovacuum, ms: Math.round(autovacuum.ms) } : 'off',
          cacheHitPercent: {
            load: hitShare(blocksAt.start!, blocksAt.load!),
            idle: hitShare(blocksAt.load!, blocksAt.idle!),
            renew: hitShare(blocksAt.idle!, blocksAt.renew!),
          },
        },
      };
    },
    { topicPrefix: 'tern-bench.soak', partitionConcurrency: 2 },
  );
}

const started = performance.now();
const figures: Figure[] = [];
const details: Record<string, unknown> = {
  settings: { ENTRIES, RATE, READS, LOAD_S, IDLE_S, RENEW_S, NAPTIME_S },
};
// One chDB per process: both variants share it (each has its own tenants).
const chdb = await openChdb();
try {
  for (const v of VARIANTS) {
    const r = await variant(v, chdb);
    figures.push(...r.figures);
    details[`vacuum-${v}`] = r.details;
  }
} finally {
  await chdb.close();
}
emitMeasured('soak', figures, details, started);
