import { createUnsubscribeToken } from '@tern/domain';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CampaignFanout,
  createCampaignFanout,
  createSequenceScheduler,
  type SequenceScheduler,
} from '../src/index.js';
import {
  bearer,
  bulkJobOptions,
  closeAll,
  createKey,
  eventsOf,
  jwtFor,
  NOW,
  openApp,
  project,
  projectingMailer,
  type Stores,
  TRACKING_SECRET,
  testTenants,
} from './support.js';

// SPEC §27 end to end over a real socket: contact properties, topics, segments (with an
// engagement clause read from the projector's rollup), a campaign to a segment and a topic fanned
// out exactly once, a sequence naming a topic, and the preference page.

const { clock, run, A, B } = testTenants('audiences');

let stores: Stores;
let app: FastifyInstance;
let url: string;
let ownerA: string;
let writeKey: string;
let readKey: string;
const mailer = projectingMailer(() => stores);
let fanout: CampaignFanout;
let scheduler: SequenceScheduler;

type Json = Record<string, unknown>;
async function call(
  method: string,
  path: string,
  body?: unknown,
  auth: Record<string, string> = { 'x-api-key': writeKey },
) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: Json = {};
  try {
    json = JSON.parse(text) as Json;
  } catch {
    // CSV, HTML or empty
  }
  return { status: res.status, json, text };
}
const read = (path: string) => call('GET', path, undefined, { 'x-api-key': readKey });

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  url = await app.listen({ host: '127.0.0.1', port: 0 });
  ownerA = jwtFor(clock, A, 'owner');
  writeKey = (
    await createKey(app, ownerA, A, {
      scopes: [
        'contacts:write',
        'contacts:read',
        'campaigns:write',
        'campaigns:read',
        'sequences:write',
        'sequences:read',
      ],
    })
  ).key;
  readKey = (await createKey(app, ownerA, A, { scopes: ['contacts:read'] })).key;
  fanout = createCampaignFanout({ ...bulkJobOptions(stores, mailer, clock), chunkSize: 2 });
  scheduler = createSequenceScheduler(bulkJobOptions(stores, mailer, clock));
});

afterAll(() => closeAll(fanout, scheduler, app, stores));

describe('contact properties', () => {
  it('are defined typed, checked on contact writes, merged on PATCH', async () => {
    expect((await call('POST', '/contact-properties', { name: 'plan', type: 'string' })).status).toBe(201);
    expect((await call('POST', '/contact-properties', { name: 'seats', type: 'number' })).status).toBe(201);
    expect((await call('POST', '/contact-properties', { name: 'trialEnds', type: 'date' })).status).toBe(201);
    const dup = await call('POST', '/contact-properties', { name: 'plan', type: 'number' });
    expect(dup.status).toBe(409);
    const reserved = await call('POST', '/contact-properties', { name: 'email', type: 'string' });
    expect(reserved.status).toBe(400);
    expect(reserved.json.message).toMatch(/body\.name/);
    expect((await call('POST', '/contact-properties', { name: 'x', type: 'color' })).status).toBe(400);
    const list = await read('/contact-properties');
    expect((list.json.data as { name: string }[]).map((p) => p.name)).toEqual(['plan', 'seats', 'trialEnds']);

    const ok = await call('POST', '/contacts', {
      email: `ada-${run}@example.com`,
      properties: { plan: 'pro', seats: 12, trialEnds: '2026-07-01' },
    });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.properties).toEqual({ plan: 'pro', seats: 12, trialEnds: '2026-07-01T00:00:00.000Z' });
    const wrongType = await call('POST', '/contacts', {
      email: `bad-${run}@example.com`,
      properties: { seats: 'many' },
    });
    expect(wrongType.status).toBe(400);
    expect(wrongType.json.message).toBe('body.properties: property seats must be a number');
    const undefinedProp = await call('POST', '/contacts', {
      email: `bad-${run}@example.com`,
      properties: { color: 'red' },
    });
    expect(undefinedProp.status).toBe(400);
    const patched = await call('PATCH', `/contacts/${ok.json.id}`, {
      properties: { seats: 3, trialEnds: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.json.properties).toEqual({ plan: 'pro', seats: 3 });
  });

  it('travel through CSV import and export', async () => {
    const csv = `email,plan,seats\nbob-${run}@example.com,free,1\ncyd-${run}@example.com,pro,x\n`;
    const res = await fetch(`${url}/contacts/import`, {
      method: 'POST',
      headers: { 'x-api-key': writeKey, 'content-type': 'text/csv' },
      body: csv,
    });
    const result = (await res.json()) as Json;
    expect(result).toMatchObject({ rows: 2, created: 1, failed: 1 });
    expect(result.errors).toEqual([{ row: 3, message: 'property seats must be a number' }]);
    const exported = await read('/contacts/export');
    const lines = exported.text.trim().split('\n');
    expect(lines[0]).toBe(
      'id,email,first_name,last_name,subscribed,audiences,attributes,created_at,updated_at,plan,seats,trialEnds',
    );
    expect(lines.find((l) => l.includes(`bob-${run}`))).toMatch(/,free,1,$/);
  });

  it('DELETE removes the definition and its values', async () => {
    expect((await call('POST', '/contact-properties', { name: 'temp', type: 'boolean' })).status).toBe(201);
    const c = await call('POST', '/contacts', {
      email: `tmp-${run}@example.com`,
      properties: { temp: true },
    });
    expect(c.json.properties).toEqual({ temp: true });
    expect((await call('DELETE', '/contact-properties/temp')).status).toBe(204);
    expect((await call('DELETE', '/contact-properties/temp')).status).toBe(404);
    expect((await read(`/contacts/${c.json.id}`)).json.properties).toEqual({});
    await call('DELETE', `/contacts/${c.json.id}`);
  });
});

let weekly: string;
let launches: string;

describe('topics', () => {
  it('CRUD, and a contact’s choices checked and merged', async () => {
    const w = await call('POST', '/topics', { name: 'Weekly digest', default: 'opt_in', public: true });
    expect(w.status, w.text).toBe(201);
    expect(w.json).toMatchObject({ id: expect.stringMatching(/^top_/), default: 'opt_in', public: true });
    weekly = w.json.id as string;
    const l = await call('POST', '/topics', { name: 'Launches', default: 'opt_out', public: true });
    launches = l.json.id as string;
    const hidden = await call('POST', '/topics', { name: 'Internal', default: 'opt_in', public: false });
    expect((await call('POST', '/topics', { name: 'x', default: 'maybe', public: true })).status).toBe(400);
    expect((await read('/topics')).json.meta).toMatchObject({ total: 3 });
    const renamed = await call('PATCH', `/topics/${hidden.json.id}`, { name: 'Staff' });
    expect(renamed.json.name).toBe('Staff');
    expect((await call('DELETE', `/topics/${hidden.json.id}`)).status).toBe(204);
    expect((await read(`/topics/${hidden.json.id}`)).status).toBe(404);

    const list = await read(`/contacts?email=${encodeURIComponent(`bob-${run}@example.com`)}`);
    const bob = (list.json.data as Json[])[0]!;
    const chose = await call('PATCH', `/contacts/${bob.id}`, {
      topics: { [weekly]: 'opt_out', [launches]: 'opt_in' },
    });
    expect(chose.status).toBe(200);
    expect(chose.json.topics).toEqual({ [weekly]: 'opt_out', [launches]: 'opt_in' });
    const unknown = await call('PATCH', `/contacts/${bob.id}`, { topics: { top_nope: 'opt_in' } });
    expect(unknown.status).toBe(400);
    expect(unknown.json.message).toMatch(/^body\.topics: no topic top_nope/);
    const reset = await call('PATCH', `/contacts/${bob.id}`, { topics: { [weekly]: null } });
    expect(reset.json.topics).toEqual({ [launches]: 'opt_in' });
  });
});

let engagedSegment: string;

describe('segments', () => {
  it('filters by property, topic and engagement (the projector’s rollup), counted and listed', async () => {
    // ada opened mail 3 days ago; bob only received it 40 days ago.
    const ago = (days: number) => new Date(Date.parse(NOW) - days * 86_400_000).toISOString();
    await project(stores, [
      ...eventsOf(A, `em-ada-${run}`, [
        {
          type: 'email.queued',
          occurredAt: ago(3),
          data: { toEmail: `Ada-${run}@Example.com`, subject: 's', tags: ['welcome'] },
        },
        { type: 'email.delivered', occurredAt: ago(3) },
        { type: 'email.opened', occurredAt: ago(3) },
      ]),
      ...eventsOf(A, `em-bob-${run}`, [
        {
          type: 'email.queued',
          occurredAt: ago(40),
          data: { toEmail: `bob-${run}@example.com`, subject: 's' },
        },
        { type: 'email.delivered', occurredAt: ago(40) },
        { type: 'email.opened', occurredAt: ago(40), data: { machine: true } },
      ]),
      // Another tenant's engagement of the same address counts for nobody here.
      ...eventsOf(B, `em-b-${run}`, [
        {
          type: 'email.queued',
          occurredAt: ago(1),
          data: { toEmail: `bob-${run}@example.com`, subject: 's' },
        },
        { type: 'email.opened', occurredAt: ago(1) },
      ]),
    ]);
    const created = await call('POST', '/segments', {
      name: 'Engaged',
      filter: {
        and: [
          { engagement: 'opened', days: 30 },
          { property: 'seats', op: 'gte', value: 2 },
        ],
      },
    });
    expect(created.status, created.text).toBe(201);
    engagedSegment = created.json.id as string;
    const members = await read(`/segments/${engagedSegment}/contacts`);
    expect(members.status).toBe(200);
    expect(members.json.meta).toMatchObject({ total: 1 });
    expect((members.json.data as Json[]).map((c) => c.email)).toEqual([`ada-${run}@example.com`]);

    const count = async (filter: unknown) => (await call('POST', '/segments/count', { filter })).json.total;
    expect(await count({ engagement: 'received', days: 60 })).toBe(2);
    expect(await count({ engagement: 'opened', days: 60 })).toBe(1); // bob's open was a machine's
    expect(await count({ tag: 'welcome' })).toBe(1);
    expect(await count({ topic: launches })).toBe(1); // bob opted in; the default is out
    expect(await count({ not: { topic: weekly } })).toBe(0);
    expect(await count({ property: 'trialEnds', op: 'exists' })).toBe(0);
    expect(await count({ property: 'plan', op: 'contains', value: 'PR' })).toBe(1);
  });

  it('400 for a property not defined or a value of another type; 404 and 409 where due', async () => {
    const undef = await call('POST', '/segments', {
      name: 'x',
      filter: { property: 'color', op: 'eq', value: 'red' },
    });
    expect(undef.status).toBe(400);
    expect(undef.json.message).toMatch(/^body\.filter: property color is not defined/);
    const wrong = await call('POST', '/segments', {
      name: 'x',
      filter: { property: 'seats', op: 'gt', value: 'ten' },
    });
    expect(wrong.status).toBe(400);
    const deep = await call('POST', '/segments', {
      name: 'x',
      filter: { not: { not: { not: { not: { not: { not: { not: { not: { tag: 'a' } } } } } } } } },
    });
    expect(deep.status).toBe(400);
    expect((await read('/segments/seg_nope/contacts')).status).toBe(404);
    const renamed = await call('PATCH', `/segments/${engagedSegment}`, { name: 'Engaged pros' });
    expect(renamed.json).toMatchObject({ name: 'Engaged pros', filter: { and: expect.any(Array) } });
    // A key with contacts:read only may read, not write.
    expect(
      (await call('POST', '/segments', { name: 'x', filter: { tag: 'a' } }, { 'x-api-key': readKey })).status,
    ).toBe(403);
  });
});

describe('a campaign to a segment and a topic', () => {
  it('reaches the matching, subscribed contacts once, the segment evaluated when it starts', async () => {
    for (const n of [1, 2, 3, 4, 5]) {
      const res = await call('POST', '/contacts', {
        email: `m${n}-${run}@example.com`,
        properties: { plan: n <= 4 ? 'team' : 'free' },
        ...(n === 2 ? { topics: { [weekly]: 'opt_out' } } : {}),
        ...(n === 3 ? { subscribed: false } : {}),
      });
      expect(res.status).toBe(201);
    }
    const segment = await call('POST', '/segments', {
      name: 'Team',
      filter: { property: 'plan', op: 'eq', value: 'team' },
    });
    const body = { name: 'Team news', from: 'Acme <news@acme.test>', subject: 'Hi', text: 'Hello' };
    expect((await call('POST', '/campaigns', { ...body })).status).toBe(400); // neither audience nor segment
    expect((await call('POST', '/campaigns', { ...body, segment: 'seg_nope' })).json.message).toMatch(
      /^body\.segment/,
    );
    const campaign = await call('POST', '/campaigns', { ...body, segment: segment.json.id, topic: weekly });
    expect(campaign.status, campaign.text).toBe(201);
    expect(campaign.json).toMatchObject({ audience: null, segment: segment.json.id, topic: weekly });
    expect((await call('DELETE', `/segments/${segment.json.id}`)).status).toBe(409);
    expect((await call('POST', `/campaigns/${campaign.json.id}/send`)).status).toBe(202);

    const before = mailer.handed.length;
    await fanout.runOnce();
    const to = mailer.handed
      .slice(before)
      .map((m) => m.to)
      .sort();
    // m1 and m4: m2 opted out of the topic, m3 unsubscribed, m5 is not in the segment.
    expect(to).toEqual([`m1-${run}@example.com`, `m4-${run}@example.com`]);
    // A contact matching only now, after the start, is not added; a rerun sends nothing again.
    await call('POST', '/contacts', { email: `late-${run}@example.com`, properties: { plan: 'team' } });
    await fanout.runOnce();
    expect(mailer.handed.length - before).toBe(2);
    const { rows } = await stores.pool.query(
      'SELECT count(*)::int AS n FROM bulk_emails WHERE tenant_id = $1 AND source = $2',
      [A, `campaign:${campaign.json.id}`],
    );
    expect(rows[0].n).toBe(2);
    expect((await call('GET', `/campaigns/${campaign.json.id}`)).json).toMatchObject({ status: 'sent' });
  });
});

describe('a sequence naming a topic', () => {
  it('stops an enrollment of a contact that opted out', async () => {
    const seq = await call('POST', '/sequences', {
      name: 'Drip',
      from: 'Acme <news@acme.test>',
      topic: launches,
      steps: [{ delayMinutes: 0, subject: 'One', text: 'one' }],
    });
    expect(seq.status, seq.text).toBe(201);
    expect(seq.json.topic).toBe(launches);
    const inTopic = await call('POST', `/sequences/${seq.json.id}/enrollments`, {
      email: `bob-${run}@example.com`,
    });
    const outOfTopic = await call('POST', `/sequences/${seq.json.id}/enrollments`, {
      email: `m1-${run}@example.com`,
    });
    expect([inTopic.status, outOfTopic.status]).toEqual([201, 201]);
    const before = mailer.handed.length;
    await scheduler.runOnce();
    expect(mailer.handed.slice(before).map((m) => m.to)).toEqual([`bob-${run}@example.com`]);
    const stopped = await call('GET', `/sequences/${seq.json.id}/enrollments?state=stopped`);
    expect((stopped.json.data as Json[]).map((e) => [e.email, e.stopReason])).toEqual([
      [`m1-${run}@example.com`, 'unsubscribed'],
    ]);
    expect((await call('DELETE', `/topics/${launches}`)).status).toBe(409);
  });
});

describe('the preference page', () => {
  it('lists the public topics, saves choices, and one click still leaves everything', async () => {
    const email = `m4-${run}@example.com`;
    const token = createUnsubscribeToken(TRACKING_SECRET, { tenantId: A, email, source: 'campaign:x' });
    const page = await fetch(`${url}/u/${token}`);
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(html).toContain('Email preferences');
    expect(html).toContain(`value="${weekly}" checked`);
    expect(html).toContain(`value="${launches}">`);
    const saved = await fetch(`${url}/u/${token}/preferences`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `topic=${launches}`,
    });
    expect(saved.status).toBe(200);
    expect(await saved.text()).toContain('Your preferences are saved.');
    const contact = (await read(`/contacts?email=${encodeURIComponent(email)}`)).json.data as Json[];
    expect(contact[0]).toMatchObject({
      subscribed: true,
      topics: { [weekly]: 'opt_out', [launches]: 'opt_in' },
    });
    const oneClick = await fetch(`${url}/u/${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.status).toBe(200);
    expect(
      ((await read(`/contacts?email=${encodeURIComponent(email)}`)).json.data as Json[])[0],
    ).toMatchObject({
      subscribed: false,
    });
  });
});

describe('another tenant', () => {
  it('sees none of it', async () => {
    const ownerB = jwtFor(clock, B, 'owner');
    expect((await call('GET', `/segments/${engagedSegment}`, undefined, bearer(ownerB))).status).toBe(404);
    expect((await call('GET', `/topics/${weekly}`, undefined, bearer(ownerB))).status).toBe(404);
    expect((await call('GET', '/contact-properties', undefined, bearer(ownerB))).json.data).toEqual([]);
  });
});
