// client.automations.* and client.events.track against the real query service (createApiApp on a
// fresh Postgres database, listening on a loopback port) and the worker's real automation runner:
// the routes of SPEC §27 over a socket, each status the SDK surfaces.

import { createAutomationRunner } from '@tern/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClock, createKey, jwtFor, suffix } from '../../../services/api/test/support.js';
import { init, TernApiError } from '../src/index.js';
import { useLoopbackApi, workerOptions } from './support.js';

const clock = createClock(new Date().toISOString());
const tenantId = `sdk-automations-${suffix()}`;
const api = useLoopbackApi(clock);
let key: string;
let readOnly: string;
let templateId: string;

beforeAll(async () => {
  const jwt = jwtFor(clock, tenantId);
  key = (
    await createKey(api.app, jwt, tenantId, {
      scopes: ['contacts:write', 'automations:read', 'automations:write', 'events:write'],
    })
  ).key;
  readOnly = (await createKey(api.app, jwt, tenantId, { scopes: ['automations:read'] })).key;
  const res = await fetch(`${api.baseUrl}/templates`, {
    method: 'POST',
    headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'hi', subject: 'Hi {{firstName}}', text: 'hello' }),
  });
  templateId = ((await res.json()) as { id: string }).id;
  // The property the `update` step sets: an automation's update is checked against the definitions.
  const defined = await fetch(`${api.baseUrl}/contact-properties`, {
    method: 'POST',
    headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'upgraded', type: 'boolean' }),
  });
  expect(defined.status).toBe(201);
});

async function status(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
    return { status: 200, message: '' };
  } catch (e) {
    if (!(e instanceof TernApiError)) throw e;
    return { status: e.status, message: e.message };
  }
}

describe('client.automations', () => {
  it('create, get, list, update, runs, remove; a tracked event starts a run', async () => {
    const client = init({ apiKey: key, baseUrl: api.baseUrl });
    const created = await client.automations.create({
      name: 'Upgrade',
      from: 'Acme <hi@acme.test>',
      trigger: { event: 'plan.upgraded' },
      steps: [{ send: templateId }, { delay: 'P1D' }, { update: { upgraded: true } }],
    });
    expect(created).toMatchObject({
      name: 'Upgrade',
      trigger: { event: 'plan.upgraded' },
      enabled: true,
      runs: { active: 0, completed: 0, stopped: 0 },
    });
    expect(created.id).toMatch(/^aut_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20}$/);
    expect(await client.automations.get(created.id)).toEqual(created);
    const list = await client.automations.list({ limit: 10 });
    expect(list.data.map((a) => a.id)).toContain(created.id);
    const renamed = await client.automations.update(created.id, { name: 'Upgrade v2' });
    expect(renamed.name).toBe('Upgrade v2');

    await client.contacts.create({ email: `ann-${tenantId}@example.com`, firstName: 'Ann' });
    const tracked = await client.events.track({
      email: `ANN-${tenantId}@example.com`,
      name: 'plan.upgraded',
      data: { plan: 'pro' },
    });
    expect(tracked.id).toMatch(/^evt_/);
    const runner = createAutomationRunner(workerOptions(api.stores, clock));
    await runner.runOnce();
    const runs = await client.automations.runs(created.id);
    expect(runs.meta.total).toBe(1);
    expect(runs.data[0]).toMatchObject({
      contactId: tracked.contactId,
      email: `ann-${tenantId}@example.com`,
      state: 'active',
      position: '1',
      waiting: 'delay',
      stepsDone: 1,
    });
    expect((await client.automations.runs(created.id, { state: 'completed' })).data).toEqual([]);
    await client.automations.remove(created.id);
    expect(await status(client.automations.get(created.id))).toMatchObject({ status: 404 });
    await runner.stop();
  });

  it('400 naming the problem, 403 without the scope, 404 unknown automation or contact', async () => {
    const client = init({ apiKey: key, baseUrl: api.baseUrl });
    const base = { name: 'x', from: 'hi@acme.test', trigger: { event: 'contact.created' } };
    const nest = (depth: number): Record<string, unknown> =>
      depth === 0 ? { delay: 'PT1M' } : { if: { audience: 'a' }, then: [nest(depth - 1)] };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, steps: [{ delay: 'P1M' }] }, 'delay must be an ISO 8601 duration'],
      [{ ...base, steps: [{ delay: 'P400D' }] }, 'at most 366 days'],
      [{ ...base, steps: [] }, 'steps must be an array of 1 to 100 steps'],
      [{ ...base, steps: Array.from({ length: 101 }, () => ({ delay: 'PT1M' })) }, 'at most 100 steps'],
      [{ ...base, steps: [nest(5)] }, 'at most 5 deep'],
      [{ ...base, trigger: { event: 'email.nope' } }, 'event must be one of'],
      [{ ...base, steps: [{ send: 'tpl_missing' }] }, 'template tpl_missing not found'],
      [
        { name: 'x', trigger: { event: 'contact.created' }, steps: [{ send: templateId }] },
        'from is required',
      ],
      [{ ...base, steps: [{ waitFor: { event: 'email.opened' } }] }, 'timeout'],
      [{ ...base, steps: [{ if: { property: 'plan', op: 'nope' } }] }, 'body.steps: if:'],
      [{ ...base, steps: [{ update: { '9lives': 1 } }] }, '9lives is not a property name'],
    ];
    for (const [body, message] of cases) {
      const r = await status(client.automations.create(body as never));
      expect(r.status, message).toBe(400);
      expect(r.message, message).toContain(message);
    }
    expect(await status(client.automations.get('aut_unknown'))).toMatchObject({ status: 404 });
    expect(await status(client.automations.runs('aut_unknown'))).toMatchObject({ status: 404 });
    expect(
      await status(client.events.track({ email: `nobody-${tenantId}@example.com`, name: 'x.y' })),
    ).toMatchObject({ status: 404, message: 'Contact not found' });
    expect(
      await status(client.events.track({ email: `nobody-${tenantId}@example.com`, name: 'email.sent' })),
    ).toMatchObject({ status: 400 });
    const reader = init({ apiKey: readOnly, baseUrl: api.baseUrl });
    expect(await status(reader.automations.create({ ...base, steps: [{ delay: 'PT1M' }] }))).toMatchObject({
      status: 403,
    });
    expect(await status(reader.automations.list())).toMatchObject({ status: 200 });
  });
});
