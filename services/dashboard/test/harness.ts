/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signDashboardToken } from '@tern/auth';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect, inject } from 'vitest';
import { waitFor } from '../../../test/support/services.js';
import type {} from './global-setup.js';

/**
 * Browser tests of the dashboard: a real `npm start`-like process on embedded stores, data posted
 * through `POST /events` and the public API, and Debian's Chromium driven by playwright-core. One
 * process and one browser serve every browser test file of a run (`global-setup.ts`); each file
 * works in its own tenant.
 */
const here = dirname(fileURLToPath(import.meta.url));
const dashboardRoot = resolve(here, '..');
/** Screenshots of every page (gitignored); `docs/dashboard-*.png` are copied from here. */
export const ARTIFACTS = resolve(dashboardRoot, 'artifacts');
/** The run's one build of the dashboard and Tern (also used by the image test). */
export { buildAll } from './build.js';

/** The banner's tenant. */
export const TENANT = 'demo';

export interface Tern {
  url: string;
  /** The banner's one-click link: `PUBLIC_URL/#token=<owner JWT of demo>`. */
  link: string;
  /** The tenant this test file works in. */
  tenant: string;
  /** An owner JWT of that tenant (for `demo`, the banner's own). */
  jwt: string;
  ingestToken: string;
  /** A JWT of the tenant with another role, signed with the process's dev secret. */
  token(role: 'owner' | 'admin' | 'member'): string;
}

/**
 * The run's shared Tern as one tenant sees it. `demo` is the banner's tenant; any other name is a
 * fresh tenant of the test file's own (no data until the file adds some).
 */
export function sharedTern(tenant = TENANT): Tern {
  const env = inject('dashboard');
  const token = (role: 'owner' | 'admin' | 'member') =>
    signDashboardToken({
      secret: env.jwtSecret,
      tenantId: tenant,
      role,
      sub: `${role}-user`,
      expiresInSeconds: 3600,
    });
  return {
    url: env.url,
    link: env.link,
    tenant,
    jwt: tenant === TENANT ? env.bannerJwt : token('owner'),
    ingestToken: env.ingestToken,
    token,
  };
}

const DAY = 86_400_000;
const TEMPLATES = ['welcome', 'receipt', 'password-reset'];

/** The events of one email queued at `at`: `ev(type, offsetMs, data)` is one `offsetMs` later. */
export const emailEvents =
  (tenantId: string, emailId: string, at: number) =>
  (type: string, offsetMs: number, data: Record<string, unknown> = {}) => ({
    id: `${emailId}-${type}`,
    type,
    tenantId,
    emailId,
    occurredAt: new Date(at + offsetMs).toISOString(),
    data,
  });

/**
 * `n` emails spread over the last ~80 days (so 7, 30 and 90 days differ), with every outcome the
 * overview counts: sent, delivered, bounced, failed, opened, clicked, complained.
 */
export function seedEvents(n: number, now = Date.now(), tenantId = TENANT) {
  return Array.from({ length: n }, (_, i) => {
    const emailId = `dash-${String(i).padStart(3, '0')}`;
    const ev = emailEvents(tenantId, emailId, now - i * 1.8 * DAY - 60_000);
    const out = [
      ev('email.queued', 0, {
        toEmail: `user${i}@example.com`,
        subject: `Message ${i}`,
        ...(i % 4 === 3 ? {} : { templateId: TEMPLATES[i % 3] }),
        tags: ['dashboard'],
      }),
    ];
    const kind = i % 7;
    if (kind === 6) return [...out, ev('email.failed', 1000, { reason: 'rejected' })];
    out.push(ev('email.sent', 1000, { provider: 'ses', messageId: `<${emailId}@tern>` }));
    if (kind === 5) return [...out, ev('email.bounced', 2000, { bounceType: 'hard' })];
    if (kind === 4) return out;
    out.push(ev('email.delivered', 2000));
    if (kind <= 2) out.push(ev('email.opened', 3000));
    if (kind <= 1) out.push(ev('email.clicked', 4000, { url: 'https://example.com/' }));
    if (kind === 0 && i % 2 === 0) out.push(ev('email.complained', 5000));
    return out;
  }).flat();
}

export async function postEvents(tern: Tern, events: unknown[]): Promise<void> {
  const res = await fetch(`${tern.url}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tern.ingestToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ events }),
  });
  expect(res.status, await res.clone().text()).toBe(202);
}

/** GET on the public API with the owner's JWT (or the given credential headers). */
export async function api<T>(tern: Tern, path: string, headers?: Record<string, string>): Promise<T> {
  const res = await fetch(`${tern.url}${path}`, {
    headers: headers ?? { authorization: `Bearer ${tern.jwt}` },
  });
  expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
  return (await res.json()) as T;
}

/** A write on the public API with the file tenant's owner JWT; expects `status`, answers the body. */
export async function apiWrite<T>(
  tern: Tern,
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  status = method === 'POST' ? 201 : method === 'DELETE' ? 204 : 200,
): Promise<T> {
  const csv = typeof body === 'string';
  const res = await fetch(`${tern.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${tern.jwt}`,
      ...(body === undefined ? {} : { 'content-type': csv ? 'text/csv' : 'application/json' }),
    },
    ...(body === undefined ? {} : { body: csv ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  expect(res.status, `${method} ${path}: ${text}`).toBe(status);
  return (text ? JSON.parse(text) : null) as T;
}

/** Waits until both read models (logs and analytics) hold `n` emails. */
export async function waitProjected(tern: Tern, n: number): Promise<void> {
  await waitFor(
    async () => {
      const logs = await api<{ meta: { total: number } }>(tern, '/emails/logs?limit=1');
      const summary = await api<{ totals: { total: number } }>(tern, '/analytics/summary?days=90');
      return logs.meta.total === n && summary.totals.total === n;
    },
    { timeoutMs: 60_000, intervalMs: 200, description: `${n} emails projected` },
  );
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * A browser context of this file (its own cookies and storage) in the run's shared Chromium: each
 * page opened in it is a tab with its own sessionStorage, as a user's tabs are.
 */
export async function launchBrowser(): Promise<Browser> {
  const browser = await chromium.connect(inject('dashboard').wsEndpoint, { timeout: 60_000 });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  context.setDefaultTimeout(15_000);
  return {
    context,
    async close() {
      await context.close();
      await browser.close();
    },
  };
}

export interface WatchedPage {
  page: Page;
  /** Console errors and uncaught exceptions seen so far. */
  errors: string[];
  /** `METHOD /path` of every fetch the page made (the API calls). */
  calls: string[];
  /** The page's requests still in flight (`METHOD /path?query`), to say what kept a page busy. */
  pending: Set<string>;
}

/** A new tab (its own sessionStorage) that records console errors and page exceptions. */
export async function newPage(browser: Browser, width = 1280): Promise<WatchedPage> {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width, height: 900 });
  const errors: string[] = [];
  const calls: string[] = [];
  const pending = new Set<string>();
  const label = (r: { method(): string; url(): string }) => {
    const u = new URL(r.url());
    return `${r.method()} ${u.pathname}${u.search}`;
  };
  // A live tail (`GET /events/stream`) stays open as long as its page: it is a call of the page,
  // never "in flight" in the sense of `waitIdle`.
  const streaming = (r: { url(): string }) => new URL(r.url()).pathname.endsWith('/stream');
  page.on('request', (r) => {
    if (!streaming(r)) pending.add(label(r));
    if (r.resourceType() === 'fetch' || r.resourceType() === 'xhr') {
      calls.push(`${r.method()} ${new URL(r.url()).pathname}`);
    }
  });
  page.on('requestfinished', (r) => pending.delete(label(r)));
  page.on('requestfailed', (r) => pending.delete(label(r)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  return { page, errors, calls, pending };
}

/**
 * The browser reports a request the API refused (a 4xx the test provoked on purpose) as a console
 * error of its own: takes exactly those reports of `status` off the page's errors, so that every
 * other console error still fails the test.
 */
export function expectRefusalsLogged(w: WatchedPage, status: number, count = 1): void {
  const refused = w.errors.filter((e) => e.includes(`status of ${status}`));
  expect(refused, `the browser's reports of the ${status}`).toHaveLength(count);
  for (const e of refused) w.errors.splice(w.errors.indexOf(e), 1);
}

/** Opens the dashboard signed in through `#token=` and waits for the first page to render. */
export async function signIn(w: WatchedPage, tern: Tern, token = tern.jwt, path = '/'): Promise<void> {
  await w.page.goto(`${tern.url}/#token=${token}`);
  await w.page.getByTestId('tenant').waitFor();
  if (path !== '/') await w.page.goto(`${tern.url}/#${path}`);
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/**
 * axe-core run inside the page (WCAG 2.x A/AA rules); returns the serious and critical
 * violations. The script is evaluated through the DevTools protocol, which the page's CSP
 * does not govern, so the page under test keeps its real policy.
 */
export async function seriousA11yViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: unknown[] }> } }
    ).axe;
    const result = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
      resultTypes: ['violations'],
    });
    return result.violations;
  });
  return (violations as AxeViolation[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

/** No horizontal scrolling of the page itself at this width (tables scroll inside their region). */
export async function pageOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

/** A PNG of the page under `artifacts/`: the whole page, or what the window shows (`fullPage: false`). */
export async function screenshot(page: Page, name: string, fullPage = true): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage });
  return path;
}

/**
 * The operations of the API's own OpenAPI document (`/docs/json`) as `METHOD /path` matchers: the
 * dashboard may call these and nothing else (what the page does, a user's program can do).
 */
async function publicOperations(origin: string): Promise<RegExp[]> {
  const doc = (await (await fetch(`${origin}/docs/json`)).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.keys(ops).map(
      (method) =>
        new RegExp(
          `^${method.toUpperCase()} ${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`,
        ),
    ),
  );
}

/** Every call the page made so far is an operation of the public API. */
export async function expectPublicApiOnly(w: WatchedPage, name: string): Promise<void> {
  const operations = await publicOperations(new URL(w.page.url()).origin);
  const unlisted = w.calls.filter((call) => !operations.some((op) => op.test(call)));
  expect(unlisted, `${name}: calls outside the public API (/docs/json)`).toEqual([]);
}

/**
 * Waits until the page has had no request in flight for 500 ms (bounded for a machine busy with
 * the whole suite). Counted here rather than by Playwright's `networkidle`, which a sandboxed
 * `srcdoc` preview frame re-rendered as the user types never reaches.
 */
export async function waitIdle(w: WatchedPage, name: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quietSince = Date.now();
  for (;;) {
    if (w.pending.size > 0) quietSince = Date.now();
    else if (Date.now() - quietSince >= 500) return;
    if (Date.now() > deadline) {
      throw new Error(`${name}: the page never went idle; in flight: ${[...w.pending].join(', ')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Accessibility, console, public API only, 360 px and screenshots: the checks every page passes. */
export async function checkPage(w: WatchedPage, name: string): Promise<void> {
  // A bound for a machine busy with the whole suite (the context's 15 s default was once too short).
  await waitIdle(w, name);
  await expectPublicApiOnly(w, name);
  expect(await seriousA11yViolations(w.page), `${name}: serious accessibility violations`).toEqual([]);
  await screenshot(w.page, `${name}-1280`);
  await w.page.setViewportSize({ width: 360, height: 780 });
  // The chart follows its box through a ResizeObserver: give it its frame, then measure.
  await w.page
    .waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, undefined, {
      timeout: 3000,
    })
    .catch(() => undefined);
  const overflow = await pageOverflow(w.page);
  const culprits =
    overflow > 0
      ? await w.page.evaluate(() =>
          Array.from(document.querySelectorAll('body *'))
            .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1)
            .filter((el) => getComputedStyle(el).position === 'absolute' || !el.closest('.table-wrap'))
            .slice(0, 5)
            .map(
              (el) =>
                `${el.tagName.toLowerCase()}.${el.className} (${Math.round(el.getBoundingClientRect().right)} px)`,
            ),
        )
      : [];
  expect(overflow, `${name}: page wider than 360 px: ${culprits.join(', ')}`).toBeLessThanOrEqual(0);
  expect(await seriousA11yViolations(w.page), `${name} at 360 px: serious accessibility violations`).toEqual(
    [],
  );
  await screenshot(w.page, `${name}-360`);
  await w.page.setViewportSize({ width: 1280, height: 900 });
  expect(w.errors, `${name}: console errors`).toEqual([]);
}
