// The statements packages/templates owns (`templates`, SPEC §12), called directly on a Postgres
// server and on PGlite: tenant isolation, conflict and not-found answers, the page order and total.
import { expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import * as templates from '../src/index.js';

const T0 = new Date('2026-03-01T10:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const content = (name: string) => ({
  name,
  subject: `Hi {{name}} (${name})`,
  html: `<p>${name}</p>`,
  text: null,
});

onEveryPostgres('the templates statements (store.ts)', (db) => {
  it('inserts once per tenant and id; another tenant has its own namespace', async () => {
    const first = await templates.insertTemplate(db(), 'tpl-a', 'tpl_1', content('Welcome'), T0);
    expect(first).toEqual({
      id: 'tpl_1',
      name: 'Welcome',
      subject: 'Hi {{name}} (Welcome)',
      html: '<p>Welcome</p>',
      text: null,
      createdAt: T0.toISOString(),
      updatedAt: T0.toISOString(),
    });
    expect(await templates.insertTemplate(db(), 'tpl-a', 'tpl_1', content('Again'), at(5))).toBeNull();
    expect((await templates.getTemplate(db(), 'tpl-a', 'tpl_1'))?.name).toBe('Welcome');
    const other = await templates.insertTemplate(db(), 'tpl-b', 'tpl_1', content('Theirs'), at(1));
    expect(other?.name).toBe('Theirs');
    expect((await templates.getTemplate(db(), 'tpl-a', 'tpl_1'))?.name).toBe('Welcome');
    expect(await templates.getTemplate(db(), 'tpl-c', 'tpl_1')).toBeNull();
  });

  it('replaces content and updated_at only, and only the tenant’s own row', async () => {
    await templates.insertTemplate(db(), 'tpl-r', 'tpl_r', content('Before'), T0);
    const replaced = await templates.replaceTemplate(
      db(),
      'tpl-r',
      'tpl_r',
      { ...content('After'), text: 'plain' },
      at(60),
    );
    expect(replaced).toMatchObject({
      name: 'After',
      text: 'plain',
      createdAt: T0.toISOString(),
      updatedAt: at(60).toISOString(),
    });
    expect(await templates.replaceTemplate(db(), 'tpl-other', 'tpl_r', content('Nope'), at(61))).toBeNull();
    expect(await templates.replaceTemplate(db(), 'tpl-r', 'tpl_missing', content('Nope'), at(61))).toBeNull();
    expect(await templates.templateContent(db(), 'tpl-r', 'tpl_r')).toEqual({
      subject: 'Hi {{name}} (After)',
      html: '<p>After</p>',
      text: 'plain',
    });
  });

  it('lists newest first, ties by id in byte order, with the tenant’s total and no content', async () => {
    const T = 'tpl-list';
    await templates.insertTemplate(db(), T, 'tpl_b', content('B'), at(10));
    await templates.insertTemplate(db(), T, 'tpl_a', content('A'), at(10));
    await templates.insertTemplate(db(), T, 'tpl_Z', content('Z'), at(10));
    await templates.insertTemplate(db(), T, 'tpl_old', content('Old'), at(1));
    await templates.insertTemplate(db(), T, 'tpl_new', content('New'), at(20));
    await templates.insertTemplate(db(), 'tpl-list-other', 'tpl_x', content('X'), at(30));

    const first = await templates.listTemplates(db(), T, { page: 1, limit: 3 });
    expect(first.total).toBe(5);
    // "C" collation: 'tpl_b' > 'tpl_a' > 'tpl_Z' (uppercase sorts before lowercase).
    expect(first.items.map((t) => t.id)).toEqual(['tpl_new', 'tpl_b', 'tpl_a']);
    expect(first.items[0]).toEqual({
      id: 'tpl_new',
      name: 'New',
      subject: 'Hi {{name}} (New)',
      createdAt: at(20).toISOString(),
      updatedAt: at(20).toISOString(),
    });
    const second = await templates.listTemplates(db(), T, { page: 2, limit: 3 });
    expect(second.items.map((t) => t.id)).toEqual(['tpl_Z', 'tpl_old']);
    const past = await templates.listTemplates(db(), T, { page: 2 ** 40, limit: 100 });
    expect(past).toEqual({ items: [], total: 5 });
    expect(await templates.listTemplates(db(), 'tpl-none', { page: 1, limit: 10 })).toEqual({
      items: [],
      total: 0,
    });
  });

  it('deletes the tenant’s own row once; exists, names and content follow', async () => {
    const T = 'tpl-del';
    await templates.insertTemplate(db(), T, 'tpl_1', content('One'), T0);
    await templates.insertTemplate(db(), T, 'tpl_2', content('Two'), T0);
    await templates.insertTemplate(db(), 'tpl-del-other', 'tpl_1', content('Foreign'), T0);
    expect(await templates.templateExists(db(), T, 'tpl_1')).toBe(true);
    const names = await templates.templateNames(db(), T, ['tpl_1', 'tpl_2', 'tpl_unknown']);
    expect([...names.entries()]).toEqual(
      expect.arrayContaining([
        ['tpl_1', { name: 'One', subject: 'Hi {{name}} (One)' }],
        ['tpl_2', { name: 'Two', subject: 'Hi {{name}} (Two)' }],
      ]),
    );
    expect(names.size).toBe(2);
    expect((await templates.templateNames(db(), T, [])).size).toBe(0);

    expect(await templates.deleteTemplate(db(), T, 'tpl_1')).toBe(true);
    expect(await templates.deleteTemplate(db(), T, 'tpl_1')).toBe(false);
    expect(await templates.templateExists(db(), T, 'tpl_1')).toBe(false);
    expect(await templates.templateContent(db(), T, 'tpl_1')).toBeNull();
    expect(await templates.templateExists(db(), 'tpl-del-other', 'tpl_1')).toBe(true);
    expect([...(await templates.templateNames(db(), T, ['tpl_1', 'tpl_2'])).keys()]).toEqual(['tpl_2']);
  });

  it('createTemplateStore binds the same statements to the pool', async () => {
    const store = templates.createTemplateStore(db());
    const made = await store.insert('tpl-store', 'tpl_s', content('Bound'), T0);
    expect(made?.id).toBe('tpl_s');
    expect((await store.get('tpl-store', 'tpl_s'))?.name).toBe('Bound');
    expect((await store.list('tpl-store', { page: 1, limit: 10 })).total).toBe(1);
    expect(await store.delete('tpl-store', 'tpl_s')).toBe(true);
    expect(await store.get('tpl-store', 'tpl_s')).toBeNull();
  });
});
