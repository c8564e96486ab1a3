import { recordContactEvent } from '@tern/bulk';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AutomationRunner, createAutomationRunner } from '../src/index.js';
import {
  bulkJobOptions,
  closeAll,
  eventsOf,
  jwtFor,
  openApp,
  project,
  projectingMailer,
  type Stores,
  testTenants,
} from './support.js';

/**
 * Issue 47, the rest of SPEC §27 over a real socket (the api listening on a loopback port, plain
 * `fetch`) and the worker's real runner on a settable clock: automations switched off and on, the
 * `update` step checked against the property definitions, CSV imports triggering as single creates
 * do, custom events in the event stream (`GET /events`, SPEC §25) and their erasure, and
 * `email.received` starting runs.
 */
const { clock, run, A } = testTenants('aut-rest');
const HOUR = 3_600_000;

let stores: Stores;
let app: FastifyInstance;
let base: string;
let runner: AutomationRunner;

async function call(method: string, path: string, body?: unknown, contentType = 'application/json') {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${jwtFor(clock, A, 'owner')}`,
      ...(body === undefined ? {} : { 'content-type': contentType }),
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: each route's answer is read as the JSON it documents
  return { status: res.status, body: text ? JSON.parse(text) : null } as { status: number; body: any };
}

async function contact(email: string): Promise<string> {
  const res = await call('POST', '/contacts', { email });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

async function automation(body: Record<string, unknown>): Promise<string> {
  const res = await call('POST', '/automations', { name: 'flow', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

async function runsOf(id: string): Promise<{ contactId: string; email: string; state: string }[]> {
  const res = await call('GET', `/automations/${id}/runs?limit=100`);
  expect(res.status).toBe(200);
  return res.body.data;
}

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  base = (await app.listen({ host: '127.0.0.1', port: 0 })).replace('localhost', '127.0.0.1');
  runner = createAutomationRunner(
    bulkJobOptions(
      stores,
      projectingMailer(() => stores),
      clock,
    ),
  );
});

afterAll(() => closeAll(runner, app, stores));

describe('enable and disable', () => {
  it('a disabled automation starts no run; enabled again it does; the runs going on finish', async () => {
    const id = await automation({
      trigger: { event: 'signup.done' },
      steps: [{ delay: 'PT1H' }],
      enabled: false,
    });
    expect((await call('GET', `/automations/${id}`)).body.enabled).toBe(false);
    await contact(`off-${run}@example.com`);
    const track = (email: string) => call('POST', '/events/track', { email, name: 'signup.done' });
    expect((await track(`off-${run}@example.com`)).status).toBe(202);
    await runner.runOnce();
    expect(await runsOf(id)).toEqual([]);

    const on = await call('PATCH', `/automations/${id}`, { enabled: true });
    expect(on.body.enabled).toBe(true);
    await contact(`on-${run}@example.com`);
    expect((await track(`on-${run}@example.com`)).status).toBe(202);
    await runner.runOnce();
    expect((await runsOf(id)).map((r) => [r.email, r.state])).toEqual([[`on-${run}@example.com`, 'active']]);

    // Off again: the run going on finishes, a new trigger starts nothing.
    expect((await call('PATCH', `/automations/${id}`, { enabled: false })).body.enabled).toBe(false);
    expect((await track(`off-${run}@example.com`)).status).toBe(202);
    clock.advance(2 * HOUR);
    await runner.runOnce();
    expect((await runsOf(id)).map((r) => [r.email, r.state])).toEqual([
      [`on-${run}@example.com`, 'completed'],
    ]);
    expect((await call('PATCH', `/automations/${id}`, { enabled: 'no' })).status).toBe(400);
    await call('DELETE', `/automations/${id}`);
  });
});

describe('update steps and the property definitions', () => {
  it('a value not of its property’s type, or of no property, is a 400 naming it; a date is stored as …Z', async () => {
    expect((await call('POST', '/contact-properties', { name: 'plan', type: 'string' })).status).toBe(201);
    expect((await call('POST', '/contact-properties', { name: 'since', type: 'date' })).status).toBe(201);
    const trigger = { event: 'contact.created' };
    const cases: [unknown[], string][] = [
      [
        [{ update: { nope: 'x' } }],
        'body.steps: update: property nope is not defined (POST /contact-properties)',
      ],
      [[{ update: { plan: 5 } }], 'body.steps: update: property plan must be a string'],
      [
        [{ waitFor: { event: 'email.opened', timeout: 'P1D' }, then: [{ update: { since: 'soon' } }] }],
        'body.steps: update: property since must be an ISO 8601 date',
      ],
    ];
    for (const [steps, message] of cases) {
      const res = await call('POST', '/automations', { name: 'bad', trigger, steps });
      expect(res.status, message).toBe(400);
      expect(res.body.message).toBe(message);
    }
    const id = await automation({ trigger, steps: [{ update: { since: '2026-06-01', plan: null } }] });
    const stored = (await call('GET', `/automations/${id}`)).body;
    expect(stored.steps).toEqual([{ update: { since: '2026-06-01T00:00:00.000Z', plan: null } }]);
    const patched = await call('PATCH', `/automations/${id}`, { steps: [{ update: { plan: true } }] });
    expect(patched.status).toBe(400);
    expect(patched.body.message).toBe('body.steps: update: property plan must be a string');
    await call('DELETE', `/automations/${id}`);
  });
});

describe('CSV imports', () => {
  it('an imported contact triggers contact.created, an import that changes one contact.updated', async () => {
    const existing = `csv-old-${run}@example.com`;
    await contact(existing);
    const created = await automation({ trigger: { event: 'contact.created' }, steps: [{ delay: 'PT1H' }] });
    const updated = await automation({ trigger: { event: 'contact.updated' }, steps: [{ delay: 'PT1H' }] });
    const csv = `email,first_name\ncsv-a-${run}@example.com,Ann\ncsv-b-${run}@example.com,Bob\n${existing},Old\n`;
    const res = await call('POST', '/contacts/import', csv, 'text/csv');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ created: 2, updated: 1, failed: 0 });
    await runner.runOnce();
    const emails = async (id: string) => (await runsOf(id)).map((r) => r.email).sort();
    expect(await emails(created)).toEqual([`csv-a-${run}@example.com`, `csv-b-${run}@example.com`]);
    expect(await emails(updated)).toEqual([existing]);
    await call('DELETE', `/automations/${created}`);
    await call('DELETE', `/automations/${updated}`);
  });
});

describe('custom events in the event stream', () => {
  it('are listed by GET /events after the events before them, filtered by name, and scrubbed by erasure', async () => {
    const email = `track-${run}@example.com`;
    const contactId = await contact(email);
    await project(
      stores,
      eventsOf(A, `em_track_${run}`, [
        {
          type: 'email.queued',
          occurredAt: clock.now().toISOString(),
          data: { toEmail: email, subject: 'Hi' },
        },
      ]),
    );
    const tracked = await call('POST', '/events/track', {
      email,
      name: 'plan.upgraded',
      data: { plan: 'pro' },
    });
    expect(tracked.status).toBe(202);
    const all = (await call('GET', '/events?limit=1000')).body.data as {
      id: string;
      type: string;
      cursor: string;
    }[];
    const last = all.slice(-2);
    expect(last.map((e) => e.type)).toEqual(['email.queued', 'plan.upgraded']);
    expect(BigInt(last[1]!.cursor)).toBeGreaterThan(BigInt(last[0]!.cursor));
    const byName = await call('GET', '/events?types=plan.upgraded');
    expect(byName.body.data).toEqual([
      {
        id: tracked.body.id,
        cursor: last[1]!.cursor,
        type: 'plan.upgraded',
        timestamp: clock.now().toISOString(),
        data: { tenantId: A, contactId, email, data: { plan: 'pro' } },
      },
    ]);
    // Paging after the custom event's cursor: nothing more.
    expect((await call('GET', `/events?after=${last[1]!.cursor}`)).body.data).toEqual([]);
    expect((await call('GET', '/events?types=email.exploded')).status).toBe(400);

    expect([200, 202]).toContain((await call('POST', '/contacts/erase', { email })).status);
    const erased = await call('GET', '/events?types=plan.upgraded');
    expect(erased.body.data[0].data).toEqual({ tenantId: A, contactId, email: null, data: null });
    expect(JSON.stringify((await call('GET', '/events?limit=1000')).body)).not.toContain(email);
  });
});

describe('email.received', () => {
  it('mail from a contact starts the automations it triggers, once', async () => {
    const id = await automation({ trigger: { event: 'email.received' }, steps: [{ delay: 'PT1H' }] });
    const email = `replier-${run}@example.com`;
    const contactId = await contact(email);
    // What the inbound listener's hook runs for each stored message (services/tern's inbound role).
    const arrival = {
      tenantId: A,
      id: `inb_${run}`,
      name: 'email.received',
      email: email.toUpperCase(),
      at: clock.now(),
    };
    expect(await recordContactEvent(stores.pool, arrival)).toEqual({ kind: 'ok', contactId });
    expect(
      await recordContactEvent(stores.pool, { ...arrival, email: `stranger-${run}@example.com` }),
    ).toEqual({
      kind: 'no_contact',
    });
    await runner.runOnce();
    await recordContactEvent(stores.pool, arrival);
    await runner.runOnce();
    expect((await runsOf(id)).map((r) => [r.contactId, r.state])).toEqual([[contactId, 'active']]);
    await call('DELETE', `/automations/${id}`);
  });
});
