/**
 * The real api app serving reads, for the read benches run in-process (readpath, soak):
 * `createApiApp` listening on 127.0.0.1, request logging and the rate limit off, with a read-model
 * feed as `npm start` runs it (repeated reads memoised, issue 10) or without one (every read from
 * Postgres), and a dashboard token of the tenant that reads. The api modules are imported when
 * first needed, after the bench's fill.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type pg from 'pg';

const SECRET = 'bench-secret-bench-secret-bench-secret';

export interface ReadApi {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** The tenant's dashboard token (owner). */
  headers: { authorization: string };
  /** Closes the app, then its feed. */
  close(): Promise<void>;
}

export async function startReadApi(opts: {
  pool: pg.Pool;
  ch: ClickHouseClient;
  tenantId: string;
  retentionDays: number;
  /** `false`: no read-model feed, every request reads Postgres. Default true. */
  memoised?: boolean;
}): Promise<ReadApi> {
  const api = await import('@tern/api');
  const auth = await import('@tern/auth');
  const { lastBatchAt } = await import('@tern/read-models');
  const stores = await import('@tern/stores');
  const feed =
    opts.memoised === false
      ? null
      : stores.createReadModelFeed({ pool: opts.pool, connection: 'dedicated', lastBatchAt });
  if (feed && !(await feed.ready())) {
    await feed.close();
    throw new Error('the read-model feed did not start listening');
  }
  const app = await api.createApiApp({
    data: { pool: opts.pool, ch: opts.ch },
    jwt: auth.createJwtVerifier({ secret: SECRET }),
    policy: { retentionDays: opts.retentionDays },
    limits: { rateLimit: false },
    http: { logger: false },
    ...(feed ? { readModel: feed } : {}),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const token = auth.signDashboardToken({
    secret: SECRET,
    tenantId: opts.tenantId,
    role: 'owner',
    expiresInSeconds: 3600,
  });
  return {
    url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`,
    headers: { authorization: `Bearer ${token}` },
    async close() {
      await app.close();
      await feed?.close();
    },
  };
}
