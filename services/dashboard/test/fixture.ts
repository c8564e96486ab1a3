import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { AnalyticsCounts } from '@tern/contracts/wire';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import {
  type Browser,
  launchBrowser,
  newPage,
  postEvents,
  seedEvents,
  sharedTern,
  signIn,
  TENANT,
  type Tern,
  type WatchedPage,
  waitProjected,
} from './harness.js';

export * from './harness.js';

/** What a browser test file works with: its tenant, its browser context, and tabs signed in. */
export interface DashboardFile {
  /** The file's tenant on the run's shared Tern (usable at once: it signs tokens, starts nothing). */
  tern: Tern;
  /** The file's browser context; its `context` is there once the file's `beforeAll` has run. */
  browser: Browser;
  /** A new tab signed in with `token` (the tenant owner's by default) at `path`, its first page rendered. */
  open(path?: string, options?: { token?: string; width?: number }): Promise<WatchedPage>;
}

export interface DashboardFileOptions {
  /** Data the file's tests start from, written through the API before the browser opens. */
  seed?: (tern: Tern) => Promise<void>;
  /** `seedEvents(n)` of the tenant posted through `POST /events` and waited for in both read models. */
  emails?: number;
  /** The bound of the set-up (a seed that waits for projections wants more). */
  timeoutMs?: number;
}

/**
 * The set-up every browser test file shares: the file's tenant (`demo`, the banner's, or a fresh one
 * of the file's own), its seed, a browser context opened before the tests and closed after them.
 * Call it once, in the file's `describe`.
 */
export function dashboardFile(tenant = TENANT, options: DashboardFileOptions = {}): DashboardFile {
  const tern = sharedTern(tenant);
  let launched: Browser | undefined;
  const browser: Browser = {
    get context() {
      if (launched === undefined) throw new Error('the browser opens in the file’s beforeAll');
      return launched.context;
    },
    close: async () => launched?.close(),
  };
  beforeAll(
    async () => {
      if (options.emails !== undefined) {
        await postEvents(tern, seedEvents(options.emails, Date.now(), tern.tenant));
        await waitProjected(tern, options.emails);
      }
      await options.seed?.(tern);
      launched = await launchBrowser();
    },
    options.timeoutMs ?? (options.emails === undefined ? 120_000 : 180_000),
  );
  afterAll(async () => {
    await browser.close();
  });
  return {
    tern,
    browser,
    async open(path = '/', { token = tern.jwt, width }: { token?: string; width?: number } = {}) {
      const w = await newPage(browser, width);
      await signIn(w, tern, token, path);
      return w;
    },
  };
}

/** What became of sent mail, as the API counts it (a campaign's stats, a breakdown's row). */
export type Outcomes = Pick<
  AnalyticsCounts,
  'sent' | 'delivered' | 'opened' | 'clicked' | 'bounced' | 'complained'
>;

/** The `data-id` of each row of the table `[data-testid=<testId>]`, in the order shown. */
export const rowIds = (page: Page, testId: string) =>
  page
    .locator(`[data-testid="${testId}"] tbody tr`)
    .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-id')));

/** Mail from `from` to `to` over SMTP to the run's inbound listener (swaks, then `args`): its dialogue. */
export async function swaksToInbound(from: string, to: string, args: string[]): Promise<string> {
  const server = `127.0.0.1:${inject('dashboard').inboundPort}`;
  const { stdout } = await promisify(execFile)(
    'swaks',
    ['--server', server, '--from', from, '--to', to, ...args],
    {
      timeout: 60_000,
    },
  );
  return stdout;
}

/**
 * An editor opened on what its form cannot write: it shows the JSON (the field `json`, equal to
 * `value`) with the note `note` and no `formField`; `between` runs then (a page check). Asking for
 * the form (`formButton`) keeps the JSON and the note (the form would start empty, a save lose it).
 */
export async function expectKeptAsJson(
  w: WatchedPage,
  o: { json: string; value: unknown; note: string; formField: string; formButton: string },
  between?: () => Promise<void>,
): Promise<void> {
  await w.page.getByRole('button', { name: 'JSON', pressed: true }).waitFor();
  expect(await w.page.getByTestId('json-note').textContent()).toBe(o.note);
  expect(JSON.parse(await w.page.getByLabel(o.json).inputValue())).toEqual(o.value);
  expect(await w.page.getByLabel(o.formField).count()).toBe(0);
  await between?.();
  await w.page.getByRole('button', { name: o.formButton }).click();
  await w.page.getByRole('button', { name: 'JSON', pressed: true }).waitFor();
  expect(await w.page.getByLabel(o.formField).count()).toBe(0);
  expect(JSON.parse(await w.page.getByLabel(o.json).inputValue())).toEqual(o.value);
  expect(await w.page.getByTestId('json-note').textContent()).toBe(o.note);
}
