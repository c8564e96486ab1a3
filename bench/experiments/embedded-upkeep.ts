/**
 * The embedded default's upkeep (PGlite runs no autovacuum; `createAutovacuum` of @tern/stores runs
 * the launcher's rule in the process): the built `npm start` on a fresh DATA_DIR (PGlite + chDB +
 * the table log, the sandbox provider), `UPKEEP_ROUNDS` rounds of `UPKEEP_EMAILS` emails through
 * `POST /emails/batch` (4 batches of 100 at once) with `UPKEEP_GAP_S` between them, while one
 * reader asks `GET /emails/logs?limit=20` every 100 ms; then 65 s idle (a pass of the 60 s naptime) and the
 * reads timed alone; then the process stopped and its database opened to read what it holds.
 *   npx tsx bench/experiments/embedded-upkeep.ts [main.js …]   (default services/tern/dist/main.js)
 * Several main.js (a build before and after): run one after the other, in the order given.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createPostgres } from '@tern/stores';
import { freePort } from '../lib/services.js';
import { distribution } from '../lib/stats.js';
import { createApiKey, ownerJwt, productionEnv, startTern } from '../lib/tern-process.js';

const mains = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['services/tern/dist/main.js'];
const rounds = Number(process.env.UPKEEP_ROUNDS ?? 4);
const perRound = Number(process.env.UPKEEP_EMAILS ?? 5000);
const gapS = Number(process.env.UPKEEP_GAP_S ?? 30);
const TENANT = 'upkeep';
const TABLES = [
  'outgoing_emails',
  'email_logs',
  'email_events',
  'event_log',
  'sandbox_messages',
  'processed_events',
  'event_stream',
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function timed(url: string, key: string): Promise<number> {
  const t = performance.now();
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  return performance.now() - t;
}

async function sent(url: string, jwt: string): Promise<number> {
  const res = await fetch(`${url}/analytics/summary?days=1`, { headers: { authorization: `Bearer ${jwt}` } });
  return ((await res.json()) as { totals: { sent: number } }).totals.sent;
}

async function one(main: string) {
  const dataDir = mkdtempSync(join(tmpdir(), 'tern-upkeep-'));
  const env = productionEnv('');
  delete (env as Record<string, string>).DATABASE_URL;
  const tern = await startTern({
    main: resolve(main),
    env: { ...env, DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    port: await freePort(),
    logFile: join(dataDir, 'tern.log'),
  });
  const jwt = ownerJwt(env.JWT_SECRET!, TENANT);
  const key = await createApiKey(tern.url, jwt, TENANT, 'upkeep', ['email:send', 'email:read']);
  const during: number[] = [];
  let reading = true;
  const reader = (async () => {
    while (reading) {
      during.push(await timed(`${tern.url}/emails/logs?limit=20`, key));
      await sleep(100);
    }
  })();
  const started = performance.now();
  let total = 0;
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < perRound; i += 400) {
      await Promise.all(
        [0, 100, 200, 300].map(async (k) => {
          const body = Array.from({ length: 100 }, (_, n) => ({
            from: 'Upkeep <hello@upkeep.test>',
            to: `u${r}_${i + k + n}@example.com`,
            subject: `Round ${r}`,
            text: 'Hello',
          }));
          const res = await fetch(`${tern.url}/emails/batch`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          if (res.status !== 202) throw new Error(`batch: ${res.status} ${await res.text()}`);
        }),
      );
    }
    total += perRound;
    while ((await sent(tern.url, jwt)) < total) await sleep(500);
    console.error(
      `[upkeep] ${main}: round ${r + 1} sent at ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    if (r < rounds - 1) await sleep(gapS * 1000);
  }
  const sendS = (performance.now() - started) / 1000;
  reading = false;
  await reader;
  await sleep(65_000);
  const alone: Record<string, number[]> = { page1: [], delivered: [], search: [], page100: [] };
  for (let i = 0; i < 30; i++) {
    alone.page1!.push(await timed(`${tern.url}/emails/logs?limit=50`, key));
    alone.delivered!.push(await timed(`${tern.url}/emails/logs?limit=50&status=DELIVERED`, key));
    alone.search!.push(await timed(`${tern.url}/emails/logs?limit=50&q=u0_17@`, key));
    alone.page100!.push(await timed(`${tern.url}/emails/logs?limit=50&page=100`, key));
  }
  await tern.stop();
  const passes = readFileSync(tern.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('autovacuum: tables vacuumed'))
    .map(
      (l) =>
        JSON.parse(l) as {
          ms: number;
          vacuumed: string[];
          analyzed: string[];
          longest?: { table: string; ms: number };
        },
    );
  const store = await createPostgres({ dataDir, autovacuumNaptimeMs: 0 });
  const { rows } = await store.pool.query<{
    t: string;
    bytes: string;
    live: string;
    dead: string;
    analysed: boolean;
  }>(
    `SELECT s.relname AS t, pg_total_relation_size(s.relid) AS bytes, n_live_tup AS live, n_dead_tup AS dead,
            greatest(last_analyze, last_autoanalyze) IS NOT NULL AS analysed
       FROM pg_stat_user_tables s WHERE s.relname = ANY($1) OR s.relname LIKE 'email_logs%'`,
    [TABLES],
  );
  const { rows: all } = await store.pool.query<{ bytes: string }>(
    `SELECT sum(pg_total_relation_size(relid))::bigint AS bytes FROM pg_stat_user_tables`,
  );
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
  const d = (xs: number[]) => {
    const x = distribution(xs);
    return `p50 ${x.p50.toFixed(1)} / p99 ${x.p99.toFixed(1)} / max ${x.max.toFixed(1)} ms`;
  };
  console.log(`\n${main}: ${rounds * perRound} emails sent in ${sendS.toFixed(1)} s`);
  console.log(`  GET /emails/logs while sending (${during.length}): ${d(during)}`);
  for (const [k, xs] of Object.entries(alone)) console.log(`  GET /emails/logs ${k}, idle after: ${d(xs)}`);
  if (passes.length > 0)
    console.log(
      `  autovacuum: ${passes.length} passes, ${passes.reduce((a, p) => a + p.vacuumed.length, 0)} vacuums, ` +
        `${passes.reduce((a, p) => a + p.analyzed.length, 0)} analyzes; a pass ${passes.map((p) => p.ms).join(', ')} ms; ` +
        `its longest statement ${passes.map((p) => `${p.longest?.ms} (${p.longest?.table})`).join(', ')} ms; ` +
        `vacuumed: ${[...new Set(passes.flatMap((p) => p.vacuumed))].join(' ')}`,
    );
  console.log(`  every table: ${(Number(all[0]!.bytes) / 2 ** 20).toFixed(1)} MiB`);
  for (const r of rows.filter((r) => Number(r.bytes) > 1 << 20).sort((a, b) => a.t.localeCompare(b.t)))
    console.log(
      `  ${r.t}: ${(Number(r.bytes) / 2 ** 20).toFixed(1)} MiB, ${r.live} live, ${r.dead} dead${r.analysed ? ', analysed' : ''}`,
    );
}

for (const main of mains) await one(main);
