/// <reference lib="dom" />
// The callbacks given to page.evaluate run in the browser: they see the DOM, not Node.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signDashboardToken } from '@tern/auth';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { buildTern, startTern, type TernProcess } from '../../../test/e2e/tern-process.js';
import { tempDir, waitFor } from '../../../test/support/services.js';

/**
 * Browser tests of the dashboard: a real `npm start`-like process on embedded stores, data posted
 * through `POST /events`, and Debian's Chromium driven by playwright-core. `bash infra/browser.sh`
 * installs Chromium when it is missing (`.ci/run` calls it).
 */
const here = dirname(fileURLToPath(import.meta.url));
const dashboardRoot = resolve(here, '..');
const BROWSER_SETUP = fileURLToPath(new URL('../../../infra/browser.sh', import.meta.url));
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Screenshots of every page (gitignored); `docs/dashboard-overview.png` is copied from here. */
export const ARTIFACTS = resolve(dashboardRoot, 'artifacts');
export const TENANT = 'demo';

/**
 * Builds the dashboard and Tern once per test run. Several browser test files run at once (one
 * process each): the first builds under a lock, the others find the run's stamp and reuse the
 * build, so no file's Tern starts while another file's `vite build` is emptying `dist/`.
 */
export function buildAll(): void {
  const run = process.env.TERN_TEST_RUN_ID;
  const stamp = join(dashboardRoot, 'artifacts', '.build-run');
  withLock(join(dashboardRoot, 'artifacts', '.build-lock'), () => {
    if (run && existsSync(stamp) && readFileSync(stamp, 'utf8') === run) return;
    execFileSync('npx', ['vite', 'build', '--logLevel', 'warn'], { cwd: dashboardRoot, stdio: 'pipe' });
    buildTern();
    if (run) writeFileSync(stamp, run);
  });
}

/** Runs `fn` holding a lock directory (mkdir is atomic); a lock older than 5 minutes is stale. */
function withLock(dir: string, fn: () => void): void {
  mkdirSync(dirname(dir), { recursive: true });
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      mkdirSync(dir);
      break;
    } catch {
      const age = existsSync(dir) ? Date.now() - statSync(dir).mtimeMs : 0;
      if (age > 300_000) rmSync(dir, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`${dir}: still locked after 5 minutes`);
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    fn();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface Tern {
  process: TernProcess;
  url: string;
  /** The banner's one-click link: `PUBLIC_URL/#token=<owner JWT>`. */
  link: string;
  jwt: string;
  ingestToken: string;
  /** A JWT of the demo tenant with another role, signed with the process's dev secret. */
  token(role: 'owner' | 'admin' | 'member'): string;
}

/** Starts the built all-in-one process in development mode (plus `env`) and reads its banner. */
export async function startDashboardTern(env: Record<string, string> = {}): Promise<Tern> {
  const dataDir = tempDir('tern-dashboard-');
  const tern = await startTern({ env: { DATA_DIR: dataDir, NODE_ENV: 'development', ...env } });
  const lines = tern.stdout().split('\n');
  const after = (pattern: RegExp) => {
    const i = lines.findIndex((l) => pattern.test(l));
    expect(i, `banner line ${pattern}`).toBeGreaterThanOrEqual(0);
    return lines[i + 1]!.trim();
  };
  const jwt = after(/Dashboard JWT/);
  const link = after(/Open the dashboard/);
  const ingestToken = lines
    .find((l) => l.includes('Ingest token:'))!
    .split(':')[1]!
    .trim();
  const secrets = JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8')) as {
    jwtSecret: string;
  };
  return {
    process: tern,
    url: tern.url,
    link,
    jwt,
    ingestToken,
    token: (role) =>
      signDashboardToken({
        secret: secrets.jwtSecret,
        tenantId: TENANT,
        role,
        sub: `${role}-user`,
        expiresInSeconds: 3600,
      }),
  };
}

const DAY = 86_400_000;
const TEMPLATES = ['welcome', 'receipt', 'password-reset'];

/**
 * `n` emails spread over the last ~80 days (so 7, 30 and 90 days differ), with every outcome the
 * overview counts: sent, delivered, bounced, failed, opened, clicked, complained.
 */
export function seedEvents(n: number, now = Date.now()) {
  return Array.from({ length: n }, (_, i) => {
    const emailId = `dash-${String(i).padStart(3, '0')}`;
    const at = now - i * 1.8 * DAY - 60_000;
    const ev = (type: string, offsetMs: number, data: Record<string, unknown> = {}) => ({
      id: `${emailId}-${type}`,
      type,
      tenantId: TENANT,
      emailId,
      occurredAt: new Date(at + offsetMs).toISOString(),
      data,
    });
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

export const BROWSER_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Headless Chromium with a fresh user-data-dir (removed on close). */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    // The project's set-up installs the browser itself (Debian's chromium), once.
    execFileSync('bash', [BROWSER_SETUP], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 600_000 });
  }
  const profile = mkdtempSync(join(tmpdir(), 'tern-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: BROWSER_ARGS,
    viewport: { width: 1280, height: 900 },
    timeout: 60_000,
  });
  context.setDefaultTimeout(15_000);
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface WatchedPage {
  page: Page;
  /** Console errors and uncaught exceptions seen so far. */
  errors: string[];
  /** `METHOD /path` of every fetch the page made (the API calls). */
  calls: string[];
}

/** A new tab (its own sessionStorage) that records console errors and page exceptions. */
export async function newPage(browser: Browser, width = 1280): Promise<WatchedPage> {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width, height: 900 });
  const errors: string[] = [];
  const calls: string[] = [];
  page.on('request', (r) => {
    if (r.resourceType() === 'fetch' || r.resourceType() === 'xhr') {
      calls.push(`${r.method()} ${new URL(r.url()).pathname}`);
    }
  });
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  return { page, errors, calls };
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

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
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

/** Accessibility, console, public API only, 360 px and screenshots: the checks every page passes. */
export async function checkPage(w: WatchedPage, name: string): Promise<void> {
  // A bound for a machine busy with the whole suite (the context's 15 s default was once too short).
  await w.page.waitForLoadState('networkidle', { timeout: 30_000 });
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
  expect(await pageOverflow(w.page), `${name}: page wider than 360 px`).toBeLessThanOrEqual(0);
  expect(await seriousA11yViolations(w.page), `${name} at 360 px: serious accessibility violations`).toEqual(
    [],
  );
  await screenshot(w.page, `${name}-360`);
  await w.page.setViewportSize({ width: 1280, height: 900 });
  expect(w.errors, `${name}: console errors`).toEqual([]);
}
