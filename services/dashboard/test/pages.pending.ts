/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
/**
 * Browser test of the page whose API arrives with another branch (SPEC §17). Not run yet: the
 * name matches no vitest include pattern. At merge, once the webhook routes exist, rename this
 * file to `pages.e2e.test.ts` (or move the `it` into `dashboard.e2e.test.ts`). It type-checks
 * today (`npm run typecheck`), against the same harness as the running tests. The templates,
 * suppressions and contacts tests that were here run in `resources.e2e.test.ts`.
 *
 * | test                       | needs                                                            |
 * | -------------------------- | ---------------------------------------------------------------- |
 * | webhooks                   | `POST/GET /webhooks`, `GET /webhooks/:id/deliveries`, replay     |
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
});
