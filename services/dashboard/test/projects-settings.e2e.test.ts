/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * Projects and the project switcher (SPEC §16), and the tenant's settings (SPEC §9, §11), in
 * Chromium against the run's Tern (issue 30): projects created, renamed and deleted in the
 * browser; the switcher narrows the logs to exactly the API's `?projectId=` answer and the
 * overview to its analytics, and a copied link opens the same narrowed view; an admin changes the
 * settings, a member reads them.
 */
import { describe, expect, it } from 'vitest';
import {
  api,
  checkPage,
  dashboardFile,
  expectRefusalsLogged,
  postEvents,
  rowIds,
  seedEvents,
  waitProjected,
} from './fixture.js';

interface Logs {
  data: { id: string }[];
  meta: { total: number; totalPages: number; nextCursor: string | null };
}
interface Project {
  id: string;
  name: string;
}
const EMAILS = 45;

describe('projects, the project switcher and settings, in Chromium', () => {
  const { tern, open } = dashboardFile('projects');

  it('projects: create, rename, delete; the switcher narrows logs and overview exactly as the API; a link shares the view', async () => {
    const w = await open('/projects');
    await w.page.getByTestId('empty').getByText('No project yet.').waitFor();
    for (const name of ['Marketing', 'Billing', 'Scratch']) {
      await w.page.getByLabel('Name', { exact: true }).fill(name);
      await w.page.getByRole('button', { name: 'Create project' }).click();
      await w.page.locator('[data-testid="projects"] tbody th', { hasText: name }).waitFor();
    }
    await w.page.getByRole('button', { name: 'Rename Billing' }).click();
    await w.page.getByLabel('New name of Billing').fill('Receipts');
    await w.page.getByRole('button', { name: 'Save name' }).click();
    await w.page.locator('[data-testid="projects"] tbody th', { hasText: 'Receipts' }).waitFor();
    const projects = (await api<{ data: Project[] }>(tern, '/projects')).data;
    const id = (name: string) => projects.find((p) => p.name === name)!.id;
    expect(projects.map((p) => p.name).sort()).toEqual(['Marketing', 'Receipts', 'Scratch']);
    // The switcher lists them (it follows the page's changes without a reload).
    await expect
      .poll(() => w.page.locator('#project-switch option').allTextContents())
      .toEqual(['All projects', ...projects.map((p) => p.name)]);

    // Emails of two projects and of none, through the ingest path.
    const marketing = id('Marketing');
    const receipts = id('Receipts');
    const events = seedEvents(EMAILS, Date.now(), tern.tenant).map((e) => {
      if (e.type !== 'email.queued') return e;
      const i = Number(e.emailId.slice(-3));
      const projectId = i % 3 === 0 ? marketing : i % 3 === 1 ? receipts : undefined;
      return projectId === undefined ? e : { ...e, data: { ...e.data, projectId } };
    });
    await postEvents(tern, events);
    await waitProjected(tern, EMAILS);

    // A project holding emails cannot be deleted (the API's 409, shown); an empty one can.
    await w.page.getByRole('button', { name: 'Delete Marketing' }).click();
    await w.page.getByRole('button', { name: 'Confirm delete' }).click();
    await w.page.getByRole('alert').waitFor();
    expectRefusalsLogged(w, 409);
    await w.page.getByRole('button', { name: 'Delete Scratch' }).click();
    await w.page.getByRole('button', { name: 'Confirm delete' }).click();
    await expect
      .poll(() => w.page.locator('[data-testid="projects"] tbody th').allTextContents())
      .not.toContain('Scratch');
    expect((await api<{ data: Project[] }>(tern, '/projects')).data.map((p) => p.name).sort()).toEqual([
      'Marketing',
      'Receipts',
    ]);
    await checkPage(w, 'projects');

    // Logs, narrowed by the switcher: the rows and the total are the API's `?projectId=` answer.
    await w.page.getByRole('link', { name: 'Logs', exact: true }).click();
    await w.page.locator('[data-testid="logs"]').waitFor();
    await w.page.getByLabel('Project', { exact: true }).selectOption(marketing);
    await expect.poll(() => new URL(w.page.url()).hash).toBe(`#/logs?project=${marketing}`);
    const narrowed = await api<Logs>(tern, `/emails/logs?projectId=${marketing}&limit=20`);
    expect(narrowed.meta.total).toBe(15);
    await expect.poll(() => rowIds(w.page, 'logs')).toEqual(narrowed.data.map((e) => e.id));
    await expect
      .poll(() => w.page.getByTestId('logs-total').textContent())
      .toBe('15 emails in project “Marketing”');
    expect(w.calls).toContain('GET /emails/logs');
    await checkPage(w, 'logs-project');

    // The overview keeps the project (the navigation carries it) and shows its analytics.
    await w.page.getByRole('link', { name: 'Overview' }).click();
    await w.page
      .locator(`[data-testid="overview"][data-project="${marketing}"][aria-busy="false"]`)
      .waitFor();
    expect(new URL(w.page.url()).hash).toBe(`#/?project=${marketing}`);
    const summary = await api<{ totals: Record<string, number> }>(
      tern,
      `/analytics/summary?days=30&projectId=${marketing}`,
    );
    for (const [k, v] of Object.entries(summary.totals)) {
      expect(await w.page.getByTestId(`total-${k}`).textContent(), k).toBe(String(v));
    }
    expect(summary.totals.total).toBeGreaterThan(0);
    expect(summary.totals.total).toBeLessThan(
      (await api<{ totals: { total: number } }>(tern, '/analytics/summary?days=30')).totals.total,
    );
    await checkPage(w, 'overview-project');

    // A copied link opens the same view in another tab (its own session): Receipts' logs, page 1.
    await w.page.getByLabel('Project', { exact: true }).selectOption(receipts);
    await w.page.getByRole('link', { name: 'Logs', exact: true }).click();
    await w.page.locator('[data-testid="logs"]').waitFor();
    const link = w.page.url();
    const other = await open();
    await other.page.goto(link);
    const receiptsLogs = await api<Logs>(tern, `/emails/logs?projectId=${receipts}&limit=20`);
    await expect.poll(() => rowIds(other.page, 'logs')).toEqual(receiptsLogs.data.map((e) => e.id));
    expect(await other.page.locator('#project-switch').inputValue()).toBe(receipts);
    // "All projects" widens it again.
    await other.page.getByLabel('Project', { exact: true }).selectOption('');
    await expect.poll(() => other.page.getByTestId('logs-total').textContent()).toBe(`${EMAILS} emails`);
    expect(new URL(other.page.url()).hash).toBe('#/logs');
    expect(other.errors).toEqual([]);
    await other.page.close();
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('logs page with the API cursor: Older follows meta.nextCursor, the pages are the API’s', async () => {
    const w = await open('/logs');
    const first = await api<Logs>(tern, '/emails/logs?limit=20');
    expect(first.meta.totalPages).toBe(3);
    await w.page.getByText('Page 1 of 3').waitFor();
    const request = w.page.waitForRequest(
      (r) => r.url().includes('/emails/logs') && r.url().includes('cursor='),
    );
    await w.page.getByRole('button', { name: 'Older →' }).click();
    const url = new URL((await request).url());
    expect(url.searchParams.get('cursor')).toBe(first.meta.nextCursor);
    const second = await api<Logs>(tern, `/emails/logs${url.search}`);
    await expect.poll(() => rowIds(w.page, 'logs')).toEqual(second.data.map((e) => e.id));
    await w.page.getByText('Page 2 of 3').waitFor();
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('settings: an admin turns tracking and retention; a member reads them, changes nothing', async () => {
    const w = await open('/settings', { token: tern.token('admin') });
    const before = await api<{ retentionDays: number | null; defaultRetentionDays: number }>(
      tern,
      `/tenants/${tern.tenant}/settings`,
    );
    expect(before.retentionDays).toBeNull();
    await expect
      .poll(() => w.page.getByTestId('retention-now').textContent())
      .toBe(`${before.defaultRetentionDays} days`);
    await w.page.getByLabel('Track opens').uncheck();
    // Out of range: the browser's own validation keeps the form from being sent.
    const retention = w.page.getByLabel(/Keep logs and analytics/);
    await retention.fill('0');
    await w.page.getByRole('button', { name: 'Save settings' }).click();
    expect(await retention.evaluate((el) => (el as HTMLInputElement).validity.rangeUnderflow)).toBe(true);
    expect(w.calls.filter((c) => c.startsWith('PUT '))).toEqual([]);
    await w.page.getByLabel(/Keep logs and analytics/).fill('30');
    await expect.poll(() => w.page.getByTestId('rate-now').textContent()).toBe('unlimited');
    await w.page.getByLabel(/Emails handed to the provider per second/).fill('25');
    await w.page.getByRole('button', { name: 'Save settings' }).click();
    await w.page.getByRole('status').getByText('Saved.').waitFor();
    expect(await api(tern, `/tenants/${tern.tenant}/settings`)).toEqual({
      retentionDays: 30,
      defaultRetentionDays: before.defaultRetentionDays,
      tracking: { opens: false, clicks: true },
      sendRatePerSecond: 25,
      defaultSendRatePerSecond: 0,
      // SPEC §26's time zone: the page leaves it as it was (unset → UTC).
      timeZone: null,
    });
    await expect.poll(() => w.page.getByTestId('retention-now').textContent()).toBe('30 days');
    await expect.poll(() => w.page.getByTestId('rate-now').textContent()).toBe('25 per second');
    await checkPage(w, 'settings');
    await w.page.close();

    const m = await open('/settings', { token: tern.token('member') });
    await m.page.getByText('You are signed in as a member').waitFor();
    await expect.poll(() => m.page.getByLabel('Track opens').isChecked()).toBe(false);
    expect(await m.page.getByLabel('Track clicks').isChecked()).toBe(true);
    expect(await m.page.getByLabel(/Keep logs and analytics/).inputValue()).toBe('30');
    expect(await m.page.getByLabel('Track opens').isDisabled()).toBe(true);
    expect(await m.page.getByLabel(/Emails handed to the provider per second/).inputValue()).toBe('25');
    expect(await m.page.getByLabel(/Emails handed to the provider per second/).isDisabled()).toBe(true);
    expect(await m.page.getByRole('button', { name: 'Save settings' }).count()).toBe(0);
    await checkPage(m, 'settings-member');
    expect(m.calls.filter((c) => c.startsWith('PUT '))).toEqual([]);
    await m.page.close();
  });
});
