/** The api app the send-path benches (send, smtp-in, pgwork) send through. */
import type { AddressInfo } from 'node:net';
import type { ClickHouseClient } from '@clickhouse/client';
import { createApiApp } from '@tern/api';
import { createJwtVerifier } from '@tern/auth';
import type { EventStream } from '@tern/event-log';
import type pg from 'pg';

/**
 * The api listening on a free loopback port: no rate limit, 90 days' retention, `secret` its JWT
 * and tracking secret, its sends appended to `log`. Resolves to the app and its base URL.
 */
export async function listenSendingApi(o: {
  pool: pg.Pool;
  ch: ClickHouseClient;
  log: EventStream;
  secret: string;
}): Promise<{ api: Awaited<ReturnType<typeof createApiApp>>; url: string }> {
  const api = await createApiApp({
    data: { pool: o.pool, ch: o.ch },
    jwt: createJwtVerifier({ secret: o.secret }),
    policy: { retentionDays: 90 },
    limits: { rateLimit: false },
    features: { trackingSecret: o.secret, sending: { log: o.log } },
  });
  await api.listen({ host: '127.0.0.1', port: 0 });
  return { api, url: `http://127.0.0.1:${(api.server.address() as AddressInfo).port}` };
}
