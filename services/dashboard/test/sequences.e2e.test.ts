/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * The sequences page (SPEC §15, issue 30) in Chromium against the run's Tern: a sequence written
 * in the browser (a step at once, one a day later), a contact enrolled whose first step is sent
 * by the scheduler and the sandbox while the page watches, its next due step as the API has it,
 * per-step figures equal to the API's, an enrollment stopped, the steps edited.
 */
import { describe, expect, it } from 'vitest';
import { api, apiWrite, checkPage, dashboardFile, expectRefusalsLogged } from './fixture.js';

interface Enrollment {
  id: string;
  email: string | null;
  state: string;
  nextStep: number;
  nextDueAt: string | null;
  enrolledAt: string;
}
interface Sequence {
  id: string;
  steps: { delayMinutes: number; subject: string | null; stats: Record<string, number> }[];
  enrollments: Record<string, number>;
}

const utc = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;

describe('the sequences page, in Chromium', () => {
  const { tern, open } = dashboardFile('sequences', {
    seed: async (tern) => {
      await apiWrite(tern, 'POST', '/contacts', { email: 'ada@example.com', firstName: 'Ada' });
      await apiWrite(tern, 'POST', '/contacts', { email: 'bob@example.com', firstName: 'Bob' });
    },
  });

  it('creates a drip, enrolls a contact and watches its first step go out; stops another; edits a step', async () => {
    const w = await open('/sequences');
    await w.page.getByTestId('empty').getByText('No sequence yet.').waitFor();
    await checkPage(w, 'sequences-empty');

    await w.page.getByRole('link', { name: 'New sequence' }).click();
    await w.page.getByLabel('Name').fill('Onboarding');
    await w.page.getByLabel('From', { exact: true }).fill('Acme <hello@acme.test>');
    // Step 1: at once (0 minutes), so the scheduler sends it on its next pass.
    await w.page.getByLabel('Minutes after enrollment').fill('0');
    await w.page.locator('#step-0-subject').fill('Welcome, {{firstName}}');
    await w.page.locator('#step-0-text').fill('Glad to have you.');
    await w.page.getByRole('button', { name: 'Add a step' }).click();
    await w.page.getByLabel('Minutes after step 1').fill('1440');
    await expect.poll(() => w.page.locator('#step-1-delay-said').textContent()).toBe('1 day');
    await w.page.locator('#step-1-subject').fill('Getting started');
    await w.page.locator('#step-1-html').fill('<p>Three tips.</p>');
    await checkPage(w, 'sequence-new');
    await w.page.getByRole('button', { name: 'Create sequence' }).click();
    await w.page.waitForURL(/#\/sequences\/seq_/);
    const id = decodeURIComponent(new URL(w.page.url()).hash.split('/')[2]!.split('?')[0]!);
    await w.page.getByTestId('sequence').waitFor();
    const created = await api<Sequence>(tern, `/sequences/${id}`);
    expect(created.steps.map((s) => [s.delayMinutes, s.subject])).toEqual([
      [0, 'Welcome, {{firstName}}'],
      [1440, 'Getting started'],
    ]);
    await w.page.getByTestId('enrollments').or(w.page.getByTestId('empty')).first().waitFor();
    expect(await w.page.getByText('No contact enrolled yet.').count()).toBe(1);

    // Enroll Ada; the page follows: step 1 is sent (and delivered by the sandbox) without a reload.
    await w.page.getByLabel('Contact’s email address').fill('ada@example.com');
    await w.page.getByRole('button', { name: 'Enroll' }).click();
    const step1 = w.page.locator('[data-testid="steps"] tbody tr[data-step="1"]');
    await expect
      .poll(() => step1.locator('[data-stat="delivered"]').textContent(), { timeout: 60_000, interval: 500 })
      .toBe('1');
    const enrolled = await api<{ data: Enrollment[] }>(tern, `/sequences/${id}/enrollments`);
    const ada = enrolled.data.find((e) => e.email === 'ada@example.com')!;
    // The next step is step 2, a day after step 1 fell due (at enrollment).
    expect(ada).toMatchObject({ state: 'active', nextStep: 1 });
    expect(Date.parse(ada.nextDueAt!) - Date.parse(ada.enrolledAt)).toBe(1440 * 60_000);
    const adaRow = w.page.locator(`[data-testid="enrollments"] tbody tr[data-id="${ada.id}"]`);
    await expect
      .poll(() => adaRow.locator('td').nth(1).textContent())
      .toBe(`Step 2 at ${utc(ada.nextDueAt!)}`);
    // The per-step figures are the API's.
    const sequence = await api<Sequence>(tern, `/sequences/${id}`);
    expect(sequence.steps[0]!.stats).toMatchObject({ recipients: 1, sent: 1, delivered: 1 });
    for (const [i, step] of sequence.steps.entries()) {
      const row = w.page.locator(`[data-testid="steps"] tbody tr[data-step="${i + 1}"]`);
      for (const key of ['recipients', 'sent', 'delivered', 'opened', 'clicked', 'bounced', 'unsubscribed']) {
        expect(await row.locator(`[data-stat="${key}"]`).textContent(), `step ${i + 1} ${key}`).toBe(
          String(step.stats[key]),
        );
      }
    }
    // The email itself is in the log, tagged with its sequence and step.
    const logs = await api<{ data: { subject: string; status: string }[] }>(
      tern,
      `/emails/logs?tag=${encodeURIComponent(`sequence:${id}`)}`,
    );
    expect(logs.data).toEqual([expect.objectContaining({ subject: 'Welcome, Ada', status: 'DELIVERED' })]);

    // Bob is enrolled, then stopped: no further step for him.
    await w.page.getByLabel('Contact’s email address').fill('bob@example.com');
    await w.page.getByRole('button', { name: 'Enroll' }).click();
    await w.page.getByRole('button', { name: 'Stop bob@example.com' }).click();
    const bob = w.page.locator('[data-testid="enrollments"] tbody tr', { hasText: 'bob@example.com' });
    await expect.poll(() => bob.locator('.badge').textContent()).toBe('cancelled');
    const states = await api<{ data: Enrollment[] }>(tern, `/sequences/${id}/enrollments?state=cancelled`);
    expect(states.data.map((e) => e.email)).toEqual(['bob@example.com']);
    // An address that is no contact: the API's refusal, shown.
    await w.page.getByLabel('Contact’s email address').fill('nobody@example.com');
    await w.page.getByRole('button', { name: 'Enroll' }).click();
    await w.page.getByRole('alert').getByText('Contact not found').waitFor();
    expectRefusalsLogged(w, 404);
    await checkPage(w, 'sequence');

    // The state filter asks the API for one state.
    const filtered = w.page.waitForRequest(
      (r) => r.url().includes('/enrollments') && r.url().includes('state=active'),
    );
    await w.page.getByLabel('State').selectOption('active');
    await filtered;
    await expect
      .poll(() => w.page.locator('[data-testid="enrollments"] tbody th').allTextContents())
      .toEqual(['ada@example.com']);

    // Edit step 2: the API holds the new subject; Ada keeps her place.
    await w.page.getByRole('button', { name: 'Edit steps' }).click();
    await w.page.locator('#step-1-subject').fill('Getting started, revised');
    await w.page.getByRole('button', { name: 'Save sequence' }).click();
    await expect
      .poll(async () => (await api<Sequence>(tern, `/sequences/${id}`)).steps[1]!.subject)
      .toBe('Getting started, revised');
    await expect
      .poll(() => w.page.locator('[data-testid="steps"] tbody tr[data-step="2"] td').nth(1).textContent())
      .toBe('Getting started, revised');
    const kept = await api<{ data: Enrollment[] }>(tern, `/sequences/${id}/enrollments?state=active`);
    expect(kept.data[0]).toMatchObject({ id: ada.id, nextStep: 1, nextDueAt: ada.nextDueAt });

    // The list.
    await w.page.getByRole('link', { name: '← Sequences' }).click();
    const row = w.page.locator('[data-testid="sequences"] tbody tr', { hasText: 'Onboarding' });
    await row.waitFor();
    expect(await row.locator('td').allTextContents()).toEqual(['2', '1', '0', '1', expect.any(String)]);
    await checkPage(w, 'sequences');
    expect(w.errors).toEqual([]);
    await w.page.close();
  });
});
