import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSendingWorld, type SendingWorld, wallClock } from '../sending-support.js';
import { bearer, createProject, jwtFor, suffix } from '../support.js';

/**
 * Issue 24, item 6: the same Idempotency-Key and body from keys bound to two projects made the
 * second request replay the first's answer (202 with the first's id, nothing sent), and that id
 * was 404 for the second key. The key is scoped by (tenant, project) and the body is hashed after
 * the project is applied.
 */
const A = `idem-scope-${suffix()}`;
let world: SendingWorld;
let owner: string;
let keyP1: string;
let keyP2: string;
let keyTenant: string;
let p1: string;

const BODY = { from: 'Acme <hello@acme.test>', to: 'ada@example.com', subject: 'Same', text: 'Same body' };

async function createKey(body: Record<string, unknown>): Promise<string> {
  const res = await world.app.inject({
    method: 'POST',
    url: `/tenants/${A}/api-keys`,
    headers: bearer(owner),
    payload: { name: 'k', scopes: ['email:send', 'email:read'], ...body },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().key as string;
}

const project = (name: string) => createProject(world.app, owner, name);

const send = (key: string, idem: string, payload: unknown = BODY, url = '/emails/send') =>
  world.app.inject({
    method: 'POST',
    url,
    headers: { ...bearer(key), 'idempotency-key': idem },
    payload: payload as object,
  });

beforeAll(async () => {
  world = await openSendingWorld({ sender: false });
  owner = jwtFor(wallClock, A, 'owner');
  p1 = await project('p1');
  const p2 = await project('p2');
  keyP1 = await createKey({ projectId: p1 });
  keyP2 = await createKey({ projectId: p2 });
  keyTenant = await createKey({});
}, 120_000);

afterAll(async () => {
  await world?.close();
});

describe('Idempotency-Key per (tenant, project)', () => {
  it('the same key and body from two projects are two sends, each readable by its own key', async () => {
    const idem = `k-${suffix()}`;
    const first = await send(keyP1, idem);
    const second = await send(keyP2, idem);
    expect(first.statusCode, first.body).toBe(202);
    expect(second.statusCode, second.body).toBe(202);
    const id1 = first.json().id as string;
    const id2 = second.json().id as string;
    expect(id2).not.toBe(id1);
    const read = (key: string, id: string) =>
      world.app.inject({ url: `/emails/${id}`, headers: bearer(key) }).then((r) => r.statusCode);
    expect(await read(keyP1, id1)).toBe(200);
    expect(await read(keyP2, id2)).toBe(200);
    // Each project replays its own answer.
    expect((await send(keyP1, idem)).json().id).toBe(id1);
    expect((await send(keyP2, idem)).json().id).toBe(id2);
  });

  it('the batch route too', async () => {
    const idem = `b-${suffix()}`;
    const first = await send(keyP1, idem, [BODY], '/emails/batch');
    const second = await send(keyP2, idem, [BODY], '/emails/batch');
    expect(first.statusCode, first.body).toBe(202);
    expect(second.statusCode, second.body).toBe(202);
    expect(second.json().data[0].id).not.toBe(first.json().data[0].id);
  });

  it('hashes the body with its project applied: naming the bound project or leaving it out is one request', async () => {
    const idem = `h-${suffix()}`;
    const first = await send(keyP1, idem);
    const named = await send(keyP1, idem, { ...BODY, projectId: p1 });
    expect(named.statusCode, named.body).toBe(202);
    expect(named.json().id).toBe(first.json().id);
  });

  it('within one scope the key still refuses another body (409) and a tenant-wide key has its own scope', async () => {
    const idem = `c-${suffix()}`;
    expect((await send(keyTenant, idem)).statusCode).toBe(202);
    const other = await send(keyTenant, idem, { ...BODY, subject: 'Other' });
    expect(other.statusCode).toBe(409);
    expect(other.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
    const bound = await send(keyP1, idem);
    expect(bound.statusCode, bound.body).toBe(202);
  });
});
