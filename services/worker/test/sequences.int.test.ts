import { newResourceId } from '@tern/api';
import { insertContact } from '@tern/bulk';
import { idTime } from '@tern/kernel';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSequenceScheduler, type SequenceScheduler } from '../src/index.js';
import {
  bearer,
  bulkJobOptions,
  closeAll,
  createKey,
  jwtFor,
  openApp,
  projectingMailer,
  type Stores,
  testTenants,
  unsubscribeHeadersOf,
} from './support.js';

const { clock, run, A, B } = testTenants('sequences');
const MIN = 60_000;

let stores: Stores;
let app: FastifyInstance;
let ownerA: string;
let writeKeyA: string;
let readKeyA: string;
let scheduler: SequenceScheduler;

const mailer = projectingMailer(() => stores);
const { handed } = mailer;

type Headers = Record<string, string>;
const key = (k: string) => ({ 'x-api-key': k });
const post = (url: string, payload: unknown, headers: Headers = key(writeKeyA)) =>
  app.inject({ method: 'POST', url, headers, payload: payload as object });
const get = (url: string, headers: Headers = key(readKeyA)) => app.inject({ method: 'GET', url, headers });

/** Three steps: at once, after 60 minutes, then 120 minutes later. */
const BODY = {
  name: 'Onboarding',
  from: 'Acme <hello@acme.test>',
  steps: [
    { delayMinutes: 0, subject: 'Welcome {{firstName}}', text: 'one' },
    { delayMinutes: 60, subject: 'Tips', html: '<p>two</p>' },
    { delayMinutes: 120, subject: 'Last', text: 'three' },
  ],
};

async function contact(email: string, tenant = A) {
  const c = await insertContact(
    stores.pool,
    tenant,
    { id: newResourceId('contact'), email, firstName: 'Ada' },
    clock.now(),
  );
  if (c === 'exists') throw new Error('exists');
  return c;
}

const to = (email: string) => handed.filter((m) => m.to === email);

async function dueOf(enrollment: string): Promise<Date> {
  const { rows } = await stores.pool.query<{ next_due_at: Date }>(
    'SELECT next_due_at FROM sequence_enrollments WHERE tenant_id = $1 AND id = $2',
    [A, enrollment],
  );
  return rows[0]!.next_due_at;
}

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  ownerA = jwtFor(clock, A, 'owner');
  writeKeyA = (await createKey(app, ownerA, A, { scopes: ['sequences:write'] })).key;
  readKeyA = (await createKey(app, ownerA, A, { scopes: ['sequences:read'] })).key;
  scheduler = createSequenceScheduler(bulkJobOptions(stores, mailer, clock));
});

afterAll(() => closeAll(scheduler, app, stores));

describe('POST /sequences', () => {
  it('201 with its steps and zero stats', async () => {
    const res = await post('/sequences', BODY);
    expect(res.statusCode).toBe(201);
    const seq = res.json();
    expect(seq.id).toMatch(/^seq_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20}$/);
    expect(seq.steps).toHaveLength(3);
    expect(seq.steps[1]).toMatchObject({ delayMinutes: 60, subject: 'Tips', html: '<p>two</p>', text: null });
    expect(seq.steps[2].stats.recipients).toBe(0);
    expect(seq.enrollments).toEqual({ active: 0, completed: 0, stopped: 0, cancelled: 0 });
  });

  it('400 naming the field: no steps, 21 steps, a step without content, a negative delay, an unknown template', async () => {
    const step = { delayMinutes: 0, subject: 's', text: 't' };
    const cases: [unknown, string][] = [
      [{ ...BODY, steps: [] }, 'steps'],
      [{ ...BODY, steps: Array.from({ length: 21 }, () => step) }, 'steps'],
      [{ ...BODY, steps: [{ delayMinutes: 0, subject: 's' }] }, 'steps.0.html'],
      [{ ...BODY, steps: [{ ...step, delayMinutes: -1 }] }, 'delayMinutes'],
      [{ ...BODY, steps: [step, { delayMinutes: 5, templateId: 'tpl_nope' }] }, 'steps.1.templateId'],
    ];
    for (const [payload, field] of cases) {
      const res = await post('/sequences', payload);
      expect(res.statusCode, field).toBe(400);
      expect(res.json().message).toContain(field);
    }
  });
});

describe('enrollments', () => {
  it('201; the same contact again → 409; an unknown address or another tenant’s sequence → 404', async () => {
    const seq = (await post('/sequences', BODY)).json().id;
    const ada = await contact(`enroll-${run}@example.com`);
    const res = await post(`/sequences/${seq}/enrollments`, { email: ada.email.toUpperCase() });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      sequenceId: seq,
      contactId: ada.id,
      state: 'active',
      nextStep: 0,
      nextDueAt: clock.now().toISOString(),
    });
    expect((await post(`/sequences/${seq}/enrollments`, { email: ada.email })).statusCode).toBe(409);
    const unknown = await post(`/sequences/${seq}/enrollments`, { email: `nobody-${run}@example.com` });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().message).toBe('Contact not found');
    const ownerB = jwtFor(clock, B, 'owner');
    await contact(ada.email, B);
    expect(
      (await post(`/sequences/${seq}/enrollments`, { email: ada.email }, bearer(ownerB))).statusCode,
    ).toBe(404);
    expect((await get(`/sequences/${seq}`, bearer(ownerB))).statusCode).toBe(404);
    await app.inject({
      method: 'DELETE',
      url: `/sequences/${seq}/enrollments/${res.json().id}`,
      headers: key(writeKeyA),
    });
  });
});

describe('the schedule (controllable clock)', () => {
  it('step k at enrollment + Σ delays; an unsubscribe in the middle stops the rest', async () => {
    const seq = (await post('/sequences', BODY)).json().id;
    const ada = await contact(`drip-${run}@example.com`);
    const bob = await contact(`drip-bob-${run}@example.com`);
    const start = clock.now().getTime();
    await post(`/sequences/${seq}/enrollments`, { email: ada.email });
    await post(`/sequences/${seq}/enrollments`, { email: bob.email });

    await scheduler.runOnce();
    expect(to(ada.email).map((m) => m.subject)).toEqual(['Welcome Ada']);
    expect(to(ada.email)[0]!.tags).toEqual([`sequence:${seq}`, 'step:1']);
    expect(to(ada.email)[0]!.unsubscribe).toBe(`sequence:${seq}:0`);

    clock.set(new Date(start + 59 * MIN).toISOString());
    await scheduler.runOnce();
    expect(to(ada.email)).toHaveLength(1);

    clock.set(new Date(start + 60 * MIN).toISOString());
    await scheduler.runOnce();
    expect(to(ada.email).map((m) => m.subject)).toEqual(['Welcome Ada', 'Tips']);
    expect(to(bob.email)).toHaveLength(2);

    // Bob unsubscribes through the link of step 2.
    const link = /<(http[^>]+)>/.exec(unsubscribeHeadersOf(A, to(bob.email)[1]!)['List-Unsubscribe'])![1]!;
    const click = await app.inject({
      method: 'POST',
      url: new URL(link).pathname,
      payload: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(click.statusCode).toBe(200);

    clock.set(new Date(start + 179 * MIN).toISOString());
    await scheduler.runOnce();
    expect(to(ada.email)).toHaveLength(2);
    clock.set(new Date(start + 180 * MIN).toISOString());
    await scheduler.runOnce();
    expect(to(ada.email).map((m) => m.subject)).toEqual(['Welcome Ada', 'Tips', 'Last']);
    expect(to(bob.email)).toHaveLength(2);
    // Nothing more, ever.
    clock.set(new Date(start + 10_000 * MIN).toISOString());
    expect(await scheduler.runOnce()).toBe(0);

    const body = (await get(`/sequences/${seq}`)).json();
    expect(body.enrollments).toEqual({ active: 0, completed: 1, stopped: 1, cancelled: 0 });
    expect(body.steps.map((s: { stats: { recipients: number } }) => s.stats.recipients)).toEqual([2, 2, 1]);
    expect(body.steps[1].stats.unsubscribed).toBe(1);
    expect(body.steps[0].stats.unsubscribed).toBe(0);
    const { rows } = await stores.pool.query(
      `SELECT stop_reason FROM sequence_enrollments WHERE tenant_id = $1 AND sequence_id = $2 AND state = 'stopped'`,
      [A, seq],
    );
    expect(rows).toEqual([{ stop_reason: 'unsubscribed' }]);
    // Every step email is in the log under its own id.
    const logged = await stores.pool.query(
      `SELECT count(*)::int AS n FROM email_logs WHERE tenant_id = $1 AND tags ? $2 AND created_at IS NOT NULL`,
      [A, `sequence:${seq}`],
    );
    expect(logged.rows[0].n).toBe(5);
  });

  it('a suppression, a deleted contact and DELETE of the enrollment each stop the rest', async () => {
    const seq = (await post('/sequences', BODY)).json().id;
    const sup = await contact(`sup-${run}@example.com`);
    const del = await contact(`del-${run}@example.com`);
    const can = await contact(`can-${run}@example.com`);
    const start = clock.now().getTime();
    const ids: Record<string, string> = {};
    for (const c of [sup, del, can]) {
      ids[c.email] = (await post(`/sequences/${seq}/enrollments`, { email: c.email })).json().id;
    }
    await scheduler.runOnce();
    for (const c of [sup, del, can]) expect(to(c.email)).toHaveLength(1);

    await stores.pool.query(
      `INSERT INTO suppressions (tenant_id, email, reason, source, created_at) VALUES ($1, $2, 'manual', 'manual', $3)`,
      [A, sup.email, clock.now()],
    );
    await stores.pool.query('DELETE FROM contacts WHERE tenant_id = $1 AND id = $2', [A, del.id]);
    const cancel = await app.inject({
      method: 'DELETE',
      url: `/sequences/${seq}/enrollments/${ids[can.email]}`,
      headers: key(writeKeyA),
    });
    expect(cancel.statusCode).toBe(204);
    const again = await app.inject({
      method: 'DELETE',
      url: `/sequences/${seq}/enrollments/${ids[can.email]}`,
      headers: key(writeKeyA),
    });
    expect(again.statusCode).toBe(204);
    const unknown = await app.inject({
      method: 'DELETE',
      url: `/sequences/${seq}/enrollments/enr_unknown`,
      headers: key(writeKeyA),
    });
    expect(unknown.statusCode).toBe(404);

    clock.set(new Date(start + 1000 * MIN).toISOString());
    await scheduler.runOnce();
    for (const c of [sup, del, can]) expect(to(c.email)).toHaveLength(1);
    const { rows } = await stores.pool.query(
      `SELECT contact_id, state, stop_reason FROM sequence_enrollments WHERE tenant_id = $1 AND sequence_id = $2`,
      [A, seq],
    );
    const byContact = Object.fromEntries(rows.map((r) => [r.contact_id, [r.state, r.stop_reason]]));
    expect(byContact).toEqual({
      [sup.id]: ['stopped', 'suppressed'],
      [del.id]: ['stopped', 'erased'],
      [can.id]: ['cancelled', null],
    });
  });

  it('a step sent twice (a redo after a crash) is one email', async () => {
    const seq = (await post('/sequences', { ...BODY, steps: [BODY.steps[0]] })).json().id;
    const eve = await contact(`redo-${run}@example.com`);
    const enrollment = (await post(`/sequences/${seq}/enrollments`, { email: eve.email })).json().id;
    const due = await dueOf(enrollment);
    await scheduler.runOnce();
    // As if the worker died after its send, before the enrollment moved on; redone a minute later.
    await stores.pool.query(
      `UPDATE sequence_enrollments SET state = 'active', next_step = 0, next_due_at = $3 WHERE tenant_id = $1 AND id = $2`,
      [A, enrollment, due],
    );
    clock.advance(MIN);
    await scheduler.runOnce();
    const sent = to(eve.email);
    expect(sent).toHaveLength(2);
    expect(sent[0]!.id).toBe(sent[1]!.id);
    expect(sent[0]!.id).toMatch(new RegExp(`^em_${idTime(due.getTime())}[0-9a-f]{20}$`));
    const logged = await stores.pool.query(
      `SELECT count(*)::int AS n FROM email_logs WHERE tenant_id = $1 AND tags ? $2 AND created_at IS NOT NULL`,
      [A, `sequence:${seq}`],
    );
    expect(logged.rows[0].n).toBe(1);
    expect((await get(`/sequences/${seq}`)).json().steps[0].stats.recipients).toBe(1);
  });

  it('step ids start with each step’s due time, after what was sent before; an enrollment made before migration 0540 keeps hashed ids', async () => {
    const seq = (await post('/sequences', BODY)).json().id;
    const fay = await contact(`timed-${run}@example.com`);
    const gus = await contact(`hashed-${run}@example.com`);
    const start = clock.now().getTime();
    await post(`/sequences/${seq}/enrollments`, { email: fay.email });
    const old = (await post(`/sequences/${seq}/enrollments`, { email: gus.email })).json().id;
    // What every enrollment row holds once migration 0540 ran over it.
    await stores.pool.query(
      'UPDATE sequence_enrollments SET ordered_ids = false WHERE tenant_id = $1 AND id = $2',
      [A, old],
    );
    const sentBefore = newResourceId('email', start - 1);
    for (const minutes of [0, 60]) {
      clock.set(new Date(start + minutes * MIN).toISOString());
      await scheduler.runOnce();
    }
    const timed = to(fay.email).map((m) => m.id);
    expect(timed).toHaveLength(2);
    timed.forEach((id, k) => {
      expect(id).toMatch(new RegExp(`^em_${idTime(start + k * 60 * MIN)}[0-9a-f]{20}$`));
      expect(sentBefore < id && sentBefore.localeCompare(id, 'en-US') < 0).toBe(true);
    });
    expect(timed[0]! < timed[1]!).toBe(true);
    const hashed = to(gus.email).map((m) => m.id);
    expect(hashed).toHaveLength(2);
    for (const id of hashed) expect(id).toMatch(/^em_[0-9a-f]{32}$/);
  });

  it('GET /sequences lists newest first', async () => {
    const res = await get('/sequences?limit=2');
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toHaveLength(2);
    expect(res.json().meta.total).toBeGreaterThanOrEqual(5);
  });
});

describe('PATCH /sequences/:id and GET /sequences/:id/enrollments', () => {
  const patch = (id: string, payload: unknown, headers: Headers = key(writeKeyA)) =>
    app.inject({ method: 'PATCH', url: `/sequences/${id}`, headers, payload: payload as object });

  it('lists the enrollments newest first with their address and next step, by state; another tenant 404', async () => {
    const seq = (await post('/sequences', BODY)).json().id;
    const first = await contact(`list-1-${run}@example.com`);
    const second = await contact(`list-2-${run}@example.com`);
    const start = clock.now().getTime();
    const e1 = (await post(`/sequences/${seq}/enrollments`, { email: first.email })).json().id;
    clock.set(new Date(start + 1000).toISOString());
    const e2 = (await post(`/sequences/${seq}/enrollments`, { email: second.email })).json().id;
    await scheduler.runOnce();
    await app.inject({
      method: 'DELETE',
      url: `/sequences/${seq}/enrollments/${e1}`,
      headers: key(writeKeyA),
    });

    const res = await get(`/sequences/${seq}/enrollments`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      data: [
        {
          id: e2,
          sequenceId: seq,
          contactId: second.id,
          email: second.email,
          state: 'active',
          stopReason: null,
          nextStep: 1,
          // Step 2 is 60 minutes after step 1, which fell due at enrollment.
          nextDueAt: new Date(start + 1000 + 60 * MIN).toISOString(),
          enrolledAt: new Date(start + 1000).toISOString(),
        },
        expect.objectContaining({ id: e1, email: first.email, state: 'cancelled', nextDueAt: null }),
      ],
      meta: { page: 1, limit: 20, total: 2, totalPages: 1 },
    });
    const cancelled = (await get(`/sequences/${seq}/enrollments?state=cancelled`)).json();
    expect(cancelled.data.map((e: { id: string }) => e.id)).toEqual([e1]);
    expect(cancelled.meta.total).toBe(1);
    expect((await get(`/sequences/${seq}/enrollments?limit=1&page=2`)).json().data[0].id).toBe(e1);
    // A deleted contact leaves its enrollment without an address.
    await stores.pool.query('DELETE FROM contacts WHERE tenant_id = $1 AND id = $2', [A, first.id]);
    expect((await get(`/sequences/${seq}/enrollments?state=cancelled`)).json().data[0].email).toBeNull();
    expect((await get(`/sequences/${seq}/enrollments`, bearer(jwtFor(clock, B)))).statusCode).toBe(404);
    expect((await get('/sequences/seq_unknown/enrollments')).statusCode).toBe(404);
  });

  it('changes name, from and steps; enrollments keep their place and follow the new steps', async () => {
    const seq = (await post('/sequences', BODY)).json().id;
    const ada = await contact(`edit-${run}@example.com`);
    const start = clock.now().getTime();
    await post(`/sequences/${seq}/enrollments`, { email: ada.email });
    await scheduler.runOnce();
    expect(to(ada.email).map((m) => m.subject)).toEqual(['Welcome Ada']);

    const res = await patch(seq, {
      name: 'Onboarding v2',
      steps: [BODY.steps[0], { delayMinutes: 60, subject: 'Tips, revised', text: 'two' }],
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: seq, name: 'Onboarding v2', from: BODY.from });
    expect(res.json().steps.map((s: { subject: string }) => s.subject)).toEqual([
      'Welcome {{firstName}}',
      'Tips, revised',
    ]);
    // Step 1 already went out (its stats stay); step 2 is the revised one, at its due time; no step 3.
    expect(res.json().steps[0].stats.recipients).toBe(1);
    clock.set(new Date(start + 60 * MIN).toISOString());
    await scheduler.runOnce();
    clock.set(new Date(start + 1000 * MIN).toISOString());
    await scheduler.runOnce();
    expect(to(ada.email).map((m) => m.subject)).toEqual(['Welcome Ada', 'Tips, revised']);
    expect((await get(`/sequences/${seq}`)).json().enrollments).toEqual({
      active: 0,
      completed: 1,
      stopped: 0,
      cancelled: 0,
    });
    expect((await patch(seq, { from: 'Acme <team@acme.test>' })).json().from).toBe('Acme <team@acme.test>');
    expect((await patch('seq_unknown', { name: 'x' })).statusCode).toBe(404);
    expect((await patch(seq, { name: 'x' }, bearer(jwtFor(clock, B)))).statusCode).toBe(404);
    expect((await patch(seq, { name: 'x' }, key(readKeyA))).statusCode).toBe(403);
  });

  it('bad input over a real socket: a 400 naming the field, nothing changed', async () => {
    const seq = (await post('/sequences', BODY)).json().id;
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const send = (method: string, path: string, body?: unknown) =>
      fetch(`${url}${path}`, {
        method,
        headers: { ...key(writeKeyA), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
    const cases: [string, string, unknown, RegExp][] = [
      ['PATCH', `/sequences/${seq}`, {}, /name, from, topic or steps is required/],
      ['PATCH', `/sequences/${seq}`, { steps: [] }, /body\.steps/],
      [
        'PATCH',
        `/sequences/${seq}`,
        { steps: [{ delayMinutes: -1, subject: 's', text: 't' }] },
        /delayMinutes/,
      ],
      [
        'PATCH',
        `/sequences/${seq}`,
        { steps: [{ delayMinutes: 0, templateId: 'tpl_nope' }] },
        /steps\.0\.templateId/,
      ],
      ['PATCH', `/sequences/${seq}`, { name: 'x', extra: 1 }, /extra/],
      ['PATCH', `/sequences/${seq}`, '{"name":', /JSON|body/i],
    ];
    for (const [method, path, body, message] of cases) {
      const res = await send(method, path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { message: string }).message).toMatch(message);
    }
    const list = await fetch(`${url}/sequences/${seq}/enrollments?state=paused`, { headers: key(readKeyA) });
    expect(list.status).toBe(400);
    expect(((await list.json()) as { message: string }).message).toMatch(/querystring\.state/);
    expect((await get(`/sequences/${seq}`)).json()).toMatchObject({ name: BODY.name, from: BODY.from });
  });
});
