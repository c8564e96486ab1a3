// Global setup of the `browser` vitest project (the dashboard's browser tests): ONE Tern and ONE
// Chromium for every browser test file of the run, instead of one of each per file. Each file then
// works in a tenant of its own (its own JWTs, its own data), so files stay independent and may run
// side by side against the same process. This is an entry point of the test run (the main vitest
// process): what it starts is handed to the test files through `provide`, and stopped at the end.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import type { TestProject } from 'vitest/node';
import { freePort, startTern } from '../../../test/e2e/tern-process.js';
import { buildAll } from './build.js';

const BROWSER_SETUP = fileURLToPath(new URL('../../../infra/browser.sh', import.meta.url));
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Chromium's switches: headless on a shared CI machine, nothing reaching out to the network. */
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

/** What every browser test file gets: the running Tern and the browser to connect to. */
export interface DashboardEnv {
  url: string;
  /** The banner's one-click link (`PUBLIC_URL/#token=<demo owner JWT>`). */
  link: string;
  /** The banner's JWT: tenant `demo`, role owner. */
  bannerJwt: string;
  ingestToken: string;
  /** The development JWT secret (DATA_DIR/dev-secrets.json): files sign tokens of their own tenant. */
  jwtSecret: string;
  /** `chromium.connect(wsEndpoint)`: the shared browser. */
  wsEndpoint: string;
  /** The MX listener's port (INBOUND_SMTP_PORT; INBOUND_DOMAIN is `in.tern.test`). */
  inboundPort: number;
}

declare module 'vitest' {
  export interface ProvidedContext {
    dashboard: DashboardEnv;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  // The dashboard's build and the all-in-one bundle, as `npm run build` makes them, once for the
  // run: the id goes to every test process, so a test that also wants the build (the image test)
  // finds it made and does not rebuild under this run's Tern.
  const ownBuildId = process.env.TERN_DASHBOARD_BUILD_ID === undefined;
  process.env.TERN_DASHBOARD_BUILD_ID ??= `dashboard-${started}-${process.pid}`;
  buildAll();
  if (!existsSync(CHROMIUM)) {
    // The project's set-up installs the browser itself (Debian's chromium), once.
    execFileSync('bash', [BROWSER_SETUP], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 600_000 });
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'tern-dashboard-'));
  const inboundPort = await freePort();
  const tern = await startTern({
    env: {
      DATA_DIR: dataDir,
      NODE_ENV: 'development',
      INBOUND_SMTP_PORT: String(inboundPort),
      INBOUND_DOMAIN: 'in.tern.test',
    },
    // A shared 2-core machine under a full test run can take over a minute to start it.
    readyTimeoutMs: 180_000,
  });
  let browser: Awaited<ReturnType<typeof chromium.launchServer>> | undefined;
  try {
    const lines = tern.stdout().split('\n');
    const after = (pattern: RegExp) => {
      const i = lines.findIndex((l) => pattern.test(l));
      if (i < 0) throw new Error(`no banner line ${pattern} in: ${tern.stdout()}`);
      return lines[i + 1]!.trim();
    };
    const ingestLine = lines.find((l) => l.includes('Ingest token:'));
    if (!ingestLine) throw new Error(`no ingest token in the banner: ${tern.stdout()}`);
    const secrets = JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8')) as {
      jwtSecret: string;
    };
    browser = await chromium.launchServer({
      executablePath: CHROMIUM,
      headless: true,
      args: BROWSER_ARGS,
      timeout: 60_000,
    });
    project.provide('dashboard', {
      url: tern.url,
      link: after(/Open the dashboard/),
      bannerJwt: after(/Dashboard JWT/),
      ingestToken: ingestLine.split(':')[1]!.trim(),
      jwtSecret: secrets.jwtSecret,
      wsEndpoint: browser.wsEndpoint(),
      inboundPort,
    });
  } catch (error) {
    await browser?.close();
    await tern.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  console.log(`[browser setup] Tern at ${tern.url} and Chromium ready in ${Date.now() - started} ms`);
  return async () => {
    await browser?.close();
    await tern.stop();
    rmSync(dataDir, { recursive: true, force: true });
    if (ownBuildId) delete process.env.TERN_DASHBOARD_BUILD_ID;
  };
}
