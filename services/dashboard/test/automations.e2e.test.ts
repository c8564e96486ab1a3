/// <reference lib="dom" />
/**
 * The automations pages of SPEC §27 (issue 47) in Chromium against the run's Tern (its worker runs
 * the automation runner, its MX listener takes mail): an automation written with the simple step
 * form whose trigger is `email.received`, started by a reply sent over SMTP (swaks) from a contact
 * and watched to its end on the page; another written as JSON started by a custom event of
 * `POST /events/track`, which the Events page lists; disable and enable from the list and the
 * automation's page, each checked against the API; an existing automation edited in the step form
 * (one that branches as JSON, with why).
 */
import { describe, expect, it } from 'vitest';
import { api, apiWrite, checkPage, dashboardFile, expectKeptAsJson, swaksToInbound } from './fixture.js';

interface Automation {
  id: string;
  enabled: boolean;
  trigger: { event: string };
  steps: unknown[];
}
interface Run {
  email: string | null;
  state: string;
  position: string | null;
  waiting: string | null;
}

const idOf = (url: string) => decodeURIComponent(new URL(url).hash.split('/')[2]!.split('?')[0]!);

describe('the automations pages, in Chromium', () => {
  const { tern, open } = dashboardFile('automations', {
    seed: async (tern) => {
      await apiWrite(tern, 'POST', '/contact-properties', { name: 'replied', type: 'boolean' });
      await apiWrite(tern, 'POST', '/contacts', { email: 'ada@example.com', firstName: 'Ada' });
    },
  });

  it('a reply over SMTP runs a form-made automation; a tracked event runs a JSON one; disable and enable', async () => {
    const w = await open('/automations');
    await w.page.getByTestId('empty').getByText('No automation yet.').waitFor();
    await checkPage(w, 'automations-empty');

    // With the simple form: on email.received, set `replied`.
    await w.page.getByRole('link', { name: 'New automation' }).click();
    await w.page.getByLabel('Automation name').fill('Replied');
    await w.page.getByLabel('Trigger event').fill('email.received');
    await w.page.getByLabel('Step 1 kind').selectOption('update');
    await w.page.getByLabel('Step 1 property').selectOption('replied');
    await w.page.getByLabel('Step 1 value').fill('true');
    await checkPage(w, 'automation-new');
    await w.page.getByRole('button', { name: 'Create automation' }).click();
    await w.page.waitForURL(/#\/automations\/aut_/);
    const replied = idOf(w.page.url());
    expect(await api<Automation>(tern, `/automations/${replied}`)).toMatchObject({
      enabled: true,
      trigger: { event: 'email.received' },
      steps: [{ update: { replied: true } }],
    });
    await w.page.getByTestId('automation').getByText('No run yet.').waitFor();

    // Ada replies (mail from her address to the tenant's receiving address, over SMTP).
    const { domain } = await api<{ domain: string }>(tern, '/inbound/domain');
    const stdout = await swaksToInbound('ada@example.com', `hello@${domain}`, [
      '--header',
      'Subject: Re: welcome',
      '--body',
      'Thanks!',
    ]);
    expect(stdout).toMatch(/250 [^\n]*inb_/);
    // The page follows the run to its end without a reload.
    const adaRow = w.page.locator('[data-testid="runs"] tbody tr', { hasText: 'ada@example.com' });
    await expect.poll(() => adaRow.locator('.badge').textContent(), { timeout: 30_000 }).toBe('completed');
    const runs = await api<{ data: Run[] }>(tern, `/automations/${replied}/runs`);
    expect(runs.data).toEqual([expect.objectContaining({ email: 'ada@example.com', state: 'completed' })]);
    const contacts = await api<{ data: { email: string; properties?: Record<string, unknown> }[] }>(
      tern,
      '/contacts?limit=10',
    );
    expect(contacts.data.find((c) => c.email === 'ada@example.com')?.properties).toEqual({ replied: true });
    await expect
      .poll(() => w.page.getByTestId('run-counts').textContent())
      .toBe('0 active, 1 completed, 0 stopped');
    await checkPage(w, 'automation');

    // Disable and enable on its page: the API's state.
    await w.page.getByRole('button', { name: 'Disable automation' }).click();
    await expect
      .poll(async () => (await api<Automation>(tern, `/automations/${replied}`)).enabled)
      .toBe(false);
    await w.page.getByTestId('automation-state').getByText('disabled (starts no run)').waitFor();
    await w.page.getByRole('button', { name: 'Enable automation' }).click();
    await expect
      .poll(async () => (await api<Automation>(tern, `/automations/${replied}`)).enabled)
      .toBe(true);

    // As JSON: a custom event starts a run that waits a day.
    await w.page.goto(`${tern.url}/#/automations/new`);
    await w.page.getByLabel('Automation name').fill('Upgraded');
    await w.page.getByLabel('Trigger event').fill('plan.upgraded');
    await w.page.getByRole('button', { name: 'JSON' }).click();
    await w.page
      .getByLabel('Steps (JSON)')
      .fill(JSON.stringify([{ delay: 'P1D' }, { update: { replied: false } }]));
    await w.page.getByRole('button', { name: 'Create automation' }).click();
    await w.page.waitForURL(/#\/automations\/aut_/);
    const upgraded = idOf(w.page.url());
    const tracked = await apiWrite<{ id: string }>(
      tern,
      'POST',
      '/events/track',
      { email: 'ada@example.com', name: 'plan.upgraded', data: { plan: 'pro' } },
      202,
    );
    const upRow = w.page.locator('[data-testid="runs"] tbody tr', { hasText: 'ada@example.com' });
    await expect.poll(() => upRow.locator('td').nth(2).textContent(), { timeout: 30_000 }).toBe('delay');
    const waiting = await api<{ data: Run[] }>(tern, `/automations/${upgraded}/runs`);
    expect(waiting.data).toEqual([
      expect.objectContaining({ state: 'active', position: '0', waiting: 'delay' }),
    ]);

    // The custom event is in the event stream, and on the Events page with its contact.
    const stream = await api<{ data: { id: string; type: string; data: Record<string, unknown> }[] }>(
      tern,
      '/events?types=plan.upgraded',
    );
    expect(stream.data).toEqual([
      expect.objectContaining({
        id: tracked.id,
        type: 'plan.upgraded',
        data: expect.objectContaining({ email: 'ada@example.com', data: { plan: 'pro' } }),
      }),
    ]);
    await w.page.goto(`${tern.url}/#/events`);
    const eventRow = w.page.locator(`[data-testid="events"] tbody tr[data-id="${tracked.id}"]`);
    await expect
      .poll(() => eventRow.locator('th, td').allTextContents())
      .toEqual(['plan.upgraded', '—', 'ada@example.com', expect.any(String), expect.any(String)]);

    // The list: both, and the switch of each row.
    await w.page.goto(`${tern.url}/#/automations`);
    const row = w.page.locator(`[data-testid="automations"] tbody tr[data-id="${upgraded}"]`);
    await row.waitFor();
    await w.page.getByRole('button', { name: 'Disable Upgraded' }).click();
    await expect
      .poll(async () => (await api<Automation>(tern, `/automations/${upgraded}`)).enabled)
      .toBe(false);
    await expect.poll(() => row.locator('.badge').textContent()).toBe('disabled');
    await checkPage(w, 'automations');
    expect(w.errors).toEqual([]);
    await w.page.close();
  });

  it('an existing automation opens in the step form, a wait changed is saved; one that branches opens as JSON, with why', async () => {
    const steps = [
      { delay: 'P1D' },
      { waitFor: { event: 'email.opened', timeout: 'P3D' } },
      { update: { replied: false } },
    ];
    const made = await apiWrite<Automation>(tern, 'POST', '/automations', {
      name: 'Nudge',
      trigger: { event: 'plan.nudged' },
      steps,
      enabled: false,
    });
    const w = await open(`/automations/${made.id}`);
    await w.page.getByRole('button', { name: 'Edit automation' }).click();

    // The step form, filled in from the stored steps (no JSON to read).
    await w.page.getByRole('button', { name: 'Simple steps', pressed: true }).waitFor();
    expect(await w.page.getByLabel('Steps (JSON)').count()).toBe(0);
    expect(await w.page.getByTestId('json-note').count()).toBe(0);
    const value = (label: string) => w.page.getByLabel(label).inputValue();
    expect(await value('Trigger event')).toBe('plan.nudged');
    expect(await value('Step 1 kind')).toBe('delay');
    expect(await value('Step 1 duration')).toBe('P1D');
    expect(await value('Step 2 kind')).toBe('waitFor');
    expect(await value('Step 2 event')).toBe('email.opened');
    expect(await value('Step 2 timeout')).toBe('P3D');
    expect(await value('Step 3 kind')).toBe('update');
    await expect.poll(() => value('Step 3 property')).toBe('replied');
    expect(await value('Step 3 value')).toBe('false');
    await checkPage(w, 'automation-edit');

    // The first wait made shorter: the stored steps are the same but for it.
    await w.page.getByLabel('Step 1 duration').fill('PT12H');
    await w.page.getByRole('button', { name: 'Save automation' }).click();
    await expect
      .poll(async () => (await api<Automation>(tern, `/automations/${made.id}`)).steps)
      .toEqual([{ delay: 'PT12H' }, steps[1], steps[2]]);
    await w.page.getByRole('button', { name: 'Edit automation' }).waitFor();

    // Branches: the JSON, and why not the form.
    const branching = [
      { waitFor: { event: 'email.opened', timeout: 'P3D' }, else: [{ update: { replied: false } }] },
    ];
    const deep = await apiWrite<Automation>(tern, 'POST', '/automations', {
      name: 'Branches',
      trigger: { event: 'plan.nudged' },
      steps: branching,
      enabled: false,
    });
    await w.page.goto(`${tern.url}/#/automations/${deep.id}`);
    await w.page.getByRole('button', { name: 'Edit automation' }).click();
    // Asking for the simple steps keeps the JSON (the form would start empty and a save would lose it).
    await expectKeptAsJson(w, {
      json: 'Steps (JSON)',
      value: branching,
      note: 'This automation branches (then/else after a wait): edit its steps as JSON.',
      formField: 'Step 1 kind',
      formButton: 'Simple steps',
    });
    expect(w.errors).toEqual([]);
    await w.page.close();
  });
});
