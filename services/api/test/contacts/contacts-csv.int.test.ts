import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildApp,
  closeAll,
  createClock,
  createKey,
  jwtFor,
  NOW,
  openApp,
  type Stores,
  suffix,
} from '../support.js';

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
