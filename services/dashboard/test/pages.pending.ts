/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * Browser tests of the pages whose API arrives with other branches (SPEC §11–§17). Not run yet:
 * the name matches no vitest include pattern. At merge, once a page's routes exist, rename this
 * file to `pages.e2e.test.ts` (or move the page's `it` into `dashboard.e2e.test.ts`); every test
 * is self-contained, so they can be enabled one at a time. They type-check today (`npm run
 * typecheck`), against the same harness as the running tests.
 *
 * | test                       | needs                                                            |
 * | -------------------------- | ---------------------------------------------------------------- |
 * | templates                  | `POST/GET/PUT /templates`, `POST /templates/:id/render`          |
 * | webhooks                   | `POST/GET /webhooks`, `GET /webhooks/:id/deliveries`, replay     |
 * | suppressions               | `GET/POST/DELETE /suppressions`                                  |
 * | contacts                   | `GET/POST/DELETE /contacts`                                      |
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Browser,
  buildAll,
  checkPage,
  launchBrowser,
  newPage,
  postEvents,
  seedEvents,
  signIn,
  startDashboardTern,
  type Tern,
  waitProjected,
} from './harness.js';

describe('the dashboard pages of SPEC part two, in Chromium', () => {
  let tern: Tern;
  let browser: Browser;

  beforeAll(async () => {
    buildAll();
    tern = await startDashboardTern();
    await postEvents(tern, seedEvents(10));
    await waitProjected(tern, 10);
    browser = await launchBrowser();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await tern?.process.stop();
  });

  it('templates: an admin creates one and sees the rendered preview', async () => {
    const w = await newPage(browser);
    await signIn(w, tern, tern.jwt, '/templates');
    await w.page.getByRole('button', { name: 'New template' }).click();
    await w.page.getByLabel('Name').fill('Welcome');
    await w.page.getByLabel('Subject').fill('Hello {{name}}');
    await w.page.getByLabel('HTML').fill('<p>Hi <b>{{name}}</b></p>');
    await w.page.getByLabel('Text').fill('Hi {{name}}');
    await w.page.getByRole('button', { name: 'Save' }).click();
    await w.page.locator('[data-testid="templates"] tbody tr', { hasText: 'Welcome' }).waitFor();
    await w.page.getByLabel('Variables (JSON)').fill('{"name": "Ada <3"}');
    await w.page.getByRole('button', { name: 'Render preview' }).click();
    await expect.poll(() => w.page.getByTestId('preview-subject').textContent()).toBe('Hello Ada <3');
    const frame = w.page.frameLocator('iframe[title="Rendered template"]');
    await expect.poll(() => frame.locator('b').textContent()).toBe('Ada <3');
    await checkPage(w, 'templates');
    // A member sees the templates, and no edit action.
    const m = await newPage(browser);
    await signIn(m, tern, tern.token('member'), '/templates');
    await m.page.locator('[data-testid="templates"] tbody tr', { hasText: 'Welcome' }).waitFor();
    expect(await m.page.getByRole('button', { name: 'New template' }).count()).toBe(0);
    expect(await m.page.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    await m.page.close();
    await w.page.close();
  });

  it('webhooks: create an endpoint (secret shown once), list it, see its deliveries, ask a replay', async () => {
    const w = await newPage(browser);
    await signIn(w, tern, tern.jwt, '/webhooks');
    await w.page.getByLabel('URL').fill(`${tern.url}/health`);
    await w.page.getByLabel('Description (optional)').fill('browser test');
    await w.page.getByRole('button', { name: 'Create endpoint' }).click();
    expect((await w.page.getByTestId('shown-once').textContent())?.trim()).toMatch(/^whsec_/);
    await w.page.getByRole('button', { name: 'Done' }).click();
    const item = w.page.locator('[data-testid="webhooks"] li', { hasText: 'browser test' });
    await item.getByRole('button', { name: 'Deliveries' }).click();
    await item.getByTestId('deliveries').waitFor();
    await item.getByRole('button', { name: 'Replay' }).click();
    await item.getByText('Replay requested').waitFor();
    await checkPage(w, 'webhooks');
    await w.page.close();
  });

  it('suppressions: add an address, see it listed, remove it', async () => {
    const w = await newPage(browser);
    await signIn(w, tern, tern.jwt, '/suppressions');
    await w.page.getByLabel('Email address').fill('Blocked@Example.com');
    await w.page.getByLabel('Reason (optional)').fill('asked by phone');
    await w.page.getByRole('button', { name: 'Add' }).click();
    const row = w.page.locator('[data-testid="suppressions"] tbody tr', { hasText: 'blocked@example.com' });
    await row.waitFor();
    await checkPage(w, 'suppressions');
    await row.getByRole('button', { name: 'Remove blocked@example.com' }).click();
    await expect.poll(() => row.count()).toBe(0);
    await w.page.close();
  });

  it('contacts: add a contact to an audience, filter by it, delete it', async () => {
    const w = await newPage(browser);
    await signIn(w, tern, tern.jwt, '/contacts');
    await w.page.getByLabel('Email address').fill('grace@example.com');
    await w.page.getByLabel('First name').fill('Grace');
    await w.page.getByLabel('Audiences (comma separated)').fill('newsletter');
    await w.page.getByRole('button', { name: 'Add contact' }).click();
    const row = w.page.locator('[data-testid="contacts"] tbody tr', { hasText: 'grace@example.com' });
    await row.waitFor();
    await w.page.getByLabel('Audience', { exact: true }).fill('newsletter');
    await w.page.getByLabel('Audience', { exact: true }).press('Enter');
    await row.waitFor();
    await checkPage(w, 'contacts');
    await row.getByRole('button', { name: 'Delete grace@example.com' }).click();
    await expect.poll(() => row.count()).toBe(0);
    await w.page.close();
  });
});
