/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * Browser tests of the tenant-resource pages of SPEC part two: templates (§12), suppressions (§13)
 * and contacts (§14). A file of their own, on the same harness as `dashboard.e2e.test.ts`; each
 * test is self-contained and checks, besides what it does, what the API then holds.
 */
import { describe, expect, it } from 'vitest';
import { api, checkPage, dashboardFile } from './fixture.js';

interface List<T> {
  data: T[];
  meta: { total: number };
}

describe('the tenant-resource pages (templates, suppressions, contacts), in Chromium', () => {
  const { tern, open } = dashboardFile('resources', { emails: 10 });

  it('templates: an admin creates one and sees the rendered preview; a member views it, no write action', async () => {
    const w = await open('/templates', { token: tern.token('admin') });
    await w.page.getByRole('button', { name: 'New template' }).click();
    await w.page.getByLabel('Name').fill('Welcome');
    await w.page.getByLabel('Subject').fill('Hello {{name}}');
    await w.page.getByLabel('HTML').fill('<p>Hi <b>{{name}}</b></p>');
    await w.page.getByLabel('Text').fill('Hi {{name}}');
    await w.page.getByRole('button', { name: 'Save' }).click();
    await w.page.locator('[data-testid="templates"] tbody tr', { hasText: 'Welcome' }).waitFor();
    await w.page.getByLabel('Variables (JSON)').fill('{"name": "Ada <3"}');
    await w.page.getByRole('button', { name: 'Render preview' }).click();
    // Subject plain, HTML escaped by the API's renderer (the iframe shows the text, not markup).
    await expect.poll(() => w.page.getByTestId('preview-subject').textContent()).toBe('Hello Ada <3');
    const frame = w.page.frameLocator('iframe[title="Rendered template"]');
    await expect.poll(() => frame.locator('b').textContent()).toBe('Ada <3');
    // The template is the API's, as typed.
    const listed = await api<List<{ id: string; name: string; subject: string }>>(tern, '/templates');
    expect(listed.data.map((t) => [t.name, t.subject])).toEqual([['Welcome', 'Hello {{name}}']]);
    const id = listed.data[0]!.id;
    const saved = await api<{ html: string; text: string }>(tern, `/templates/${id}`);
    expect([saved.html, saved.text]).toEqual(['<p>Hi <b>{{name}}</b></p>', 'Hi {{name}}']);
    expect(w.calls).toContain(`POST /templates/${id}/render`);
    await checkPage(w, 'templates');

    // A member (SPEC §12: reads and previews, never writes) sees the template read-only.
    const m = await open('/templates', { token: tern.token('member') });
    const row = m.page.locator('[data-testid="templates"] tbody tr', { hasText: 'Welcome' });
    await row.waitFor();
    expect(await m.page.getByRole('button', { name: 'New template' }).count()).toBe(0);
    expect(await m.page.getByRole('button', { name: /Delete|Edit/ }).count()).toBe(0);
    await row.getByRole('button', { name: 'View Welcome' }).click();
    await m.page.getByRole('button', { name: 'Render preview' }).click();
    await expect.poll(() => m.page.getByTestId('preview-subject').textContent()).toBe('Hello Ada');
    expect(await m.page.getByLabel('Subject').isDisabled()).toBe(true);
    expect(await m.page.getByRole('button', { name: 'Save' }).count()).toBe(0);
    await checkPage(m, 'templates-member');
    expect(m.calls.filter((c) => /^(PUT|DELETE) |^POST \/templates$/.test(c))).toEqual([]);
    await m.page.close();

    // Delete asks once more, then the template is gone from the page and the API.
    const adminRow = w.page.locator('[data-testid="templates"] tbody tr', { hasText: 'Welcome' });
    await adminRow.getByRole('button', { name: 'Delete Welcome' }).click();
    await adminRow.getByRole('button', { name: 'Confirm delete' }).click();
    await expect.poll(() => adminRow.count()).toBe(0);
    expect((await api<List<unknown>>(tern, '/templates')).meta.total).toBe(0);
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('suppressions: add an address, see it listed, remove it, all from the keyboard', async () => {
    const w = await open('/suppressions');
    await w.page.getByRole('heading', { name: 'Suppressions' }).waitFor();
    await w.page.getByLabel('Email address').focus();
    await w.page.keyboard.type('Blocked@Example.com');
    await w.page.keyboard.press('Tab');
    expect(await w.page.evaluate(() => document.activeElement?.id)).toBe('sup-reason');
    await w.page.keyboard.type('asked by phone');
    await w.page.keyboard.press('Enter');
    // Stored lowercased (SPEC §13), as the API lists it.
    const row = w.page.locator('[data-testid="suppressions"] tbody tr', { hasText: 'blocked@example.com' });
    await row.waitFor();
    // The page lists what the API lists: this manual entry and the seed's automatic ones
    // (a hard bounce, a complaint: SPEC §13), newest first.
    type Entry = { email: string; reason: string; source: string };
    const listed = await api<List<Entry>>(tern, '/suppressions');
    expect(listed.data.find((s) => s.email === 'blocked@example.com')).toMatchObject({
      reason: 'asked by phone',
      source: 'manual',
    });
    expect(new Set(listed.data.map((s) => s.source))).toEqual(new Set(['manual', 'bounce', 'complaint']));
    await expect
      .poll(() => w.page.locator('[data-testid="suppressions"] tbody th').allTextContents())
      .toEqual(listed.data.map((s) => s.email));
    expect(await row.textContent()).toContain('asked by phone');
    await checkPage(w, 'suppressions');
    await row.getByRole('button', { name: 'Remove blocked@example.com' }).focus();
    await w.page.keyboard.press('Enter');
    await expect.poll(() => row.count()).toBe(0);
    const after = await api<List<Entry>>(tern, '/suppressions');
    expect(after.data.map((s) => s.email)).toEqual(
      listed.data.map((s) => s.email).filter((e) => e !== 'blocked@example.com'),
    );
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('contacts: add two, filter by audience (only its member shows), delete one', async () => {
    const w = await open('/contacts');
    const add = async (email: string, firstName: string, audiences: string) => {
      await w.page.getByLabel('Email address').fill(email);
      await w.page.getByLabel('First name').fill(firstName);
      await w.page.getByLabel('Audiences (comma separated)').fill(audiences);
      await w.page.getByRole('button', { name: 'Add contact' }).click();
      await w.page.locator('[data-testid="contacts"] tbody tr', { hasText: email.toLowerCase() }).waitFor();
    };
    await add('Grace@Example.com', 'Grace', 'newsletter, beta');
    await add('alan@example.com', 'Alan', 'beta');
    const emails = () => w.page.locator('[data-testid="contacts"] tbody th').allTextContents();
    await expect.poll(emails).toEqual(['alan@example.com', 'grace@example.com']);
    const row = w.page.locator('[data-testid="contacts"] tbody tr', { hasText: 'grace@example.com' });
    expect(await row.textContent()).toContain('newsletter, beta');
    const filtered = w.page.waitForRequest((r) => r.url().includes('audience=newsletter'));
    await w.page.getByLabel('Audience', { exact: true }).fill('newsletter');
    await w.page.getByLabel('Audience', { exact: true }).press('Enter');
    await filtered;
    await expect.poll(emails).toEqual(['grace@example.com']);
    await checkPage(w, 'contacts');
    const { id } = (await api<List<{ id: string }>>(tern, '/contacts?audience=newsletter')).data[0]!;
    await row.getByRole('button', { name: 'Delete grace@example.com' }).click();
    await expect.poll(() => row.count()).toBe(0);
    const gone = await fetch(`${tern.url}/contacts/${id}`, {
      headers: { authorization: `Bearer ${tern.jwt}` },
    });
    expect(gone.status).toBe(404);
    expect((await api<List<{ email: string }>>(tern, '/contacts')).data.map((c) => c.email)).toEqual([
      'alan@example.com',
    ]);
    expect(w.errors).toEqual([]);
    await w.page.close();
  });
});
