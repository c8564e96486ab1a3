import { createKeyring } from '@tern/privacy';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/services.js';
import { suppressionCheck } from '../src/index.js';
import {
  buildApp,
  createClock,
  createKey,
  ENCRYPTION_KEY,
  eventsOf,
  jwtFor,
  NOW,
  openStores,
  project,
  type Stores,
  suffix,
} from './support.js';

const clock = createClock(NOW);
const run = suffix();
const A = `erase-a-${run}`;
const B = `erase-b-${run}`;
const ADA = 'ada.erase@example.com';

let stores: Stores;
let app: FastifyInstance;
let ownerA: string;
let writeKeyA: string;
let readKeyA: string;

const erase = (payload: unknown, headers: Record<string, string> = { 'x-api-key': writeKeyA }) =>
  app.inject({ method: 'POST', url: '/contacts/erase', headers, payload: payload as object });

beforeAll(async () => {
  stores = await openStores();
  app = await buildApp(stores, clock);
  ownerA = jwtFor(clock, A, 'owner');
  writeKeyA = (await createKey(app, ownerA, A, { scopes: ['contacts:write'] })).key;
  readKeyA = (await createKey(app, ownerA, A, { scopes: ['contacts:read'] })).key;
});

afterAll(async () => {
  await app?.close();
  await stores?.close();
});

describe('POST /contacts/erase', () => {
  it('400 naming the field for a bad address or an unknown field; 401 without credential; 403 without contacts:write', async () => {
    const bad = await erase({ email: 'not-an-address' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain('body.email');
    const extra = await erase({ email: ADA, also: 1 });
    expect(extra.statusCode).toBe(400);
    expect(extra.json().message).toContain('also');
    expect((await erase({ email: ADA }, {})).statusCode).toBe(401);
    expect((await erase({ email: ADA }, { 'x-api-key': readKeyA })).statusCode).toBe(403);
  });

  it('202 with counts, scrubbing only this tenant’s rows; 200 with zero counts on a repeat; the hash suppresses', async () => {
    for (const tenant of [A, B]) {
      const owner = jwtFor(clock, tenant, 'owner');
      const created = await app.inject({
        method: 'POST',
        url: '/contacts',
        headers: { authorization: `Bearer ${owner}` },
        payload: { email: ADA, firstName: 'Ada', audiences: ['vip'] },
      });
      expect(created.statusCode).toBe(201);
      await project(
        stores,
        eventsOf(tenant, `em_erase_${tenant}`, [
          {
            type: 'email.queued',
            occurredAt: NOW,
            data: { toEmail: 'Ada.Erase@Example.com', subject: 'For Ada' },
          },
          { type: 'email.delivered', occurredAt: NOW },
        ]),
      );
      await stores.pool.query(
        `INSERT INTO suppressions (tenant_id, email, reason, source) VALUES ($1, $2, 'complaint', 'complaint')`,
        [tenant, ADA],
      );
    }
    const logsBefore = await stores.pool.query(
      'SELECT * FROM email_log_counts WHERE tenant_id = $1 ORDER BY day, status, project_id',
      [A],
    );

    const res = await erase({ email: ' ADA.Erase@example.com ' });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({
      erased: true,
      counts: {
        dataKeys: 0, // the events were projected directly, not sealed through the log
        contacts: 1,
        emails: 1,
        sandboxMessages: 0,
        webhookDeliveries: 0,
        suppressions: 1,
        unsubscribes: 0,
      },
    });

    const { rows: logA } = await stores.pool.query(
      'SELECT to_email, subject, state FROM email_logs WHERE tenant_id = $1',
      [A],
    );
    expect(logA).toHaveLength(1);
    expect(logA[0]).toMatchObject({ to_email: null, subject: null });
    expect(logA[0].state.queued).toMatchObject({ toEmail: null, subject: null });
    const { rows: timeline } = await stores.pool.query(
      "SELECT data FROM email_events WHERE tenant_id = $1 AND type = 'email.queued'",
      [A],
    );
    expect(timeline[0].data).toMatchObject({ toEmail: null, subject: null });
    // Counters hold no personal data and do not move.
    expect(
      (
        await stores.pool.query(
          'SELECT * FROM email_log_counts WHERE tenant_id = $1 ORDER BY day, status, project_id',
          [A],
        )
      ).rows,
    ).toEqual(logsBefore.rows);
    // The log entry stays listed, with null recipient and subject.
    const logs = await app.inject({
      method: 'GET',
      url: '/emails/logs',
      headers: { authorization: `Bearer ${ownerA}` },
    });
    expect(logs.json().data).toEqual([
      expect.objectContaining({ toEmail: null, subject: null, status: 'DELIVERED' }),
    ]);

    // Tenant B keeps everything.
    const { rows: logB } = await stores.pool.query('SELECT to_email FROM email_logs WHERE tenant_id = $1', [
      B,
    ]);
    expect(logB[0].to_email).toBe('Ada.Erase@Example.com');
    expect((await stores.pool.query('SELECT 1 FROM contacts WHERE tenant_id = $1', [B])).rowCount).toBe(1);

    // Kept as a keyed hash only: no clear address anywhere for tenant A, and a send is suppressed.
    const keyring = createKeyring({ pool: stores.pool, encryptionKey: ENCRYPTION_KEY });
    const { rows: erased } = await stores.pool.query(
      'SELECT recipient_hash FROM erased_recipients WHERE tenant_id = $1',
      [A],
    );
    expect(erased).toEqual([{ recipient_hash: keyring.recipientHash(A, ADA) }]);
    const check = suppressionCheck(keyring);
    expect(await check(stores.pool, A, 'Ada.ERASE@example.com')).toBe(true);
    expect(await check(stores.pool, A, 'someone.else@example.com')).toBe(false);
    expect((await stores.pool.query('SELECT 1 FROM suppressions WHERE tenant_id = $1', [A])).rowCount).toBe(
      0,
    );

    const again = await erase({ email: ADA });
    expect(again.statusCode).toBe(200);
    expect(Object.values(again.json().counts)).toEqual([0, 0, 0, 0, 0, 0, 0]);
  });

  it('scrubs again after the rescrub delay: what a process with the key still cached wrote meanwhile is removed', async () => {
    const quick = await buildApp(stores, clock, { erasureRescrubMs: 300 });
    try {
      const T = `erase-r-${run}`;
      const owner = jwtFor(clock, T, 'owner');
      await project(
        stores,
        eventsOf(T, `em_rescrub_${T}`, [
          { type: 'email.queued', occurredAt: NOW, data: { toEmail: 'late@example.com', subject: 'Late' } },
        ]),
      );
      const res = await quick.inject({
        method: 'POST',
        url: '/contacts/erase',
        headers: { authorization: `Bearer ${owner}` },
        payload: { email: 'late@example.com' },
      });
      expect(res.statusCode).toBe(202);
      // A projector elsewhere, its key cache not yet expired, folds an in-flight event with the
      // opened address after the erasure committed:
      await stores.pool.query(
        `UPDATE email_logs SET to_email = 'late@example.com', subject = 'Late',
                state = jsonb_set(state, '{queued,toEmail}', '"late@example.com"')
          WHERE tenant_id = $1`,
        [T],
      );
      await waitFor(
        async () => {
          const { rows } = await stores.pool.query(
            'SELECT to_email, state FROM email_logs WHERE tenant_id = $1',
            [T],
          );
          return rows[0].to_email === null && rows[0].state.queued.toEmail === null;
        },
        { timeoutMs: 5000, description: 'the second scrub' },
      );
    } finally {
      await quick.close();
    }
  });
});
