import { openedEvent } from '@tern/domain';
import { idTime } from '@tern/kernel';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type AutomationRunner, createAutomationRunner, DEFAULT_AUTOMATION_LEASE_MS } from '../src/index.js';
import {
  bearer,
  bulkJobOptions,
  closeAll,
  jwtFor,
  openApp,
  project,
  projectingMailer,
  type Stores,
  testTenants,
} from './support.js';

/**
 * Automations (SPEC §27) end to end through the api's routes and the worker's runner, on the
 * real Postgres, the projector's sinks (the event stream the runner follows) and a settable clock:
 * time moves by `clock.set`/`advance`, never by sleeping.
 */
const { clock, run, A } = testTenants('automations');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let stores: Stores;
let app: FastifyInstance;
let runner: AutomationRunner;
let welcome: string;
let nudge: string;

/** A fresh session under the moving clock. */
const owner = () => bearer(jwtFor(clock, A, 'owner'));
const mailer = projectingMailer(() => stores);
const { handed } = mailer;
const to = (email: string) => handed.filter((m) => m.to === email);

const post = (url: string, payload: unknown) =>
  app.inject({ method: 'POST', url, headers: owner(), payload: payload as object });
const get = (url: string) => app.inject({ method: 'GET', url, headers: owner() });

async function template(name: string, subject: string): Promise<string> {
  const res = await post('/templates', { name, subject, text: `${name} {{firstName}}` });
  expect(res.statusCode).toBe(201);
  return res.json().id;
}

async function contact(email: string, properties: Record<string, unknown> = {}) {
  const res = await post('/contacts', { email, firstName: 'Ada' });
  expect(res.statusCode).toBe(201);
  const c = res.json() as { id: string; email: string };
  // Property values as the properties routes (the segments work of issue 47) store them.
  if (Object.keys(properties).length > 0)
    await stores.pool.query('UPDATE contacts SET properties = $3 WHERE tenant_id = $1 AND id = $2', [
      A,
      c.id,
      JSON.stringify(properties),
    ]);
  return c;
}

/** The contact's property values, read as an observer. */
async function propertiesOf(id: string): Promise<Record<string, unknown>> {
  const { rows } = await stores.pool.query(
    'SELECT properties FROM contacts WHERE tenant_id = $1 AND id = $2',
    [A, id],
  );
  return rows[0].properties;
}

async function automation(body: Record<string, unknown>): Promise<string> {
  const res = await post('/automations', { name: 'flow', from: 'Acme <hi@acme.test>', ...body });
  expect(res.statusCode, res.body).toBe(201);
  made.push(res.json().id);
  return res.json().id;
}

/** Each test's automations go after it: one test's triggers must not start another's runs. */
const made: string[] = [];
afterEach(async () => {
  for (const id of made.splice(0)) {
    const res = await app.inject({ method: 'DELETE', url: `/automations/${id}`, headers: owner() });
    expect(res.statusCode).toBe(204);
  }
});

async function runsOf(id: string) {
  const res = await get(`/automations/${id}/runs?limit=100`);
  expect(res.statusCode).toBe(200);
  return res.json().data as {
    contactId: string;
    state: string;
    position: string | null;
    waiting: string | null;
    stopReason: string | null;
    stepsDone: number;
  }[];
}

async function stepsOf(contactId: string, automationId: string) {
  const { rows } = await stores.pool.query<{ path: string; kind: string; outcome: string | null }>(
    `SELECT s.path, s.kind, s.outcome FROM automation_run_steps s
       JOIN automation_runs r ON r.tenant_id = s.tenant_id AND r.id = s.run_id
      WHERE r.tenant_id = $1 AND r.contact_id = $2 AND r.automation_id = $3 ORDER BY s.done_at, s.path`,
    [A, contactId, automationId],
  );
  return rows.map((r) => `${r.path}:${r.kind}${r.outcome ? `:${r.outcome}` : ''}`);
}

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  runner = createAutomationRunner(bulkJobOptions(stores, mailer, clock));
  welcome = await template('welcome', 'Welcome {{firstName}}');
  nudge = await template('nudge', 'Still there?');
  // The properties the `if` and `update` steps name: an automation's update is checked against them.
  for (const [name, type] of [
    ['engaged', 'boolean'],
    ['paid', 'boolean'],
    ['plan', 'string'],
    ['seats', 'number'],
    ['tier', 'string'],
    ['seen', 'number'],
  ])
    expect((await post('/contact-properties', { name, type })).statusCode).toBe(201);
});

afterAll(() => closeAll(runner, app, stores));

describe('wait for an event (moved clock)', () => {
  it('the event arrives → `then`; no event until the timeout → `else`', async () => {
    const id = await automation({
      trigger: { event: 'contact.created' },
      steps: [
        { send: welcome },
        {
          waitFor: { event: 'email.opened', timeout: 'P2D' },
          then: [{ update: { engaged: true } }],
          else: [{ send: nudge }],
        },
      ],
    });
    const start = clock.now().getTime();
    const ada = await contact(`wait-ada-${run}@example.com`);
    const bob = await contact(`wait-bob-${run}@example.com`);

    await runner.runOnce();
    expect(to(ada.email).map((m) => m.subject)).toEqual(['Welcome Ada']);
    expect(to(bob.email).map((m) => m.subject)).toEqual(['Welcome Ada']);
    expect(to(ada.email)[0]!.tags).toEqual([`automation:${id}`]);
    expect(to(ada.email)[0]!.unsubscribe).toMatch(new RegExp(`^automation:${id}:\\d+$`));
    let runs = await runsOf(id);
    expect(runs.map((r) => [r.state, r.position, r.waiting])).toEqual([
      ['active', '1', 'event'],
      ['active', '1', 'event'],
    ]);

    // Ada opens the welcome an hour later: the projector streams it, the runner follows the stream.
    clock.set(new Date(start + HOUR).toISOString());
    await project(stores, [
      openedEvent({ tenantId: A, emailId: to(ada.email)[0]!.id, at: clock.now(), nonce: `n-${run}` }),
    ]);
    await runner.runOnce();
    expect(await propertiesOf(ada.id)).toMatchObject({ engaged: true });
    expect(to(ada.email)).toHaveLength(1);
    expect(await stepsOf(ada.id, id)).toEqual(['0:send:queued', '1:waitFor:arrived', '1.then.0:update']);

    // Bob: nothing until the timeout, then the `else` branch.
    clock.set(new Date(start + 2 * DAY - 1000).toISOString());
    await runner.runOnce();
    expect(to(bob.email)).toHaveLength(1);
    runs = await runsOf(id);
    expect(runs.find((r) => r.contactId === bob.id)).toMatchObject({ state: 'active', position: '1' });
    clock.set(new Date(start + 2 * DAY).toISOString());
    await runner.runOnce();
    expect(to(bob.email).map((m) => m.subject)).toEqual(['Welcome Ada', 'Still there?']);
    expect(await stepsOf(bob.id, id)).toEqual(['0:send:queued', '1:waitFor:timeout', '1.else.0:send:queued']);
    expect((await propertiesOf(bob.id)).engaged).toBeUndefined();

    runs = await runsOf(id);
    expect(runs.map((r) => r.state)).toEqual(['completed', 'completed']);
    expect((await get(`/automations/${id}`)).json().runs).toEqual({ active: 0, completed: 2, stopped: 0 });
    // Nothing more, ever.
    clock.advance(30 * DAY);
    expect(await runner.runOnce()).toBe(0);
  });

  it('an event before the wait began does not end it; a tracked custom event does', async () => {
    const id = await automation({
      trigger: { event: 'trial.started' },
      steps: [
        { delay: 'PT1H' },
        { waitFor: { event: 'trial.converted', timeout: 'P1D' }, then: [{ update: { paid: true } }] },
      ],
    });
    const cy = await contact(`track-${run}@example.com`);
    const track = (name: string) => post('/events/track', { email: cy.email, name, data: { plan: 'pro' } });
    expect((await track('trial.started')).statusCode).toBe(202);
    await runner.runOnce();
    expect((await runsOf(id))[0]).toMatchObject({ position: '0', waiting: 'delay' });
    // Converted during the delay: before the wait began.
    clock.advance(HOUR / 2);
    await track('trial.converted');
    await runner.runOnce();
    clock.advance(HOUR / 2);
    await runner.runOnce();
    expect((await runsOf(id))[0]).toMatchObject({ state: 'active', position: '1', waiting: 'event' });
    clock.advance(HOUR);
    await track('trial.converted');
    await runner.runOnce();
    expect((await runsOf(id))[0]).toMatchObject({ state: 'completed', stepsDone: 3 });
    expect(await stepsOf(cy.id, id)).toEqual(['0:delay', '1:waitFor:arrived', '1.then.0:update']);
    expect(await propertiesOf(cy.id)).toMatchObject({ paid: true });
  });
});

describe('steps', () => {
  it('`if` on a property takes `then` or `else`; `update` sets and removes properties', async () => {
    const id = await automation({
      trigger: { event: 'contact.created' },
      steps: [
        {
          if: {
            and: [
              { property: 'plan', op: 'eq', value: 'pro' },
              { property: 'seats', op: 'gte', value: 5 },
            ],
          },
          then: [{ update: { tier: 'big', plan: null } }],
          else: [{ send: welcome }],
        },
        { update: { seen: 1 } },
      ],
    });
    const big = await contact(`if-big-${run}@example.com`, { plan: 'pro', seats: 10 });
    const small = await contact(`if-small-${run}@example.com`, { plan: 'pro', seats: 2 });
    await runner.runOnce();
    expect(await stepsOf(big.id, id)).toEqual(['0:if:then', '0.then.0:update', '1:update']);
    expect(await stepsOf(small.id, id)).toEqual(['0:if:else', '0.else.0:send:queued', '1:update']);
    expect(await propertiesOf(big.id)).toEqual({ seats: 10, tier: 'big', seen: 1 });
    expect(to(big.email)).toHaveLength(0);
    expect(to(small.email)).toHaveLength(1);
  });

  it('a contact unsubscribed or deleted mid-run stops it; `contact.updated` triggers', async () => {
    const id = await automation({
      trigger: { event: 'contact.updated' },
      steps: [{ delay: 'P1D' }, { send: welcome }],
    });
    const un = await contact(`stop-un-${run}@example.com`);
    const gone = await contact(`stop-gone-${run}@example.com`);
    const stays = await contact(`stop-stays-${run}@example.com`);
    for (const c of [un, gone, stays])
      await app.inject({
        method: 'PATCH',
        url: `/contacts/${c.id}`,
        headers: owner(),
        payload: { lastName: 'X' },
      });
    await runner.runOnce();
    expect((await runsOf(id)).map((r) => r.waiting)).toEqual(['delay', 'delay', 'delay']);
    await app.inject({
      method: 'PATCH',
      url: `/contacts/${un.id}`,
      headers: owner(),
      payload: { subscribed: false },
    });
    await app.inject({ method: 'DELETE', url: `/contacts/${gone.id}`, headers: owner() });
    clock.advance(DAY);
    await runner.runOnce();
    const runs = await runsOf(id);
    const of = (c: { id: string }) => runs.find((r) => r.contactId === c.id);
    expect(of(un)).toMatchObject({ state: 'stopped', stopReason: 'unsubscribed', position: null });
    expect(of(gone)).toMatchObject({ state: 'stopped', stopReason: 'erased' });
    expect(of(stays)).toMatchObject({ state: 'completed', stepsDone: 2 });
    expect(to(un.email)).toHaveLength(0);
    expect(to(gone.email)).toHaveLength(0);
    expect(to(stays.email)).toHaveLength(1);
  });
});

describe('exactly once', () => {
  it('send ids start with the step’s due time; a run made before migration 0550 keeps hashed ids', async () => {
    const id = await automation({
      trigger: { event: 'ordered.test' },
      steps: [{ delay: 'PT1H' }, { send: welcome }],
    });
    const hal = await contact(`ordered-hal-${run}@example.com`);
    const ian = await contact(`ordered-ian-${run}@example.com`);
    for (const c of [hal, ian]) await post('/events/track', { email: c.email, name: 'ordered.test' });
    const start = clock.now().getTime();
    await runner.runOnce();
    // What every run row holds once migration 0550 ran over it.
    await stores.pool.query(
      'UPDATE automation_runs SET ordered_ids = false WHERE tenant_id = $1 AND automation_id = $2 AND contact_id = $3',
      [A, id, ian.id],
    );
    clock.set(new Date(start + HOUR).toISOString());
    await runner.runOnce();
    const [timed] = to(hal.email).map((m) => m.id);
    expect(timed).toMatch(new RegExp(`^em_${idTime(start + HOUR)}[0-9a-f]{20}$`));
    const [hashed] = to(ian.email).map((m) => m.id);
    expect(hashed).toMatch(/^em_[0-9a-f]{32}$/);
    expect(await stepsOf(hal.id, id)).toEqual(['0:delay', '1:send:queued']);
  });

  it('a worker dying between the hand-over and the commit: the redo sends nothing twice, records the step once', async () => {
    let die = true;
    const dying = projectingMailer(
      () => stores,
      () => {
        if (die) {
          die = false;
          throw new Error('killed after the hand-over');
        }
      },
    );
    const crashing = createAutomationRunner(bulkJobOptions(stores, dying, clock));
    const other = createAutomationRunner(bulkJobOptions(stores, dying, clock));
    const id = await automation({
      trigger: { event: 'crash.test' },
      steps: [{ send: welcome }, { send: nudge }],
    });
    const dee = await contact(`crash-${run}@example.com`);
    await post('/events/track', { email: dee.email, name: 'crash.test' });
    await expect(crashing.runOnce()).rejects.toThrow('killed after the hand-over');
    // Its lease holds the run: another worker takes it only once the lease lapsed.
    await other.runOnce();
    expect(dying.handed).toHaveLength(1);
    clock.advance(DEFAULT_AUTOMATION_LEASE_MS + 1);
    await other.runOnce();
    expect(dying.handed.map((m) => m.subject)).toEqual(['Welcome Ada', 'Welcome Ada', 'Still there?']);
    expect(dying.handed[0]!.id).toBe(dying.handed[1]!.id);
    // Derived from the run's due time at its first step: its start, the same on the redo.
    const started = await stores.pool.query<{ started_at: Date }>(
      'SELECT started_at FROM automation_runs WHERE tenant_id = $1 AND automation_id = $2',
      [A, id],
    );
    expect(dying.handed[0]!.id).toMatch(
      new RegExp(`^em_${idTime(started.rows[0]!.started_at.getTime())}[0-9a-f]{20}$`),
    );
    const { rows } = await stores.pool.query(
      'SELECT count(*)::int AS n FROM outgoing_emails WHERE tenant_id = $1 AND id = ANY($2::text[])',
      [A, dying.handed.map((m) => m.id)],
    );
    expect(rows[0].n).toBe(2);
    expect(await stepsOf(dee.id, id)).toEqual(['0:send:queued', '1:send:queued']);
    await crashing.stop();
    await other.stop();
  });
});
