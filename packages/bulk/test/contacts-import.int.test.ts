// The contact import's and export's statements (SPEC §14; `contacts`, owned by packages/bulk),
// called directly on a Postgres server and on PGlite: one upsert per batch on (tenant, email), a
// null field keeps the stored value, an import never resubscribes, the audience joined once; the
// export pages in id order, by audience, and stays in its tenant.
import type { Contact } from '@tern/contracts';
import { expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import { exportContacts, getContact, type ImportedContact, upsertContacts } from '../src/index.js';

const T0 = new Date('2026-02-01T09:00:00Z');
const T1 = new Date('2026-02-02T09:00:00Z');

const imported = (id: string, email: string, over: Partial<ImportedContact> = {}): ImportedContact => ({
  id,
  email,
  firstName: null,
  lastName: null,
  attributes: null,
  subscribed: null,
  audiences: null,
  ...over,
});

async function exported(
  db: Parameters<typeof exportContacts>[0],
  tenant: string,
  audience?: string,
  size = 2,
) {
  const pages: Contact[][] = [];
  for await (const page of exportContacts(db, tenant, audience, size)) pages.push(page);
  return pages;
}

onEveryPostgres('the contact import and export statements', (db) => {
  it('creates new addresses and updates known ones in one statement; null keeps the stored value', async () => {
    const T = 'imp-upsert';
    const first = await upsertContacts(
      db(),
      T,
      [
        imported('ct_1', 'ann@example.com', {
          firstName: 'Ann',
          lastName: 'Lee',
          attributes: { plan: 'pro' },
        }),
        imported('ct_2', 'bob@example.com', { subscribed: false, properties: { seats: 3 } }),
      ],
      null,
      T0,
    );
    expect(first).toEqual({
      created: 2,
      updated: 0,
      raced: [],
      createdIds: ['ct_1', 'ct_2'],
      updatedIds: [],
    });

    const second = await upsertContacts(
      db(),
      T,
      [
        // A known address keeps its id: the row's fresh id is not used.
        imported('ct_new', 'ann@example.com', { lastName: 'Smith', properties: { seats: 9 } }),
        imported('ct_3', 'cy@example.com', { firstName: 'Cy' }),
      ],
      null,
      T1,
    );
    expect(second.created).toBe(1);
    expect(second.updated).toBe(1);
    expect(second.createdIds).toEqual(['ct_3']);
    expect(second.updatedIds).toEqual(['ct_1']);

    const ann = await getContact(db(), T, 'ct_1');
    expect(ann).toMatchObject({
      id: 'ct_1',
      email: 'ann@example.com',
      firstName: 'Ann',
      lastName: 'Smith',
      attributes: { plan: 'pro' },
      properties: { seats: 9 },
      subscribed: true,
      createdAt: T0.toISOString(),
      updatedAt: T1.toISOString(),
    });
    expect(await getContact(db(), T, 'ct_new')).toBeNull();
    expect(await getContact(db(), 'imp-upsert-other', 'ct_1')).toBeNull();
  });

  it('unsubscribes on `subscribed: false` once, and never resubscribes on `true`', async () => {
    const T = 'imp-subscribe';
    await upsertContacts(db(), T, [imported('ct_s', 'sub@example.com')], null, T0);
    await upsertContacts(db(), T, [imported('ct_x', 'sub@example.com', { subscribed: false })], null, T1);
    const off = await getContact(db(), T, 'ct_s');
    expect(off?.subscribed).toBe(false);
    await upsertContacts(
      db(),
      T,
      [imported('ct_x', 'sub@example.com', { subscribed: true })],
      null,
      new Date('2026-02-03T09:00:00Z'),
    );
    expect((await getContact(db(), T, 'ct_s'))?.subscribed).toBe(false);
    expect((await getContact(db(), T, 'ct_s'))?.unsubscribedAt).toBe(off?.unsubscribedAt);
    expect(off?.unsubscribedAt).toBe(T1.toISOString());
  });

  it('joins every row to the import’s audience once, keeping or replacing the rows’ own', async () => {
    const T = 'imp-audience';
    await upsertContacts(
      db(),
      T,
      [imported('ct_a', 'a@example.com', { audiences: ['news'] }), imported('ct_b', 'b@example.com')],
      'spring',
      T0,
    );
    expect((await getContact(db(), T, 'ct_a'))?.audiences).toEqual(['news', 'spring']);
    expect((await getContact(db(), T, 'ct_b'))?.audiences).toEqual(['spring']);
    await upsertContacts(
      db(),
      T,
      [imported('x', 'a@example.com'), imported('y', 'b@example.com', { audiences: ['vip'] })],
      'spring',
      T1,
    );
    expect((await getContact(db(), T, 'ct_a'))?.audiences).toEqual(['news', 'spring']);
    expect((await getContact(db(), T, 'ct_b'))?.audiences).toEqual(['vip', 'spring']);
    expect(await upsertContacts(db(), T, [], 'spring', T1)).toEqual({
      created: 0,
      updated: 0,
      raced: [],
      createdIds: [],
      updatedIds: [],
    });
  });

  it('exports in id order, page by page, by audience, only the tenant’s contacts', async () => {
    const T = 'imp-export';
    await upsertContacts(
      db(),
      T,
      ['ct_e', 'ct_a', 'ct_d', 'ct_b', 'ct_c'].map((id, i) =>
        imported(id, `${id}@example.com`, { audiences: i % 2 === 0 ? ['even'] : [] }),
      ),
      null,
      T0,
    );
    await upsertContacts(db(), 'imp-export-other', [imported('ct_0', 'z@example.com')], null, T0);
    const all = await exported(db(), T);
    expect(all.map((p) => p.map((c) => c.id))).toEqual([['ct_a', 'ct_b'], ['ct_c', 'ct_d'], ['ct_e']]);
    const even = await exported(db(), T, 'even');
    expect(even.flat().map((c) => c.id)).toEqual(['ct_c', 'ct_d', 'ct_e']);
    expect(await exported(db(), 'imp-export-none')).toEqual([]);
  });
});
