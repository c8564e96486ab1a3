/**
 * End-to-end lag: with the projector running (default options) and the ingest app listening,
 * `POST /events` a batch of a new tenant's traffic, then poll until every event of it is folded
 * in Postgres (its timeline rows, `email_events`) and its totals are in ClickHouse. Per log adapter.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createEventStream, type EventLog } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { createProjector } from '@tern/projector';
import type pg from 'pg';
import { generateTraffic } from '../lib/events.js';
import { onKafkaLog, onPostgresTableLog, runOnLogs } from '../lib/log-variants.js';
import { expectedTotals } from '../lib/projection-stores.js';
import type { Figure } from '../lib/report.js';
import { benchEnv, pollUntil, runTag } from '../lib/services.js';
import { distribution, round } from '../lib/stats.js';

const env = benchEnv(process.env);
const samples = Number(process.env.BENCH_LAG_SAMPLES ?? 20);
const batchEvents = Number(process.env.BENCH_LAG_BATCH ?? 1000);
const POLL_MS = 5;

interface Sample {
  ackMs: number;
  postgresMs: number;
  clickhouseMs: number;
}

async function measure(
  variant: string,
  raw: EventLog,
  pool: pg.Pool,
  ch: import('@clickhouse/client').ClickHouseClient,
): Promise<{ figures: Figure[]; details: unknown }> {
  const log = createEventStream(raw);
  const projector = createProjector({ pool, ch, log, group: `tern-bench.lag-${runTag()}` });
  await projector.start();
  const token = randomBytes(24).toString('base64url');
  const app = await createIngestApp({ log, ingestToken: token });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const results: Sample[] = [];
  try {
    for (let i = -2; i < samples; i++) {
      // A tenant of its own per sample: "visible" is then exact, whatever else is in the stores.
      const tag = `lag${runTag()}`;
      const events = generateTraffic({
        events: batchEvents,
        tag,
        tenants: 1,
        endMs: Date.now(),
        days: 1,
        window: 50,
      });
      const tenantId = `${tag}_t0`;
      const expected = expectedTotals(events);
      const started = performance.now();
      const res = await fetch(`http://127.0.0.1:${port}/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ events }),
      });
      await res.text();
      if (res.status !== 202) throw new Error(`ingest answered ${res.status}`);
      const ackMs = performance.now() - started;
      let postgresMs = Number.NaN;
      let clickhouseMs = Number.NaN;
      const inPostgres = pollUntil(
        async () => {
          const { rows } = await pool.query<{ n: string }>(
            'SELECT count(*) AS n FROM email_events WHERE tenant_id = $1',
            [tenantId],
          );
          return Number(rows[0]?.n) === events.length;
        },
        { intervalMs: POLL_MS, timeoutMs: 30_000 },
      ).then((ok) => {
        if (ok) postgresMs = performance.now() - started;
      });
      const inClickHouse = pollUntil(
        async () => {
          const rs = await ch.query({
            query:
              'SELECT sum(total) AS total, sum(sent) AS sent, sum(opened) AS opened FROM email_daily_v2 WHERE tenant_id = {t:String}',
            query_params: { t: tenantId },
            format: 'JSONEachRow',
          });
          const [row] = await rs.json<{
            total: string | number;
            sent: string | number;
            opened: string | number;
          }>();
          return (
            Number(row?.total) === expected.counters.total &&
            Number(row?.sent) === expected.counters.sent &&
            Number(row?.opened) === expected.counters.opened
          );
        },
        { intervalMs: POLL_MS, timeoutMs: 30_000 },
      ).then((ok) => {
        if (ok) clickhouseMs = performance.now() - started;
      });
      await Promise.all([inPostgres, inClickHouse]);
      if (i >= 0) results.push({ ackMs, postgresMs, clickhouseMs });
    }
  } finally {
    await app.close();
    await projector.stop();
  }
  const dist = (k: keyof Sample) => distribution(results.map((r) => r[k]).filter(Number.isFinite));
  const ack = dist('ackMs');
  const pgd = dist('postgresMs');
  const chd = dist('clickhouseMs');
  const missing = results.filter(
    (r) => !Number.isFinite(r.postgresMs) || !Number.isFinite(r.clickhouseMs),
  ).length;
  console.error(
    `[lag] ${variant}: ${results.length} batches of ${batchEvents}: ack p50 ${ack.p50.toFixed(0)} ms; ` +
      `visible in Postgres p50 ${pgd.p50.toFixed(0)} ms (max ${pgd.max.toFixed(0)}), ClickHouse p50 ${chd.p50.toFixed(0)} ms (max ${chd.max.toFixed(0)})` +
      (missing ? `; ${missing} samples not visible within 30 s` : ''),
  );
  const fig = (metric: string, value: number): Figure => ({
    bench: 'lag',
    variant,
    metric,
    value,
    unit: 'ms',
  });
  const r2 = (d: ReturnType<typeof distribution>) =>
    Object.fromEntries(Object.entries(d).map(([k, v]) => [k, round(v, 1)]));
  return {
    figures: [
      fig(`POST ${batchEvents} → 202 p50`, ack.p50),
      fig('POST → visible in Postgres p50', pgd.p50),
      fig('POST → visible in ClickHouse p50', chd.p50),
      fig('POST → visible in ClickHouse max', chd.max),
    ],
    details: {
      batchEvents,
      samples: results.length,
      missing,
      ackMs: r2(ack),
      postgresMs: r2(pgd),
      clickhouseMs: r2(chd),
    },
  };
}

await runOnLogs({
  bench: 'lag',
  defaultLogs: 'kafka,postgres',
  kafka: (ch) => onKafkaLog(env, ch, measure, { topicPrefix: 'tern-bench.lag' }),
  postgres: (ch) => onPostgresTableLog(env, ch, measure, { logPoolMax: 4 }),
  // chDB runs in this process: its engine alone accounts for much of the RSS printed at the end.
  details: ({ rssAfterChdbOpenMiB }) => ({ rssAfterChdbOpenMiB }),
});
