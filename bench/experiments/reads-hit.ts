/**
 * One memoised logs read, in process, many times (issue 29): CPU µs per request of the api as
 * `npm start` builds it against a bare route sending the same bytes, interleaved; with
 * `node --cpu-prof` around it, where a hit's time goes.
 *   npx tsx bench/experiments/reads-hit.ts [requests=3000] [rounds=5]
 */
import { PROCESS_LOG_OPTIONS, signDashboardToken } from '@tern/auth';
import { migratePostgres } from '@tern/stores';
import Fastify from 'fastify';
import pg from 'pg';
import pino from 'pino';
import { median } from '../lib/reads-figures.js';
import { benchEnv, createFreshDatabase } from '../lib/services.js';
import { fillLogs } from '../lib/tern-process.js';

const REQUESTS = Number(process.argv[2] ?? 3000);
const ROUNDS = Number(process.argv[3] ?? 5);
const db = await createFreshDatabase(benchEnv(process.env).databaseUrl);
const pool = new pg.Pool({ connectionString: db.url, max: 4 });
const api = await import('@tern/api');
// BEFORE=<dir of another copy of services/api/src>: that app too, interleaved (before → after).
const before = process.env.BEFORE ? await import(`${process.env.BEFORE}/index.ts`) : undefined;
const auth = await import('@tern/auth');
const { lastBatchAt } = await import('@tern/read-models');
const stores = await import('@tern/stores');
const feed = stores.createReadModelFeed({ pool, connection: 'dedicated', lastBatchAt });
try {
  await migratePostgres(pool);
  await fillLogs(pool, 'reads_hit', 5000);
  if (!(await feed.ready())) throw new Error('feed not listening');
  const secret = 'x'.repeat(32);
  const logger = pino(
    { level: 'info', ...PROCESS_LOG_OPTIONS },
    pino.destination({ dest: '/dev/null', sync: true }),
  );
  const build = (a: typeof api, o: { log?: boolean; limit?: boolean } = {}) =>
    a.createApiApp({
      data: { pool, ch: {} as never, readModel: feed },
      jwt: auth.createJwtVerifier({ secret }),
      policy: { retentionDays: 90 },
      limits: { rateLimit: o.limit === false ? false : { max: 1_000_000, timeWindowMs: 60_000 } },
      http: { logger: o.log === false ? false : logger },
    });
  const app = await build(api);
  const old = before ? await build(before) : undefined;
  const jwt = signDashboardToken({ secret, tenantId: 'reads_hit', role: 'owner', expiresInSeconds: 3600 });
  const created = await app.inject({
    method: 'POST',
    url: '/tenants/reads_hit/api-keys',
    headers: { authorization: `Bearer ${jwt}` },
    payload: { name: 'reader', scopes: ['email:read'] },
  });
  const key = { authorization: `Bearer ${(created.json() as { key: string }).key}` };
  // DEEP=1: a deep page (the cursor of page 150) instead of page 1.
  const deepCursor = async () => {
    const there = await app.inject({ url: '/emails/logs?limit=20&page=150', headers: key });
    return `/emails/logs?limit=20&cursor=${(there.json() as { meta: { nextCursor: string } }).meta.nextCursor}`;
  };
  const path = process.env.DEEP ? await deepCursor() : '/emails/logs?limit=20';
  const body = (await app.inject({ url: path, headers: key })).body;
  const bare = Fastify({ logger: false });
  bare.get('/bare', (_request, reply) => {
    reply.type('application/json; charset=utf-8').send(body);
  });
  const variants: [string, () => Promise<{ statusCode: number }>][] = [
    ['api key', () => app.inject({ url: path, headers: key })],
    ['jwt', () => app.inject({ url: path, headers: { authorization: `Bearer ${jwt}` } })],
    ['bare', () => bare.inject({ url: '/bare' })],
  ];
  if (process.env.PIECES) {
    const nolog = await build(api, { log: false });
    const nolimit = await build(api, { limit: false });
    const neither = await build(api, { log: false, limit: false });
    variants.push(['no log', () => nolog.inject({ url: path, headers: key })]);
    variants.push(['no limit', () => nolimit.inject({ url: path, headers: key })]);
    variants.push(['neither', () => neither.inject({ url: path, headers: key })]);
  }
  if (old) {
    variants.push(['old key', () => old.inject({ url: path, headers: key })]);
    variants.push(['old jwt', () => old.inject({ url: path, headers: { authorization: `Bearer ${jwt}` } })]);
  }
  const samples = new Map<string, number[]>();
  for (const [, inject] of variants) for (let i = 0; i < 500; i++) await inject();
  for (let round = 0; round < ROUNDS; round++) {
    // Rotated every round: a variant does not always follow the same one (GC debt carries over).
    const order = [...variants.slice(round % variants.length), ...variants.slice(0, round % variants.length)];
    for (const [name, inject] of order) {
      const before = process.cpuUsage();
      for (let i = 0; i < REQUESTS; i++) {
        const res = await inject();
        if (res.statusCode !== 200) throw new Error(`${name}: ${res.statusCode}`);
      }
      const cpu = process.cpuUsage(before);
      samples.set(name, [...(samples.get(name) ?? []), (cpu.user + cpu.system) / REQUESTS]);
    }
  }
  const bareUs = median(samples.get('bare')!);
  for (const [name, values] of samples) {
    const m = median(values);
    console.log(`${name.padEnd(8)} ${m.toFixed(1).padStart(7)} µs  ×${(m / bareUs).toFixed(2)} of bare`);
  }
  await app.close();
  await old?.close();
  await bare.close();
} finally {
  await feed.close();
  await pool.end();
  await db.drop();
}
