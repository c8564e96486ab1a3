import { createClickHouse, createPostgres, migrateClickHouse, migratePostgres } from '@tern/stores';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../../test/support/services.js';
import { eventsFor, generateEmails } from '../dataset.js';
import {
  buildApp,
  createKey,
  jwtFor,
  NOW,
  openStores,
  project,
  type Stores,
  testTenants,
} from '../support.js';

/**
 * Issue 24, item 1: after one failing query, pg-pool drops its client and builds a new one. On
 * the embedded PGlite the new client speaks to the same single session, where the named prepared
 * statements of the dropped client still exist: every later named statement failed with 42P05
 * ("already exists") and the log answered 500 to every tenant. Each connection handed out now
 * starts from a reset session. The same test runs against the Postgres server.
 */
type Kind = 'pglite' | 'server';

async function openKind(kind: Kind): Promise<Pick<Stores, 'pool' | 'ch' | 'close'>> {
  if (kind === 'server') return openStores();
  const dataDir = tempDir('tern-session-reset-');
  const store = await createPostgres({ dataDir });
  await migratePostgres(store.pool);
  const ch = createClickHouse({ dataDir });
  await migrateClickHouse(ch.client);
  return {
    pool: store.pool,
    ch: ch.client,
    async close() {
      await ch.close();
      await store.close();
    },
  };
}

describe.each<Kind>(['pglite', 'server'])(
  'a failing query does not break the log for others (%s)',
  (kind) => {
    const { clock, A, B } = testTenants(`reset-${kind}`);
    let stores: Pick<Stores, 'pool' | 'ch' | 'close'>;
    let app: FastifyInstance;
    let keyA: string;
    let keyB: string;

    beforeAll(async () => {
      stores = await openKind(kind);
      app = await buildApp(stores, clock);
      const common = { now: NOW, spanDays: 10, templates: ['t1'] };
      const emailsA = generateEmails({ ...common, tenantId: A, count: 5, seed: 1 });
      const emailsB = generateEmails({ ...common, tenantId: B, count: 5, seed: 2 });
      await project(stores, eventsFor([...emailsA, ...emailsB], 3));
      keyA = (await createKey(app, jwtFor(clock, A, 'admin'), A, { scopes: ['email:read'] })).key;
      keyB = (await createKey(app, jwtFor(clock, B, 'admin'), B, { scopes: ['email:read'] })).key;
    });

    afterAll(async () => {
      await app?.close();
      await stores?.close();
    });

    /** B's log page, then the newest email of it and its content: statuses by path. */
    const readAsB = async () => {
      const headers = { 'x-api-key': keyB };
      const logs = await app.inject({ method: 'GET', url: '/emails/logs', headers });
      const statuses: (string | number)[][] = [['/emails/logs', logs.statusCode]];
      if (logs.statusCode !== 200) return statuses;
      const ids: string[] = logs.json().data.map((e: { id: string }) => e.id);
      expect(ids.length).toBeGreaterThan(0);
      for (const url of [`/emails/${ids[0]}`, `/emails/${ids[0]}/content`]) {
        const res = await app.inject({ method: 'GET', url, headers });
        statuses.push([url, res.statusCode]);
      }
      return statuses;
    };
    // What B is answered on a healthy connection: the log lists B's emails; the email and its
    // content are looked up (their answer, 200 or 404, needs the named statements to run).
    let healthy: (string | number)[][];
    const ok = () => healthy;

    it('reads as tenant B after a query of tenant A failed on the pool', async () => {
      // B's reads prepare their named statements on the connection.
      healthy = await readAsB();
      expect(healthy[0]).toEqual(['/emails/logs', 200]);
      for (const [, status] of healthy) expect(status).toBeLessThan(500);
      // Tenant A's request whose query fails in the database (a division by zero stands for any
      // query error: a foreign-key race, a failing campaign retry): the pool drops the client.
      await expect(
        stores.pool.query({
          text: 'SELECT 1 / (count(*) - count(*)) FROM email_logs WHERE tenant_id = $1',
          values: [A],
        }),
      ).rejects.toMatchObject({ code: '22012' });
      expect(await readAsB()).toEqual(ok());
    });

    it('reads as tenant B after tenant A sent a filter the database refuses', async () => {
      expect(await readAsB()).toEqual(ok());
      const res = await app.inject({
        method: 'GET',
        url: '/emails/logs?q=a%00b',
        headers: { 'x-api-key': keyA },
      });
      expect(res.statusCode).toBeLessThan(500);
      expect(await readAsB()).toEqual(ok());
      // Named statements still work over several failures in a row.
      for (let i = 0; i < 3; i++) {
        await expect((stores.pool as pg.Pool).query('SELECT 1 / 0')).rejects.toMatchObject({ code: '22012' });
        expect(await readAsB()).toEqual(ok());
      }
    });
  },
);
