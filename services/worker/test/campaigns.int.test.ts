import { newResourceId } from '@tern/api';
import { insertContact, ZERO_STATS } from '@tern/bulk';
import { idTime } from '@tern/kernel';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CampaignFanout, createCampaignFanout } from '../src/index.js';
import {
  bearer,
  bulkJobOptions,
  closeAll,
  createKey,
  eventsOf,
  jwtFor,
  openApp,
  project,
  projectingMailer,
  type Stores,
  testTenants,
  unsubscribeHeadersOf,
} from './support.js';

const { clock, run, A, B } = testTenants('campaigns');

let stores: Stores;
let app: FastifyInstance;
let ownerA: string;
let ownerB: string;
let writeKeyA: string;
let readKeyA: string;

/** Every mail handed to the send path, and the log: the projector's own Postgres sink. */
let failAfterEnqueue = 0;
const mailer = projectingMailer(
  () => stores,
  () => {
    if (failAfterEnqueue > 0) {
      failAfterEnqueue--;
      throw new Error('worker died after the append, before its cursor moved');
    }
  },
);
const { handed } = mailer;
let fanout: CampaignFanout;

type Headers = Record<string, string>;
const key = (k: string) => ({ 'x-api-key': k });
const post = (url: string, payload?: unknown, headers: Headers = key(writeKeyA)) =>
  app.inject({
    method: 'POST',
    url,
    headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
const get = (url: string, headers: Headers = key(readKeyA)) => app.inject({ method: 'GET', url, headers });

const SENT = { provider: 'sandbox', messageId: '<m@acme.test>' };
const BODY = {
  name: 'June newsletter',
  from: 'Acme <news@acme.test>',
  audience: 'news',
  subject: 'Hello {{firstName}}',
  html: '<p>Hi {{firstName}} ({{plan}})</p>',
};

async function addContact(tenant: string, email: string, extra: Record<string, unknown> = {}) {
  const c = await insertContact(
    stores.pool,
    tenant,
    { id: newResourceId('contact'), email, audiences: ['news'], ...extra },
    clock.now(),
  );
  if (c === 'exists') throw new Error('exists');
  return c;
}

async function logCount(tenant: string, campaignId: string): Promise<number> {
  const { rows } = await stores.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM email_logs WHERE tenant_id = $1 AND created_at IS NOT NULL AND tags ? $2`,
    [tenant, `campaign:${campaignId}`],
  );
  return Number(rows[0]!.n);
}

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  ownerA = jwtFor(clock, A, 'owner');
  ownerB = jwtFor(clock, B, 'owner');
  writeKeyA = (await createKey(app, ownerA, A, { scopes: ['campaigns:write'] })).key;
  readKeyA = (await createKey(app, ownerA, A, { scopes: ['campaigns:read'] })).key;
  fanout = createCampaignFanout({ ...bulkJobOptions(stores, mailer, clock), chunkSize: 3 });
});

afterAll(() => closeAll(fanout, app, stores));

describe('POST /campaigns', () => {
  it('201: a draft with zero stats', async () => {
    const res = await post('/campaigns', BODY);
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body.id).toMatch(/^cmp_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20}$/);
    expect(body).toMatchObject({ status: 'draft', audience: 'news', templateId: null, sentAt: null });
    expect(body.stats).toEqual(ZERO_STATS);
    // ZERO_STATS is the code's: every one of its figures is 0.
    expect(new Set(Object.values(ZERO_STATS))).toEqual(new Set([0]));
  });

  it('400 naming the field: no content, unknown template, past or far schedule, unknown field', async () => {
    const cases: [unknown, string][] = [
      [{ ...BODY, subject: undefined }, 'subject'],
      [{ ...BODY, html: undefined }, 'html'],
      [{ ...BODY, templateId: 'tpl_missing' }, 'templateId'],
      [{ ...BODY, scheduledAt: '2026-06-15T11:00:00Z' }, 'scheduledAt'],
      [{ ...BODY, scheduledAt: '2026-08-15T11:00:00Z' }, 'scheduledAt'],
      [{ ...BODY, from: 'not an address' }, 'from'],
      [{ ...BODY, extra: 1 }, 'extra'],
    ];
    for (const [payload, field] of cases) {
      const res = await post('/campaigns', JSON.parse(JSON.stringify(payload)));
      expect(res.statusCode, field).toBe(400);
      expect(res.json().message).toContain(field);
    }
    const list = await get('/campaigns');
    expect(list.json().data.every((c: { name: string }) => c.name === BODY.name)).toBe(true);
  });

  it('403 for a key without campaigns:write', async () => {
    const res = await post('/campaigns', BODY, key(readKeyA));
    expect(res.statusCode).toBe(403);
    expect(res.json().message).toBe('Missing required API key scope');
  });
});

describe('draft lifecycle', () => {
  it('PATCH changes a draft; a patch that leaves no content is a 400; another tenant gets 404', async () => {
    const id = (await post('/campaigns', BODY)).json().id;
    const changed = await app.inject({
      method: 'PATCH',
      url: `/campaigns/${id}`,
      headers: key(writeKeyA),
      payload: { name: 'Renamed', text: 'plain' },
    });
    expect(changed.statusCode).toBe(200);
    expect(changed.json()).toMatchObject({ name: 'Renamed', text: 'plain', subject: BODY.subject });
    const empty = await app.inject({
      method: 'PATCH',
      url: `/campaigns/${id}`,
      headers: key(writeKeyA),
      payload: { html: null, text: null },
    });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().message).toContain('html');
    expect((await get(`/campaigns/${id}`)).json().text).toBe('plain');
    const other = await app.inject({
      method: 'PATCH',
      url: `/campaigns/${id}`,
      headers: bearer(ownerB),
      payload: { name: 'x' },
    });
    expect(other.statusCode).toBe(404);
    expect(other.body).not.toContain('Renamed');
    expect((await get(`/campaigns/${id}`, bearer(ownerB))).statusCode).toBe(404);
  });

  it('DELETE removes a draft (204, then 404); a sent campaign cannot be changed or deleted (409)', async () => {
    const id = (await post('/campaigns', BODY)).json().id;
    expect(
      (await app.inject({ method: 'DELETE', url: `/campaigns/${id}`, headers: key(writeKeyA) })).statusCode,
    ).toBe(204);
    expect((await get(`/campaigns/${id}`)).statusCode).toBe(404);
    const sent = (await post('/campaigns', { ...BODY, audience: 'nobody' })).json().id;
    expect((await post(`/campaigns/${sent}/send`)).statusCode).toBe(202);
    await fanout.runOnce();
    expect((await get(`/campaigns/${sent}`)).json().status).toBe('sent');
    const del = await app.inject({ method: 'DELETE', url: `/campaigns/${sent}`, headers: key(writeKeyA) });
    expect(del.statusCode).toBe(409);
    const patch = await app.inject({
      method: 'PATCH',
      url: `/campaigns/${sent}`,
      headers: key(writeKeyA),
      payload: { name: 'x' },
    });
    expect(patch.statusCode).toBe(409);
    expect((await post(`/campaigns/${sent}/send`)).statusCode).toBe(409);
    expect((await post(`/campaigns/${sent}/cancel`)).statusCode).toBe(409);
  });
});

describe('fan-out', () => {
  it('one email per subscribed, non-suppressed contact of the audience, tagged, with unsubscribe headers', async () => {
    const eligible: { email: string }[] = [];
    for (let i = 0; i < 7; i++)
      eligible.push(
        await addContact(A, `reader${i}-${run}@example.com`, {
          firstName: `R${i}`,
          attributes: { plan: 'pro' },
        }),
      );
    await addContact(A, `gone-${run}@example.com`, { subscribed: false });
    const blocked = await addContact(A, `blocked-${run}@example.com`);
    await stores.pool.query(
      `INSERT INTO suppressions (tenant_id, email, reason, source, created_at) VALUES ($1, $2, 'hard_bounce', 'bounce', $3)`,
      [A, blocked.email, clock.now()],
    );
    await insertContact(
      stores.pool,
      A,
      { id: newResourceId('contact'), email: `other-${run}@example.com`, audiences: ['other'] },
      clock.now(),
    );
    await addContact(B, `reader0-${run}@example.com`);

    const id = (await post('/campaigns', BODY)).json().id;
    const send = await post(`/campaigns/${id}/send`);
    expect(send.statusCode).toBe(202);
    expect(send.json()).toEqual({ id, status: 'sending' });
    handed.length = 0;
    expect(await fanout.runOnce()).toBe(7);

    const mine = handed.filter((m) => m.tags.includes(`campaign:${id}`));
    expect(mine.map((m) => m.to).sort()).toEqual(eligible.map((c) => c.email).sort());
    expect(new Set(mine.map((m) => m.id)).size).toBe(7);
    const first = mine.find((m) => m.to === eligible[0]!.email)!;
    expect(first.subject).toBe('Hello R0');
    expect(first.html).toBe('<p>Hi R0 (pro)</p>');
    expect(first.from).toBe(BODY.from);
    // The headers are the sender's to add: the mail names what they unsubscribe from.
    expect(mine.every((m) => m.unsubscribe === `campaign:${id}`)).toBe(true);
    expect(unsubscribeHeadersOf(A, first)['List-Unsubscribe']).toMatch(
      /^<http:\/\/127\.0\.0\.1:3000\/u\/[A-Za-z0-9_-]+>, <mailto:/,
    );

    expect(await logCount(A, id)).toBe(7);
    const campaign = (await get(`/campaigns/${id}`)).json();
    expect(campaign.status).toBe('sent');
    expect(campaign.sentAt).toBe(clock.now().toISOString());
    expect(campaign.stats.recipients).toBe(7);
  });

  it('a redo of the whole fan-out (cursor reset) creates no second email', async () => {
    const id = (await post('/campaigns', BODY)).json().id;
    await post(`/campaigns/${id}/send`);
    await fanout.runOnce();
    const before = await logCount(A, id);
    expect(before).toBe(7);
    await stores.pool.query(
      `UPDATE campaigns SET status = 'sending', fanout_cursor = NULL, sent_at = NULL WHERE tenant_id = $1 AND id = $2`,
      [A, id],
    );
    handed.length = 0;
    expect(await fanout.runOnce()).toBe(7); // handed again, under the same ids…
    expect(await logCount(A, id)).toBe(7); // …and dropped as duplicates
    expect((await get(`/campaigns/${id}`)).json().stats.recipients).toBe(7);
  });

  it('email ids start with the campaign’s start, the same on a redo; a campaign made before migration 0530 keeps hashed ids', async () => {
    const mineOf = (id: string) => handed.filter((m) => m.tags.includes(`campaign:${id}`)).map((m) => m.id);
    const timed = (await post('/campaigns', BODY)).json().id;
    const old = (await post('/campaigns', BODY)).json().id;
    // What every campaign row holds once migration 0530 ran over it.
    await stores.pool.query('UPDATE campaigns SET ordered_ids = false WHERE tenant_id = $1 AND id = $2', [
      A,
      old,
    ]);
    await post(`/campaigns/${timed}/send`);
    await post(`/campaigns/${old}/send`);
    handed.length = 0;
    expect(await fanout.runOnce()).toBe(14);
    const first = { timed: mineOf(timed), old: mineOf(old) };
    const { rows } = await stores.pool.query<{ snapshot_at: Date }>(
      'SELECT snapshot_at FROM campaigns WHERE tenant_id = $1 AND id = $2',
      [A, timed],
    );
    const start = rows[0]!.snapshot_at.getTime();
    expect(first.timed).toHaveLength(7);
    for (const e of first.timed) {
      expect(e).toMatch(new RegExp(`^em_${idTime(start)}[0-9a-f]{20}$`));
      // After every id made before the campaign started, in byte order as in a locale's.
      const before = newResourceId('email', start - 1);
      expect(before < e && before.localeCompare(e, 'en-US') < 0).toBe(true);
    }
    expect(first.old).toHaveLength(7);
    for (const e of first.old) expect(e).toMatch(/^em_[0-9a-f]{32}$/);

    // A redo later (cursor reset, the clock moved on) derives the same ids for both.
    clock.advance(60_000);
    await stores.pool.query(
      `UPDATE campaigns SET status = 'sending', fanout_cursor = NULL, sent_at = NULL WHERE tenant_id = $1 AND id = ANY($2)`,
      [A, [timed, old]],
    );
    handed.length = 0;
    expect(await fanout.runOnce()).toBe(14);
    expect(mineOf(timed).sort()).toEqual([...first.timed].sort());
    expect(mineOf(old).sort()).toEqual([...first.old].sort());
    expect(await logCount(A, timed)).toBe(7);
  });

  it('a worker that dies after an append, before its cursor moved: another takes over after the lease, exact count', async () => {
    const id = (await post('/campaigns', BODY)).json().id;
    await post(`/campaigns/${id}/send`);
    failAfterEnqueue = 2; // the first two chunks die after their append
    await expect(fanout.runOnce()).rejects.toThrow('worker died');
    expect((await get(`/campaigns/${id}`)).json().status).toBe('sending');
    // Within the lease nobody takes it over.
    expect(await fanout.runOnce()).toBe(0);
    clock.advance(16_000);
    await expect(fanout.runOnce()).rejects.toThrow('worker died');
    clock.advance(16_000);
    await fanout.runOnce();
    expect(await logCount(A, id)).toBe(7);
    const campaign = (await get(`/campaigns/${id}`)).json();
    expect(campaign.status).toBe('sent');
    expect(campaign.stats.recipients).toBe(7);
  });

  it('scheduled: waits for scheduledAt; cancel before it falls due sends nothing', async () => {
    const at = new Date(clock.now().getTime() + 3_600_000).toISOString();
    const later = (await post('/campaigns', { ...BODY, scheduledAt: at })).json().id;
    const cancelled = (await post('/campaigns', { ...BODY, scheduledAt: at })).json().id;
    expect((await post(`/campaigns/${later}/send`)).json()).toEqual({ id: later, status: 'scheduled' });
    expect((await post(`/campaigns/${cancelled}/send`)).json()).toEqual({
      id: cancelled,
      status: 'scheduled',
    });
    expect(await fanout.runOnce()).toBe(0);
    const cancel = await post(`/campaigns/${cancelled}/cancel`);
    expect(cancel.statusCode).toBe(200);
    expect(cancel.json()).toEqual({ id: cancelled, status: 'cancelled' });
    expect((await post(`/campaigns/${cancelled}/cancel`)).statusCode).toBe(200);
    clock.advance(3_600_000);
    expect(await fanout.runOnce()).toBe(7);
    expect(await logCount(A, later)).toBe(7);
    expect(await logCount(A, cancelled)).toBe(0);
    expect((await get(`/campaigns/${cancelled}`)).json().status).toBe('cancelled');
    expect((await post('/campaigns/cmp_unknown/cancel')).statusCode).toBe(404);
  });

  it('stats follow the projection; an unsubscribe through the campaign link counts', async () => {
    const id = (await post('/campaigns', BODY)).json().id;
    await post(`/campaigns/${id}/send`);
    handed.length = 0;
    await fanout.runOnce();
    const [a, b, c] = handed;
    const t = clock.now().getTime();
    await project(stores, [
      ...eventsOf(A, a!.id, [
        { type: 'email.sent', occurredAt: new Date(t + 1).toISOString(), data: SENT },
        { type: 'email.delivered', occurredAt: new Date(t + 2).toISOString(), data: {} },
        { type: 'email.opened', occurredAt: new Date(t + 3).toISOString(), data: {} },
        {
          type: 'email.clicked',
          occurredAt: new Date(t + 4).toISOString(),
          data: { url: 'https://acme.test' },
        },
      ]),
      ...eventsOf(A, b!.id, [
        { type: 'email.sent', occurredAt: new Date(t + 1).toISOString(), data: SENT },
        { type: 'email.bounced', occurredAt: new Date(t + 2).toISOString(), data: { bounceType: 'hard' } },
      ]),
      ...eventsOf(A, c!.id, [
        { type: 'email.sent', occurredAt: new Date(t + 1).toISOString(), data: SENT },
        { type: 'email.delivered', occurredAt: new Date(t + 2).toISOString(), data: {} },
        { type: 'email.complained', occurredAt: new Date(t + 3).toISOString(), data: {} },
      ]),
    ]);
    const link = /<(http[^>]+)>/.exec(unsubscribeHeadersOf(A, a!)['List-Unsubscribe'])![1]!;
    const unsubscribe = await app.inject({
      method: 'POST',
      url: new URL(link).pathname,
      payload: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(unsubscribe.statusCode).toBe(200);
    const { stats } = (await get(`/campaigns/${id}`)).json();
    expect(stats).toEqual({
      recipients: 7,
      sent: 3,
      delivered: 2,
      opened: 1,
      clicked: 1,
      bounced: 1,
      complained: 1,
      unsubscribed: 1,
      failed: 0,
    });
    // The next campaign leaves out the unsubscribed, the bounced and the complaining contacts
    // (the projection suppressed the last two).
    const next = (await post('/campaigns', BODY)).json().id;
    await post(`/campaigns/${next}/send`);
    expect(await fanout.runOnce()).toBe(4);
  });

  it('GET /campaigns/:id/daily: each email once per kind on the day of its first such event; sums are the stats', async () => {
    // Sent two days ago (the audience is the contacts created before the send), read today.
    const DAY = 86_400_000;
    const before = clock.now();
    const id = (await post('/campaigns', BODY)).json().id;
    await post(`/campaigns/${id}/send`);
    handed.length = 0;
    await fanout.runOnce();
    const today = new Date(before.getTime() + 2 * DAY);
    clock.set(today.toISOString());
    const [a, b, c] = handed;
    const at = (day: number, ms: number) => new Date(today.getTime() + day * DAY + ms).toISOString();
    await project(stores, [
      ...eventsOf(A, a!.id, [
        { type: 'email.sent', occurredAt: at(-2, 1), data: SENT },
        { type: 'email.delivered', occurredAt: at(-2, 2), data: {} },
        { type: 'email.opened', occurredAt: at(-1, 0), data: {} },
        { type: 'email.clicked', occurredAt: at(-1, 1), data: { url: 'https://acme.test' } },
        { type: 'email.opened', occurredAt: at(0, 0), data: {} },
      ]),
      ...eventsOf(A, b!.id, [
        { type: 'email.sent', occurredAt: at(-2, 1), data: SENT },
        { type: 'email.delivered', occurredAt: at(-2, 2), data: {} },
        // A link scanner's open is no human one: b is opened on the day of its human open.
        { type: 'email.opened', occurredAt: at(-1, 0), data: { bot: true } },
        { type: 'email.opened', occurredAt: at(0, 0), data: {} },
      ]),
      ...eventsOf(A, c!.id, [
        { type: 'email.sent', occurredAt: at(-2, 1), data: SENT },
        { type: 'email.bounced', occurredAt: at(-2, 2), data: { bounceType: 'hard' } },
      ]),
    ]);
    const res = await get(`/campaigns/${id}/daily?days=3`);
    expect(res.statusCode, res.body).toBe(200);
    const day = (n: number) => new Date(today.getTime() + n * DAY).toISOString().slice(0, 10);
    expect(res.json()).toEqual({
      days: 3,
      daily: [
        { date: day(-2), sent: 3, delivered: 2, opened: 0, clicked: 0, bounced: 1 },
        { date: day(-1), sent: 0, delivered: 0, opened: 1, clicked: 1, bounced: 0 },
        { date: day(0), sent: 0, delivered: 0, opened: 1, clicked: 0, bounced: 0 },
      ],
    });
    const { stats } = (await get(`/campaigns/${id}`)).json();
    const sum = (k: string) =>
      (res.json().daily as Record<string, number>[]).reduce((n, d) => n + (d[k] ?? 0), 0);
    for (const k of ['sent', 'delivered', 'opened', 'clicked', 'bounced']) expect(sum(k), k).toBe(stats[k]);
    // The default period is 30 days; one day is today alone.
    expect((await get(`/campaigns/${id}/daily`)).json().daily).toHaveLength(30);
    expect((await get(`/campaigns/${id}/daily?days=1`)).json().daily).toEqual([
      { date: day(0), sent: 0, delivered: 0, opened: 1, clicked: 0, bounced: 0 },
    ]);
    // Another tenant's campaign, or none: 404. Over a real socket, a bad period is a 400 naming it.
    expect((await get(`/campaigns/${id}/daily`, bearer(jwtFor(clock, B)))).statusCode).toBe(404);
    expect((await get('/campaigns/cmp_unknown/daily')).statusCode).toBe(404);
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    for (const days of ['0', '91', '1e1']) {
      const bad = await fetch(`${url}/campaigns/${id}/daily?days=${days}`, { headers: key(readKeyA) });
      expect(bad.status, days).toBe(400);
      expect(((await bad.json()) as { message: string }).message).toMatch(/querystring\.days/);
    }
    clock.set(before.toISOString());
  });

  it('GET /campaigns lists newest first with stats; another tenant sees none of them', async () => {
    const list = await get('/campaigns?limit=2');
    expect(list.statusCode).toBe(200);
    expect(list.json().data).toHaveLength(2);
    expect(list.json().meta).toMatchObject({ page: 1, limit: 2 });
    expect(list.json().data[0].stats).toBeDefined();
    const other = await get('/campaigns', bearer(jwtFor(clock, B)));
    expect(other.statusCode, other.body).toBe(200);
    expect(other.json().data).toEqual([]);
  });
});
