import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { buildTern, ownerJwt, startTern, type TernProcess } from './tern-process.js';

const JWT_SECRET = 'campaigns-e2e-secret-0123456789abcdef';
const INGEST_TOKEN = 'campaigns-e2e-ingest-token-0123456789';
const TRACKING_SECRET = 'campaigns-e2e-tracking-secret-0123456789';
const WEBHOOK_SECRETS_KEY = 'campaigns-e2e-webhook-secrets-key-0123456789';
const TENANT = 'campaigns-e2e';
const CONTACTS = 10_000;

/**
 * SPEC §15: "sent exactly once per contact even if the send is retried or the process restarts".
 * The all-in-one process on Kafka and the Postgres server fans a 10 000-contact campaign out and is
 * killed with SIGKILL in the middle of it; a new process takes the job over when its lease lapses
 * and finishes it. Exactly one email per contact results: in the log, in the projection and in the
 * sender's due-list (`outgoing_emails`).
 */
describe('campaign fan-out across a kill -9', () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;
  let env: Record<string, string>;
  const procs: TernProcess[] = [];

  beforeAll(async () => {
    buildTern();
    db = await createFreshDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    pool.on('error', () => undefined);
    env = {
      NODE_ENV: 'production',
      DATABASE_URL: db.url,
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_TOPIC: uniqueName('campaigns-e2e'),
      KAFKA_PARTITIONS: '3',
      JWT_SECRET,
      INGEST_TOKEN,
      TRACKING_SECRET,
      WEBHOOK_SECRETS_KEY,
      ENCRYPTION_KEY: 'campaigns-e2e-encryption-key-0123456789abcdef',
      DATA_DIR: tempDir('tern-e2e-campaigns-'),
    };
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) await p.stop();
    await pool?.end();
    await db?.drop();
  });

  it(`${CONTACTS} contacts, SIGKILL mid fan-out, restart: exactly ${CONTACTS} emails`, async () => {
    let tern = await startTern({ env });
    procs.push(tern);
    const jwt = ownerJwt(JWT_SECRET, TENANT);
    const auth = { authorization: `Bearer ${jwt}` };
    const headers = { ...auth, 'content-type': 'application/json' };

    const csv = `email,first_name,audiences\n${Array.from({ length: CONTACTS }, (_, i) => `r${i}@example.com,R${i},launch`).join('\n')}\n`;
    const imported = await fetch(`${tern.url}/contacts/import`, {
      method: 'POST',
      headers: { authorization: headers.authorization, 'content-type': 'text/csv' },
      body: csv,
    });
    expect(imported.status).toBe(200);

    const created = await fetch(`${tern.url}/campaigns`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        name: 'Launch',
        from: 'Acme <news@acme.test>',
        audience: 'launch',
        subject: 'Hello {{firstName}}',
        text: 'We launched.',
      }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const send = await fetch(`${tern.url}/campaigns/${id}/send`, { method: 'POST', headers: auth });
    expect(send.status).toBe(202);

    // Kill as soon as part of the audience is handed over.
    const progress = async () =>
      Number(
        (
          await pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM bulk_emails WHERE tenant_id = $1 AND source = $2`,
            [TENANT, `campaign:${id}`],
          )
        ).rows[0]!.n,
      );
    await waitFor(async () => (await progress()) >= 500, {
      timeoutMs: 60_000,
      intervalMs: 5,
      description: 'the fan-out to start',
    });
    tern.child.kill('SIGKILL');
    await new Promise((r) => tern.child.once('exit', r));
    procs.pop();

    const atKill = await progress();
    const { rows: killed } = await pool.query<{ status: string }>(
      'SELECT status FROM campaigns WHERE tenant_id = $1 AND id = $2',
      [TENANT, id],
    );
    // The kill really fell in the middle of the fan-out.
    expect(killed[0]!.status).toBe('sending');
    expect(atKill).toBeLessThan(CONTACTS);

    tern = await startTern({ env });
    procs.push(tern);
    const logged = async () =>
      (
        await pool.query<{ n: number; addresses: number }>(
          `SELECT count(*)::int AS n, count(DISTINCT to_email)::int AS addresses FROM email_logs
            WHERE tenant_id = $1 AND created_at IS NOT NULL AND tags ? $2`,
          [TENANT, `campaign:${id}`],
        )
      ).rows[0]!;
    await waitFor(
      async () => {
        const res = await fetch(`${tern.url}/campaigns/${id}`, { headers: auth });
        const body = (await res.json()) as { status: string };
        return body.status === 'sent' && (await logged()).n >= CONTACTS;
      },
      { timeoutMs: 120_000, intervalMs: 250, description: 'the campaign to finish after the restart' },
    );
    // Give a duplicate every chance to show up before counting.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await logged()).toEqual({ n: CONTACTS, addresses: CONTACTS });
    const body = (await (await fetch(`${tern.url}/campaigns/${id}`, { headers: auth })).json()) as {
      stats: { recipients: number };
    };
    expect(body.stats.recipients).toBe(CONTACTS);
    // The send path holds one row per contact (the sender's due-list), and the sender delivers them.
    const outgoing = await pool.query<{ n: number; ids: number; addresses: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT id)::int AS ids, count(DISTINCT message->>'to')::int AS addresses
         FROM outgoing_emails WHERE tenant_id = $1 AND message->'tags' ? $2`,
      [TENANT, `campaign:${id}`],
    );
    expect(outgoing.rows[0]).toEqual({ n: CONTACTS, ids: CONTACTS, addresses: CONTACTS });
    await waitFor(
      async () => {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM email_logs WHERE tenant_id = $1 AND tags ? $2 AND status = 'DELIVERED'`,
          [TENANT, `campaign:${id}`],
        );
        return rows[0]!.n > 0;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: 'the sender to deliver campaign mail' },
    );
  }, 300_000);
});
