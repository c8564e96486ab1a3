/**
 * Where a memoised logs read spends its CPU (issue 29), in this process, steadier than req/s on a
 * shared machine: the real api app (`createApiApp`, a read-model feed, the pino logger `npm start`
 * builds — redaction, request serializer — writing to /dev/null, the limiter at its default shape)
 * answers `app.inject` requests one after the other, and the CPU time of this process per request
 * is taken for the app as `npm start` configures it, then with one piece changed at a time:
 * request logging off, the limiter off, a dashboard JWT instead of the key, every request a memo
 * miss (a page not asked before: a query), and a bare Fastify route sending the same bytes.
 * `app.inject` skips the socket and the HTTP parser, the same for every variant; the /metrics
 * timer of the all-in-one process is not mounted here.
 */
import { PROCESS_LOG_OPTIONS } from '@tern/auth';
import Fastify from 'fastify';
import pg from 'pg';
import pino from 'pino';
import { median } from './reads-figures.js';

export interface BreakdownRow {
  variant: string;
  cpuUsPerRequest: number;
}

export async function readBreakdown(opts: {
  databaseUrl: string;
  jwtSecret: string;
  apiKey: string;
  jwt: string;
  path: string;
  requests: number;
  rounds: number;
}): Promise<BreakdownRow[]> {
  const api = await import('@tern/api');
  const auth = await import('@tern/auth');
  const { lastBatchAt } = await import('@tern/read-models');
  const stores = await import('@tern/stores');
  const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 4 });
  const feed = stores.createReadModelFeed({ pool, connection: 'dedicated', lastBatchAt });
  const rows: BreakdownRow[] = [];
  try {
    if (!(await feed.ready())) throw new Error('the read-model feed did not start listening');
    const logger = pino(
      { level: 'info', ...PROCESS_LOG_OPTIONS },
      pino.destination({ dest: '/dev/null', sync: true }),
    );
    const build = (o: { logger?: boolean; rateLimit?: boolean }) =>
      api.createApiApp({
        data: {
          pool,
          // Never asked: only /emails/logs is loaded.
          ch: {} as never,
          readModel: feed,
        },
        jwt: auth.createJwtVerifier({ secret: opts.jwtSecret }),
        policy: { retentionDays: 90 },
        limits: { rateLimit: o.rateLimit === false ? false : { max: 1_000_000, timeWindowMs: 60_000 } },
        http: { logger: o.logger === false ? false : logger },
      });
    const key = { authorization: `Bearer ${opts.apiKey}` };
    const full = await build({});
    const quiet = await build({ logger: false });
    const unlimited = await build({ rateLimit: false });
    const body = (await full.inject({ url: opts.path, headers: key })).body;
    const bare = Fastify({ logger: false });
    bare.get('/bare', (_request, reply) => {
      reply.type('application/json; charset=utf-8').send(body);
    });
    let page = 2;
    const variants: [string, () => Promise<{ statusCode: number }>][] = [
      [
        'as npm start: logging, limiter, API key, memo hit',
        () => full.inject({ url: opts.path, headers: key }),
      ],
      [
        'dashboard JWT instead of the key',
        () => full.inject({ url: opts.path, headers: { authorization: `Bearer ${opts.jwt}` } }),
      ],
      // Pages not asked before (page 2, 3…): each a memo miss, two statements on Postgres.
      [
        'every request a memo miss (a new page: a query)',
        () => full.inject({ url: `${opts.path}&page=${page++}`, headers: key }),
      ],
      ['request logging off', () => quiet.inject({ url: opts.path, headers: key })],
      ['limiter off', () => unlimited.inject({ url: opts.path, headers: key })],
      ['bare Fastify route, same bytes', () => bare.inject({ url: '/bare' })],
    ];
    // Every variant in turn, `rounds` times (the machine is shared): the median of each.
    const samples = new Map<string, number[]>();
    for (const [, inject] of variants) for (let i = 0; i < 200; i++) await inject();
    for (let round = 0; round < opts.rounds; round++) {
      // Rotated every round: the variant run first paid for the garbage of the one before it
      // (the first row read ≈ 20 % high when the order was fixed).
      const shift = round % variants.length;
      for (const [variant, inject] of [...variants.slice(shift), ...variants.slice(0, shift)]) {
        const before = process.cpuUsage();
        for (let i = 0; i < opts.requests; i++) {
          const res = await inject();
          if (res.statusCode !== 200) throw new Error(`${variant}: ${res.statusCode}`);
        }
        const cpu = process.cpuUsage(before);
        samples.set(variant, [...(samples.get(variant) ?? []), (cpu.user + cpu.system) / opts.requests]);
      }
    }
    for (const [variant] of variants) rows.push({ variant, cpuUsPerRequest: median(samples.get(variant)!) });
    for (const app of [full, quiet, unlimited, bare]) await app.close();
  } finally {
    await feed.close();
    await pool.end();
  }
  return rows;
}
