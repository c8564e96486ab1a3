// Issue 25, item 5: the background jobs — retention, campaign fan-out, sequence steps — are the
// worker role's, not the api's. The api role alone (real HTTP, real Postgres, chDB, the
// Postgres-table log) deletes nothing and fans nothing out; the worker role alone, on the same
// stores, deletes the expired entries and fans the due campaign out into the send path.

import { newResourceId } from '@tern/api';
import { insertContact } from '@tern/bulk';
import { loadConfig } from '@tern/config';
import { createPostgres, migratePostgres, type PostgresStore } from '@tern/stores';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/e2e/tern-process.js';
import { createFreshDatabase, tempDir, waitFor } from '../../../test/support/services.js';
import { MIGRATIONS } from '../src/paths.js';
import { type Runtime, startServices } from '../src/runtime.js';

const TENANT = 'worker-role';
const CONTACTS = 4;
const EXPIRED = 3;
const secrets = {
  jwtSecret: 'worker-role-jwt-secret-0123456789abcdef',
  ingestToken: 'worker-role-ingest-token-0123456789abcdef',
  trackingSecret: 'worker-role-tracking-secret-0123456789',
  webhookSecretsKey: 'worker-role-webhook-secrets-key-0123456789',
  encryptionKey: 'worker-role-encryption-key-0123456789abcdef',
};

let db: { url: string; drop(): Promise<void> };
let pg: PostgresStore;
let config: ReturnType<typeof loadConfig>;
const campaignId = newResourceId('campaign');
let runtime: Runtime | undefined;

const count = async (sql: string, params: unknown[]) =>
  (await pg.pool.query<{ n: number }>(sql, params)).rows[0]!.n;
const expiredLogs = () =>
  count(`SELECT count(*)::int AS n FROM email_logs WHERE tenant_id = $1 AND created_at < '2021-01-01'`, [
    TENANT,
  ]);
const fannedOut = () =>
  count(`SELECT count(*)::int AS n FROM outgoing_emails WHERE tenant_id = $1 AND message->'tags' ? $2`, [
    TENANT,
    `campaign:${campaignId}`,
  ]);
const campaignStatus = async () =>
  (
    await pg.pool.query<{ status: string }>('SELECT status FROM campaigns WHERE tenant_id = $1 AND id = $2', [
      TENANT,
      campaignId,
    ])
  ).rows[0]!.status;

beforeAll(async () => {
  db = await createFreshDatabase();
  config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: db.url,
    DATA_DIR: tempDir('tern-worker-role-'),
    PORT: String(await freePort()),
    PUBLIC_URL: 'http://127.0.0.1:3999',
  });
  pg = await createPostgres({ databaseUrl: db.url, dataDir: config.dataDir });
  await migratePostgres(pg.pool, MIGRATIONS.postgres);
  await seed();
}, 60_000);

afterAll(async () => {
  await runtime?.close();
  await pg?.close();
  await db?.drop();
});

/** Expired log rows (2020, past any retention) and a campaign due now, for CONTACTS contacts. */
async function seed(): Promise<void> {
  await pg.pool.query(
    `INSERT INTO email_logs (tenant_id, id, to_email, subject, status, created_at, state, version)
     SELECT $1, 'old' || g, 'a@example.com', 's', 'SENT', '2020-01-01T00:00:00Z', '{}', 1
       FROM generate_series(1, $2) g`,
    [TENANT, EXPIRED],
  );
  const now = new Date();
  for (let i = 0; i < CONTACTS; i++) {
    await insertContact(
      pg.pool,
      TENANT,
      { id: newResourceId('contact'), email: `p${i}@example.com`, audiences: ['news'] },
      now,
    );
  }
  await pg.pool.query(
    `INSERT INTO campaigns (tenant_id, id, name, from_address, audience, subject, text, status, scheduled_at, created_at, updated_at)
     VALUES ($1, $2, 'n', 'news@acme.test', 'news', 'Hi', 'Hi', 'scheduled', $3, $3, $3)`,
    [TENANT, campaignId, now],
  );
}

describe('--services=worker runs the background jobs; --services=api runs none', () => {
  it('the api role alone serves HTTP and neither deletes expired entries nor fans a campaign out', async () => {
    runtime = await startServices(config, new Set(['api']), secrets);
    expect((await fetch(`${runtime.url}/health`)).status).toBe(200);
    // The worker's retention runs at its start and its fan-out polls every second: three seconds is ample.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await expiredLogs()).toBe(EXPIRED);
    expect(await fannedOut()).toBe(0);
    expect(await campaignStatus()).toBe('scheduled');
    await runtime.close();
    runtime = undefined;
  }, 60_000);

  it('the worker role alone deletes the expired entries and fans the campaign out into the send path', async () => {
    runtime = await startServices(config, new Set(['worker']), secrets);
    // No api in this process: its HTTP server answers /health and nothing of the API.
    expect((await fetch(`${runtime.url}/health`)).status).toBe(200);
    expect((await fetch(`${runtime.url}/emails/logs`)).status).toBe(404);
    await waitFor(async () => (await expiredLogs()) === 0, { timeoutMs: 20_000, description: 'retention' });
    await waitFor(async () => (await campaignStatus()) === 'sent', {
      timeoutMs: 20_000,
      description: 'fan-out',
    });
    expect(await fannedOut()).toBe(CONTACTS);
  }, 60_000);
});
