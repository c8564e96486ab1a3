/// <reference lib="dom" />
/**
 * The audience pages of SPEC §27 (issue 47) in Chromium against the run's Tern: contact properties
 * defined and deleted in the browser, topics added and made private, and a segment built from
 * conditions whose live count and members are the API's own answers (`POST /segments/count`,
 * `GET /segments/:id/contacts`), with a filter the API refuses shown as such; an existing segment
 * edited in its conditions (a nested one as JSON, with why).
 */
import { describe, expect, it } from 'vitest';
import {
  api,
  apiWrite,
  checkPage,
  dashboardFile,
  expectKeptAsJson,
  expectRefusalsLogged,
} from './fixture.js';

interface Property {
  name: string;
  type: string;
}
interface Topic {
  id: string;
  name: string;
  default: string;
  public: boolean;
}

describe('properties, topics and segments, in Chromium', () => {
  const { tern, open } = dashboardFile('audiences');

  it('defines properties and topics, builds a segment with its live count, lists its members', async () => {
    const w = await open('/properties');
    await w.page.getByTestId('empty').getByText('No contact property yet.').waitFor();
    await checkPage(w, 'properties-empty');

    // Properties, defined in the browser.
    for (const [name, type] of [
      ['plan', 'string'],
      ['seats', 'number'],
      ['legacy', 'boolean'],
    ]) {
      await w.page.getByLabel('Property name').fill(name!);
      await w.page.getByLabel('Type').selectOption(type!);
      await w.page.getByRole('button', { name: 'Add property' }).click();
      await w.page.locator(`[data-testid="properties"] tbody tr[data-id="${name}"]`).waitFor();
    }
    expect((await api<{ data: Property[] }>(tern, '/contact-properties')).data).toEqual([
      expect.objectContaining({ name: 'legacy', type: 'boolean' }),
      expect.objectContaining({ name: 'plan', type: 'string' }),
      expect.objectContaining({ name: 'seats', type: 'number' }),
    ]);
    // A name already defined: the API's 409, shown.
    await w.page.getByLabel('Property name').fill('plan');
    await w.page.getByRole('button', { name: 'Add property' }).click();
    await w.page.getByRole('alert').getByText('Contact property plan already exists').waitFor();
    expectRefusalsLogged(w, 409);
    // Delete one, confirmed.
    await w.page.getByRole('button', { name: 'Delete legacy' }).click();
    await w.page.getByRole('button', { name: 'Delete legacy and its values' }).click();
    await expect
      .poll(async () =>
        (await api<{ data: Property[] }>(tern, '/contact-properties')).data.map((p) => p.name),
      )
      .toEqual(['plan', 'seats']);
    await checkPage(w, 'properties');

    // Topics.
    await w.page.goto(`${tern.url}/#/topics`);
    await w.page.getByTestId('empty').getByText('No topic yet.').waitFor();
    await w.page.getByLabel('Topic name').fill('Product updates');
    await w.page.getByLabel('Contacts who never chose').selectOption('opt_out');
    await w.page.getByRole('button', { name: 'Add topic' }).click();
    await w.page.locator('[data-testid="topics"] tbody tr', { hasText: 'Product updates' }).waitFor();
    const [topic] = (await api<{ data: Topic[] }>(tern, '/topics')).data;
    expect(topic).toMatchObject({ name: 'Product updates', default: 'opt_out', public: true });
    await w.page.getByRole('button', { name: 'Make private Product updates' }).click();
    await expect.poll(async () => (await api<Topic>(tern, `/topics/${topic!.id}`)).public).toBe(false);
    await w.page.getByRole('button', { name: 'Make public Product updates' }).waitFor();
    await checkPage(w, 'topics');

    // Contacts with values (through the API, as an application writes them).
    const people: [string, Record<string, unknown>, Record<string, string>?][] = [
      ['ada@example.com', { plan: 'pro', seats: 12 }, { [topic!.id]: 'opt_in' }],
      ['bob@example.com', { plan: 'pro', seats: 2 }],
      ['cy@example.com', { plan: 'free', seats: 30 }],
      ['di@example.com', {}],
    ];
    for (const [email, properties, topics] of people)
      await apiWrite(tern, 'POST', '/contacts', { email, properties, ...(topics ? { topics } : {}) });

    // A segment from conditions: plan = pro, live count = the API's.
    await w.page.goto(`${tern.url}/#/segments`);
    await w.page.getByTestId('empty').getByText('No segment yet.').waitFor();
    await w.page.getByRole('link', { name: 'New segment' }).click();
    await w.page.getByLabel('Segment name').fill('Pro users');
    await w.page.getByLabel('Condition 1 property').selectOption('plan');
    await w.page.getByLabel('Condition 1 value').fill('pro');
    const count = w.page.getByTestId('live-count');
    await expect.poll(() => count.textContent(), { timeout: 15_000 }).toBe('2 contacts match now');
    const apiCount = async (filter: unknown) =>
      (await apiWrite<{ total: number }>(tern, 'POST', '/segments/count', { filter }, 200)).total;
    expect(await apiCount({ property: 'plan', op: 'eq', value: 'pro' })).toBe(2);
    // A second condition, any of them: seats ≥ 20 adds cy.
    await w.page.getByRole('button', { name: 'Add a condition' }).click();
    await w.page.getByLabel('Condition 2 property').selectOption('seats');
    await w.page.getByLabel('Condition 2 comparison').selectOption('gte');
    await w.page.getByLabel('Condition 2 value').fill('20');
    await w.page.getByLabel('Contacts matching').selectOption('or');
    await expect.poll(() => count.textContent(), { timeout: 15_000 }).toBe('3 contacts match now');
    // Subscribed to the topic, negated: everyone but ada (all, with the pro clause) …
    await w.page.getByLabel('Contacts matching').selectOption('and');
    await w.page.getByRole('button', { name: 'Remove condition 2' }).click();
    await w.page.getByRole('button', { name: 'Add a condition' }).click();
    await w.page.getByLabel('Condition 2 kind').selectOption('topic');
    await w.page.getByLabel('Condition 2 topic').selectOption(topic!.id);
    await w.page.getByLabel('Condition 2 negated (not)').check();
    await expect.poll(() => count.textContent(), { timeout: 15_000 }).toBe('1 contact matches now');
    const filter = { and: [{ property: 'plan', op: 'eq', value: 'pro' }, { not: { topic: topic!.id } }] };
    expect(await apiCount(filter)).toBe(1);
    // The same filter as JSON; a property not defined is the API's refusal, shown.
    await w.page.getByRole('button', { name: 'JSON' }).click();
    const json = w.page.getByLabel('Filter (JSON)');
    expect(JSON.parse(await json.inputValue())).toEqual(filter);
    await json.fill(JSON.stringify({ property: 'nope', op: 'exists' }));
    await expect
      .poll(() => count.textContent(), { timeout: 15_000 })
      .toBe('Not counted: body.filter: property nope is not defined (POST /contact-properties)');
    expectRefusalsLogged(w, 400);
    await json.fill(JSON.stringify({ property: 'plan', op: 'eq', value: 'pro' }));
    await expect.poll(() => count.textContent(), { timeout: 15_000 }).toBe('2 contacts match now');
    await checkPage(w, 'segment-new');
    await w.page.getByRole('button', { name: 'Create segment' }).click();
    await w.page.waitForURL(/#\/segments\/seg_/);
    const id = decodeURIComponent(new URL(w.page.url()).hash.split('/')[2]!.split('?')[0]!);

    // Its members: the API's.
    const members = await api<{ data: { email: string }[]; meta: { total: number } }>(
      tern,
      `/segments/${id}/contacts`,
    );
    expect(members.data.map((c) => c.email).sort()).toEqual(['ada@example.com', 'bob@example.com']);
    await expect
      .poll(() => w.page.getByTestId('segment-total').textContent())
      .toBe(String(members.meta.total));
    await expect
      .poll(async () => (await w.page.locator('[data-testid="members"] tbody th').allTextContents()).sort())
      .toEqual(['ada@example.com', 'bob@example.com']);
    await checkPage(w, 'segment');

    // The list.
    await w.page.getByRole('link', { name: '← Segments' }).click();
    await w.page.locator('[data-testid="segments"] tbody tr', { hasText: 'Pro users' }).waitFor();
    await checkPage(w, 'segments');
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('an existing segment opens in its conditions, one value changed is saved; a nested one opens as JSON, with why', async () => {
    await apiWrite(tern, 'POST', '/contact-properties', { name: 'region', type: 'string' });
    await apiWrite(tern, 'POST', '/contact-properties', { name: 'score', type: 'number' });
    const filter = {
      and: [
        { property: 'region', op: 'eq', value: 'eu' },
        { property: 'score', op: 'gte', value: 10 },
        { not: { tag: 'churned' } },
      ],
    };
    const made = await apiWrite<{ id: string }>(tern, 'POST', '/segments', { name: 'Engaged EU', filter });
    const w = await open(`/segments/${made.id}`);
    await w.page.getByRole('button', { name: 'Edit segment' }).click();

    // The conditions form, filled in from the stored filter (no JSON to read).
    await w.page.getByRole('button', { name: 'Conditions', pressed: true }).waitFor();
    expect(await w.page.getByLabel('Filter (JSON)').count()).toBe(0);
    expect(await w.page.getByTestId('json-note').count()).toBe(0);
    const value = (label: string) => w.page.getByLabel(label, { exact: true }).inputValue();
    expect(await value('Segment name')).toBe('Engaged EU');
    expect(await value('Contacts matching')).toBe('and');
    await expect.poll(() => value('Condition 1 property')).toBe('region');
    expect(await value('Condition 1 comparison')).toBe('eq');
    expect(await value('Condition 1 value')).toBe('eu');
    await expect.poll(() => value('Condition 2 property')).toBe('score');
    expect(await value('Condition 2 comparison')).toBe('gte');
    expect(await value('Condition 2 value')).toBe('10');
    expect(await value('Condition 3 kind')).toBe('tag');
    expect(await value('Condition 3 tag')).toBe('churned');
    expect(await w.page.getByLabel('Condition 3 negated (not)').isChecked()).toBe(true);
    expect(await w.page.getByLabel('Condition 1 negated (not)').isChecked()).toBe(false);
    const count = w.page.getByTestId('live-count');
    await expect.poll(() => count.textContent(), { timeout: 15_000 }).toMatch(/match(es)? now$/);
    await checkPage(w, 'segment-edit');

    // One value changed: the stored filter is the same but for it (a number still).
    await w.page.getByLabel('Condition 2 value', { exact: true }).fill('20');
    await w.page.getByRole('button', { name: 'Save segment' }).click();
    await expect
      .poll(async () => (await api<{ filter: unknown }>(tern, `/segments/${made.id}`)).filter)
      .toEqual({ and: [filter.and[0], { property: 'score', op: 'gte', value: 20 }, filter.and[2]] });
    await expect
      .poll(async () => JSON.parse((await w.page.getByTestId('segment-filter').textContent()) ?? ''))
      .toEqual({ and: [filter.and[0], { property: 'score', op: 'gte', value: 20 }, filter.and[2]] });

    // A group in a group: the JSON, and why not the conditions.
    const nested = {
      or: [
        {
          and: [
            { property: 'region', op: 'eq', value: 'eu' },
            { property: 'score', op: 'gt', value: 5 },
          ],
        },
        { tag: 'vip' },
      ],
    };
    const deep = await apiWrite<{ id: string }>(tern, 'POST', '/segments', {
      name: 'Nested',
      filter: nested,
    });
    await w.page.goto(`${tern.url}/#/segments/${deep.id}`);
    await w.page.getByRole('button', { name: 'Edit segment' }).click();
    // Asking for the conditions keeps the JSON (they would start empty and a save would lose it).
    await expectKeptAsJson(
      w,
      {
        json: 'Filter (JSON)',
        value: nested,
        note: 'This filter nests groups: edit it as JSON.',
        formField: 'Condition 1 kind',
        formButton: 'Conditions',
      },
      () => checkPage(w, 'segment-edit-json'),
    );
    expect(w.errors).toEqual([]);
    await w.page.close();
  });
});
