import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, closeAll, createKey, jwtFor, NOW, openApp, type Stores, testTenants } from '../support.js';

const { clock, run, A, B } = testTenants('contacts');

let stores: Stores;
let app: FastifyInstance;
let ownerA: string;
let memberA: string;
let ownerB: string;
let writeKeyA: string;
let readKeyA: string;
let otherKeyA: string;

type Headers = Record<string, string>;
const key = (k: string) => ({ 'x-api-key': k });
const create = (payload: unknown, headers: Headers = key(writeKeyA)) =>
  app.inject({ method: 'POST', url: '/contacts', headers, payload: payload as object });
const get = (url: string, headers: Headers = key(readKeyA)) => app.inject({ method: 'GET', url, headers });
const patch = (id: string, payload: unknown, headers: Headers = key(writeKeyA)) =>
  app.inject({ method: 'PATCH', url: `/contacts/${id}`, headers, payload: payload as object });
const del = (id: string, headers: Headers = key(writeKeyA)) =>
  app.inject({ method: 'DELETE', url: `/contacts/${id}`, headers });

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  ownerA = jwtFor(clock, A, 'owner');
  memberA = jwtFor(clock, A, 'member');
  ownerB = jwtFor(clock, B, 'owner');
  writeKeyA = (await createKey(app, ownerA, A, { scopes: ['contacts:write'] })).key;
  readKeyA = (await createKey(app, ownerA, A, { scopes: ['contacts:read'] })).key;
  otherKeyA = (await createKey(app, ownerA, A, { scopes: ['email:read', 'email:send'] })).key;
});

afterAll(() => closeAll(app, stores));

describe('POST /contacts', () => {
  it('201: creates the contact, address lowercased, subscribed by default', async () => {
    const res = await create({
      email: '  Ada.Lovelace@Example.COM ',
      firstName: 'Ada',
      attributes: { plan: 'pro', seats: 3, beta: true, note: null },
      audiences: ['newsletter', 'Product updates'],
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toEqual({
      id: expect.stringMatching(/^ct_[A-Za-z0-9]{24}$/),
      email: 'ada.lovelace@example.com',
      firstName: 'Ada',
      lastName: null,
      attributes: { plan: 'pro', seats: 3, beta: true, note: null },
      subscribed: true,
      unsubscribedAt: null,
      audiences: ['newsletter', 'Product updates'],
      properties: {},
      topics: {},
      createdAt: NOW,
      updatedAt: NOW,
    });
  });

  it('201: created unsubscribed when asked, with its time', async () => {
    const res = await create({ email: `quiet-${run}@example.com`, subscribed: false }, bearer(memberA));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ subscribed: false, unsubscribedAt: NOW });
  });

  it('409: the same address again in the tenant, in any case; another tenant may have it', async () => {
    const first = await create({ email: `twice-${run}@example.com` });
    expect(first.statusCode).toBe(201);
    const again = await create({ email: `TWICE-${run}@Example.com`, firstName: 'x' });
    expect(again.statusCode, again.body).toBe(409);
    expect(again.json()).toMatchObject({
      statusCode: 409,
      error: 'Conflict',
      message: 'A contact with this email already exists',
    });
    const { rows } = await stores.pool.query(
      'SELECT first_name FROM contacts WHERE tenant_id = $1 AND email = $2',
      [A, `twice-${run}@example.com`],
    );
    expect(rows).toEqual([{ first_name: null }]);
    expect((await create({ email: `twice-${run}@example.com` }, bearer(ownerB))).statusCode).toBe(201);
  });

  it('400: names the field (bad address, unknown field, bad audience, repeated audience)', async () => {
    const cases: [unknown, RegExp][] = [
      [{ email: 'not-an-address' }, /body\.email/],
      [{}, /body\.email/],
      [{ email: 'a@example.com', nickname: 'x' }, /nickname/],
      [{ email: 'a@example.com', audiences: [' padded'] }, /body\.audiences/],
      [{ email: 'a@example.com', audiences: ['a', 'a'] }, /audiences must not repeat/],
      [{ email: 'a@example.com', attributes: { nested: { x: 1 } } }, /body\.attributes/],
      [{ email: 'a@example.com', subscribed: 'yes' }, /body\.subscribed/],
    ];
    for (const [payload, message] of cases) {
      const res = await create(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().message).toMatch(message);
    }
    const { rows } = await stores.pool.query("SELECT 1 FROM contacts WHERE email = 'a@example.com'");
    expect(rows).toHaveLength(0);
  });

  it('401 without a credential; 403 for a key without contacts:write', async () => {
    expect((await create({ email: 'b@example.com' }, {})).statusCode).toBe(401);
    for (const k of [readKeyA, otherKeyA]) {
      const res = await create({ email: 'b@example.com' }, key(k));
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({
        message: 'Missing required API key scope',
        missingScope: 'contacts:write',
      });
    }
  });
});

describe('GET /contacts and GET /contacts/:id', () => {
  const T = `list-${run}`;
  let owner: string;
  const ids: string[] = [];

  beforeAll(async () => {
    owner = jwtFor(clock, T, 'owner');
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      const res = await create(
        { email: `p${i}@example.com`, audiences: i % 2 === 0 ? ['even'] : ['odd'] },
        bearer(owner),
      );
      ids.push(res.json().id);
    }
    clock.set(NOW);
  });

  it('200: newest first, paged like the delivery log', async () => {
    const page1 = await get('/contacts?limit=2', bearer(owner));
    expect(page1.statusCode, page1.body).toBe(200);
    expect(page1.json().data.map((c: { id: string }) => c.id)).toEqual([ids[4], ids[3]]);
    expect(page1.json().meta).toEqual({ page: 1, limit: 2, total: 5, totalPages: 3 });
    const page3 = await get('/contacts?limit=2&page=3', bearer(owner));
    expect(page3.json().data.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
    const past = await get('/contacts?limit=2&page=9', bearer(owner));
    expect(past.json()).toEqual({ data: [], meta: { page: 9, limit: 2, total: 5, totalPages: 3 } });
  });

  it('200: ?audience= narrows to the audience', async () => {
    const res = await get('/contacts?audience=even', bearer(owner));
    expect(res.json().data.map((c: { email: string }) => c.email)).toEqual([
      'p4@example.com',
      'p2@example.com',
      'p0@example.com',
    ]);
    expect(res.json().meta.total).toBe(3);
    expect((await get('/contacts?audience=none', bearer(owner))).json().meta.total).toBe(0);
  });

  it('200 with contacts:read; only the caller’s tenant', async () => {
    const res = await get('/contacts?limit=100');
    expect(res.statusCode).toBe(200);
    const emails = res.json().data.map((c: { email: string }) => c.email);
    expect(emails).toContain('ada.lovelace@example.com');
    expect(emails).not.toContain('p0@example.com');
  });

  it('400 for a bad page, limit or audience', async () => {
    for (const q of ['limit=0', 'limit=101', 'page=0', 'page=x', 'audience=%20x']) {
      const res = await get(`/contacts?${q}`);
      expect(res.statusCode, q).toBe(400);
    }
  });

  it('401 without a credential; 403 for a key without contacts:read (contacts:write does not imply it)', async () => {
    expect((await get('/contacts', {})).statusCode).toBe(401);
    expect((await get('/contacts', key(writeKeyA))).statusCode).toBe(403);
    expect((await get(`/contacts/${ids[0]}`, key(otherKeyA))).statusCode).toBe(403);
  });

  it('GET /contacts/:id — 200 for the tenant, 404 unknown or another tenant’s', async () => {
    const res = await get(`/contacts/${ids[1]}`, bearer(owner));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: ids[1], email: 'p1@example.com', audiences: ['odd'] });
    const other = await get(`/contacts/${ids[1]}`, bearer(ownerA));
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({
      statusCode: 404,
      error: 'Not Found',
      message: 'Contact not found',
      code: 'NOT_FOUND',
    });
    expect((await get('/contacts/ct_unknown', bearer(owner))).statusCode).toBe(404);
  });
});

describe('PATCH /contacts/:id', () => {
  let id: string;
  beforeAll(async () => {
    id = (await create({ email: `patch-${run}@example.com`, firstName: 'P', audiences: ['a'] })).json().id;
  });

  it('200: changes the given fields only; audiences and attributes replace', async () => {
    clock.advance(60_000);
    const res = await patch(id, { lastName: 'Q', audiences: ['b', 'c'], attributes: { k: 'v' } });
    clock.set(NOW);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      firstName: 'P',
      lastName: 'Q',
      audiences: ['b', 'c'],
      attributes: { k: 'v' },
      createdAt: NOW,
      updatedAt: '2026-06-15T12:01:00.000Z',
    });
    const cleared = await patch(id, { firstName: null }, bearer(memberA));
    expect(cleared.json()).toMatchObject({ firstName: null, lastName: 'Q' });
  });

  it('200: unsubscribing stamps unsubscribedAt once; resubscribing clears it', async () => {
    clock.advance(1000);
    const off = await patch(id, { subscribed: false });
    expect(off.json()).toMatchObject({ subscribed: false, unsubscribedAt: '2026-06-15T12:00:01.000Z' });
    clock.advance(1000);
    expect((await patch(id, { subscribed: false })).json().unsubscribedAt).toBe('2026-06-15T12:00:01.000Z');
    expect((await patch(id, { subscribed: true })).json()).toMatchObject({
      subscribed: true,
      unsubscribedAt: null,
    });
    clock.set(NOW);
  });

  it('409: the new address is another contact’s', async () => {
    const res = await patch(id, { email: 'ADA.LOVELACE@example.com' });
    expect(res.statusCode, res.body).toBe(409);
    expect((await get(`/contacts/${id}`)).json().email).toBe(`patch-${run}@example.com`);
    const moved = await patch(id, { email: `Moved-${run}@example.com` });
    expect(moved.json().email).toBe(`moved-${run}@example.com`);
  });

  it('400 names the field; 404 unknown or another tenant’s; 403 without contacts:write', async () => {
    const bad = await patch(id, { audiences: 'x' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toMatch(/body\.audiences/);
    expect((await patch(id, { firstName: 'B' }, bearer(ownerB))).statusCode).toBe(404);
    expect((await get(`/contacts/${id}`)).json().firstName).toBeNull();
    expect((await patch('ct_nope', { firstName: 'B' })).statusCode).toBe(404);
    expect((await patch(id, { firstName: 'B' }, key(readKeyA))).statusCode).toBe(403);
  });
});

describe('DELETE /contacts/:id', () => {
  it('204, then 404; another tenant’s id is 404 and the contact stays', async () => {
    const id = (await create({ email: `gone-${run}@example.com` })).json().id;
    expect((await del(id, bearer(ownerB))).statusCode).toBe(404);
    expect((await get(`/contacts/${id}`)).statusCode).toBe(200);
    expect((await del(id, key(readKeyA))).statusCode).toBe(403);
    expect((await del(id, {})).statusCode).toBe(401);
    const res = await del(id);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await get(`/contacts/${id}`)).statusCode).toBe(404);
    expect((await del(id)).statusCode).toBe(404);
  });
});

describe('GET /audiences', () => {
  it('200: names in use with member, subscribed and reachable counts, by name; tenant only', async () => {
    const T = `aud-${run}`;
    const owner = jwtFor(clock, T);
    await create({ email: 'x1@example.com', audiences: ['news', 'beta'] }, bearer(owner));
    await create({ email: 'x2@example.com', audiences: ['news'], subscribed: false }, bearer(owner));
    await create({ email: 'x3@example.com' }, bearer(owner));
    await create({ email: 'x4@example.com', audiences: ['news'] }, bearer(owner));
    // Suppressed (any case: addresses are compared lowercased): subscribed, yet not reached.
    const suppressed = await app.inject({
      method: 'POST',
      url: '/suppressions',
      headers: bearer(owner),
      payload: { email: 'X4@example.com' },
    });
    expect(suppressed.statusCode, suppressed.body).toBe(201);
    const res = await get('/audiences', bearer(owner));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      data: [
        { name: 'beta', contacts: 1, subscribed: 1, reachable: 1 },
        { name: 'news', contacts: 3, subscribed: 2, reachable: 1 },
      ],
      meta: { page: 1, limit: 20, total: 2, totalPages: 1 },
    });
    const page2 = await get('/audiences?limit=1&page=2', bearer(owner));
    expect(page2.json().data).toEqual([{ name: 'news', contacts: 3, subscribed: 2, reachable: 1 }]);
    expect((await get('/audiences?page=5', bearer(owner))).json().meta.total).toBe(2);
    expect((await get('/audiences', key(otherKeyA))).statusCode).toBe(403);
  });

  it('?name= narrows to one audience (none when no contact carries it); a bad name is a 400', async () => {
    const T = `aud-name-${run}`;
    const owner = jwtFor(clock, T);
    await create({ email: 'n1@example.com', audiences: ['news', 'beta'] }, bearer(owner));
    await create({ email: 'n2@example.com', audiences: ['news'] }, bearer(owner));
    const one = await get('/audiences?name=news', bearer(owner));
    expect(one.json()).toEqual({
      data: [{ name: 'news', contacts: 2, subscribed: 2, reachable: 2 }],
      meta: { page: 1, limit: 20, total: 1, totalPages: 1 },
    });
    const none = await get('/audiences?name=nobody&page=2', bearer(owner));
    expect(none.json()).toEqual({ data: [], meta: { page: 2, limit: 20, total: 0, totalPages: 0 } });
    // Over a real socket too: the 400 names the field.
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const bad = await fetch(`${url}/audiences?name=${encodeURIComponent(' padded')}`, {
      headers: bearer(owner),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/querystring\.name/);
  });
});
