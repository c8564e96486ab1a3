// The campaign fan-out on the real send path (SPEC §11 + §15): rows in the sender's due-list
// (`outgoing_emails`) and email.queued in the log, once per contact even when the fan-out is redone.

import { newResourceId } from '@tern/api';
import { insertContact } from '@tern/bulk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCampaignFanout } from '../src/index.js';
import {
  bulkJobOptions,
  createClock,
  NOW,
  openStores,
  projectingMailer,
  type Stores,
  suffix,
} from './support.js';

const clock = createClock(NOW);
const A = `send-path-${suffix()}`;
let stores: Stores;

beforeAll(async () => {
  stores = await openStores();
});
afterAll(async () => {
  await stores?.close();
});

describe('campaign fan-out into outgoing_emails', () => {
  it('one due-list row and one log entry per contact, rendered, with unsubscribe headers; a redo adds nothing', async () => {
    for (let i = 0; i < 5; i++) {
      await insertContact(
        stores.pool,
        A,
        { id: newResourceId('contact'), email: `p${i}@example.com`, firstName: `P${i}`, audiences: ['news'] },
        clock.now(),
      );
    }
    const id = newResourceId('campaign');
    await stores.pool.query(
      `INSERT INTO campaigns (tenant_id, id, name, from_address, audience, subject, html, status, created_at, updated_at)
       VALUES ($1, $2, 'n', 'news@acme.test', 'news', 'Hi {{firstName}}', '<p>{{firstName}}</p>', 'sending', $3, $3)`,
      [A, id, clock.now()],
    );
    const mailer = projectingMailer(() => stores);
    const fanout = createCampaignFanout({ ...bulkJobOptions(stores, mailer, clock), chunkSize: 2 });
    expect(await fanout.runOnce()).toBe(5);
    const rows = async () =>
      (
        await stores.pool.query<{ id: string; state: string; message: Record<string, unknown> }>(
          `SELECT id, state, message FROM outgoing_emails WHERE tenant_id = $1 AND message->'tags' ? $2 ORDER BY id`,
          [A, `campaign:${id}`],
        )
      ).rows;
    const first = await rows();
    expect(first).toHaveLength(5);
    expect(first.every((r) => r.state === 'awaiting_log')).toBe(true);
    const p0 = first.find((r) => r.message.to === 'p0@example.com')!;
    expect(p0.message).toMatchObject({ from: 'news@acme.test', subject: 'Hi P0', html: '<p>P0</p>' });
    expect(p0.message.templateId).toBeUndefined();
    // What the unsubscribe headers name, not the headers: the sender adds them (no token stored).
    expect(p0.message).toMatchObject({ unsubscribe: `campaign:${id}` });
    expect(p0.message.headers).toBeUndefined();
    expect(mailer.appended.map((e) => e.id).sort()).toEqual(first.map((r) => `${r.id}:queued`).sort());

    await stores.pool.query(
      `UPDATE campaigns SET status = 'sending', fanout_cursor = NULL WHERE tenant_id = $1 AND id = $2`,
      [A, id],
    );
    expect(await fanout.runOnce()).toBe(5);
    expect((await rows()).map((r) => r.id)).toEqual(first.map((r) => r.id));
    const logged = await stores.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM email_logs WHERE tenant_id = $1 AND tags ? $2 AND created_at IS NOT NULL`,
      [A, `campaign:${id}`],
    );
    expect(logged.rows[0]!.n).toBe(5);
  });

  it('a campaign with sendRatePerMinute gets due times 60 000 / rate ms apart, across chunks and a redo (SPEC §23); its mail is bulk', async () => {
    const T = `${A}-paced`;
    for (let i = 0; i < 5; i++) {
      await insertContact(
        stores.pool,
        T,
        { id: newResourceId('contact'), email: `q${i}@example.com`, audiences: ['news'] },
        clock.now(),
      );
    }
    const id = newResourceId('campaign');
    await stores.pool.query(
      `INSERT INTO campaigns (tenant_id, id, name, from_address, audience, subject, text, status,
                              send_rate_per_minute, created_at, updated_at)
       VALUES ($1, $2, 'n', 'news@acme.test', 'news', 'Hi', 'Hi', 'sending', 120, $3, $3)`,
      [T, id, clock.now()],
    );
    const mailer = projectingMailer(() => stores);
    const fanout = createCampaignFanout({ ...bulkJobOptions(stores, mailer, clock), chunkSize: 2 });
    const start = clock.now().getTime();
    expect(await fanout.runOnce()).toBe(5);
    const rows = async () =>
      (
        await stores.pool.query<{ due_at: Date; bulk: boolean }>(
          `SELECT due_at, bulk FROM outgoing_emails WHERE tenant_id = $1 ORDER BY due_at`,
          [T],
        )
      ).rows;
    const first = await rows();
    // 120 per minute: 500 ms apart, the chunks (2, 2, 1) continuing one another.
    expect(first.map((r) => r.due_at.getTime() - start)).toEqual([0, 500, 1000, 1500, 2000]);
    expect(first.every((r) => r.bulk)).toBe(true);
    // A redo (the worker died before its cursor moved) keeps each email's due time.
    await stores.pool.query(
      `UPDATE campaigns SET status = 'sending', fanout_cursor = NULL, next_due_at = NULL WHERE tenant_id = $1 AND id = $2`,
      [T, id],
    );
    clock.advance(10_000);
    await fanout.runOnce();
    expect((await rows()).map((r) => r.due_at.getTime() - start)).toEqual([0, 500, 1000, 1500, 2000]);
  });
});
