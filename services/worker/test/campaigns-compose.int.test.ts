// Issue 24, item 3: one contact whose message cannot be composed must not stall a campaign.
// A rendered subject cut at 998 characters between the two halves of an emoji left a lone
// surrogate: the insert into `outgoing_emails` (jsonb) failed with 22P02, the fan-out retried the
// chunk forever and the campaign stayed `sending` with nothing sent. Real send path
// (`outgoingMailer`: outgoing_emails + email.queued), real Postgres.

import { newResourceId } from '@tern/api';
import { insertContact } from '@tern/bulk';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCampaignFanout, cutSubject, tryComposeMail } from '../src/index.js';
import {
  bulkJobOptions,
  closeAll,
  createKey,
  jwtFor,
  openApp,
  projectingMailer,
  type Stores,
  testTenants,
} from './support.js';

const { clock, A } = testTenants('compose');
const EMOJI = '\u{1F600}';

let stores: Stores;
let app: FastifyInstance;
let key: string;

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  key = (
    await createKey(app, jwtFor(clock, A, 'owner'), A, { scopes: ['campaigns:write', 'campaigns:read'] })
  ).key;
});
afterAll(() => closeAll(app, stores));

describe('a recipient whose subject is cut inside an emoji', () => {
  it('does not stall the campaign: every contact gets its mail, the long subject cut before the emoji', async () => {
    // 'Hello ' (6) + 991 letters puts the emoji's high surrogate at index 997: a cut at 998
    // keeps it without its low half.
    const plan = `${'a'.repeat(991)}${EMOJI} and more`;
    const contacts = [
      { email: 'c0@example.com', attributes: { plan: 'pro' } },
      { email: 'c1@example.com', attributes: { plan } },
      { email: 'c2@example.com', attributes: { plan: 'free' } },
    ];
    for (const c of contacts)
      await insertContact(
        stores.pool,
        A,
        { id: newResourceId('contact'), audiences: ['news'], ...c },
        clock.now(),
      );
    const headers = { 'x-api-key': key };
    const created = await app.inject({
      method: 'POST',
      url: '/campaigns',
      headers,
      payload: {
        name: 'long subject',
        from: 'news@acme.test',
        audience: 'news',
        subject: 'Hello {{plan}}',
        html: '<p>Hi</p>',
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().id as string;
    expect((await app.inject({ method: 'POST', url: `/campaigns/${id}/send`, headers })).statusCode).toBe(
      202,
    );

    const mailer = projectingMailer(() => stores);
    const fanout = createCampaignFanout({ ...bulkJobOptions(stores, mailer, clock), chunkSize: 10 });
    expect(await fanout.runOnce()).toBe(3);

    const { rows } = await stores.pool.query<{ message: { to: string; subject: string } }>(
      `SELECT message FROM outgoing_emails WHERE tenant_id = $1 AND message->'tags' ? $2`,
      [A, `campaign:${id}`],
    );
    const subjects = new Map(rows.map((r) => [r.message.to, r.message.subject]));
    expect(subjects.get('c0@example.com')).toBe('Hello pro');
    expect(subjects.get('c2@example.com')).toBe('Hello free');
    expect(subjects.get('c1@example.com')).toBe(`Hello ${'a'.repeat(991)}`);
    expect(mailer.appended).toHaveLength(3);

    const campaign = (await app.inject({ method: 'GET', url: `/campaigns/${id}`, headers })).json();
    expect(campaign.status).toBe('sent');
    expect(campaign.stats).toMatchObject({ recipients: 3, failed: 0 });
  });
});

describe('a recipient whose message cannot be composed', () => {
  const base = {
    id: 'em_x',
    from: 'news@acme.test',
    unsubscribeSource: 'campaign:cmp_x',
    tags: ['campaign:cmp_x'],
    templateId: null,
    source: { subject: 'Hi {{firstName}}', html: '<p>{{plan}}</p>', text: null },
  };
  const recipient = (attributes: Record<string, unknown>, firstName = 'Ada') => ({
    id: 'ct_x',
    email: 'ada@example.com',
    first_name: firstName,
    last_name: null,
    attributes,
  });

  it('is refused with a reason instead of reaching the send path: U+0000, a lone surrogate', () => {
    expect(tryComposeMail({ ...base, recipient: recipient({ plan: 'pro' }) })).toHaveProperty('mail');
    expect(tryComposeMail({ ...base, recipient: recipient({ plan: 'a\u0000b' }) })).toEqual({
      failure: 'invalid_characters',
    });
    expect(tryComposeMail({ ...base, recipient: recipient({}, 'x\uD83D') })).toEqual({
      failure: 'invalid_characters',
    });
  });

  it('cuts a subject on a code point boundary', () => {
    expect(cutSubject('a'.repeat(998))).toHaveLength(998);
    expect(cutSubject(`${'a'.repeat(997)}${EMOJI}`)).toBe('a'.repeat(997));
    expect(cutSubject(`${'a'.repeat(996)}${EMOJI}x`)).toBe(`${'a'.repeat(996)}${EMOJI}`);
  });

  it('is counted in stats.failed, not in recipients (campaigns and sequence steps share the stats)', async () => {
    // A stored contact cannot hold what fails composition (Postgres refuses it), so the skipped
    // recipient's row is what the fan-out writes for it: counted as failed, not as a recipient.
    const id = newResourceId('campaign');
    const source = `campaign:${id}`;
    await stores.pool.query(
      `INSERT INTO bulk_emails (tenant_id, email_id, source, step, contact_id, created_at, failed_reason)
       VALUES ($1, 'em_ok', $2, 0, 'ct_1', $3, NULL), ($1, 'em_bad', $2, 0, 'ct_2', $3, 'invalid_characters')`,
      [A, source, clock.now()],
    );
    const { mailStats, statsKey } = await import('@tern/bulk');
    const stats = (await mailStats(stores.pool, A, [source])).get(statsKey(source, 0));
    expect(stats).toMatchObject({ recipients: 1, failed: 1 });
  });
});
