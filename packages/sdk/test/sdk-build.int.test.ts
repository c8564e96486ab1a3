// The published artefact, checked as a user gets it: tsup builds into a temporary folder, which
// is installed as node_modules/@tern/sdk of an empty project outside the repo (so nothing of the
// monorepo can be resolved), then plain node loads both builds through the package's `exports`
// and tsc compiles a consumer against the bundled declarations.
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const SDK_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
const REPO_DIR = join(SDK_DIR, '..', '..');

let project: string;
let dist: string;

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'tern-sdk-consumer-'));
  const pkg = join(project, 'node_modules', '@tern', 'sdk');
  dist = join(pkg, 'dist');
  mkdirSync(pkg, { recursive: true });
  await run(
    process.execPath,
    [join(REPO_DIR, 'node_modules', 'tsup', 'dist', 'cli-default.js'), '--out-dir', dist],
    {
      cwd: SDK_DIR,
      timeout: 120_000,
    },
  );
  cpSync(join(SDK_DIR, 'package.json'), join(pkg, 'package.json'));
}, 180_000);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

const node = (args: string[]) => run(process.execPath, args, { cwd: project, timeout: 30_000, env: {} });

describe('published build', () => {
  it('emits ESM, CommonJS and both declaration files', () => {
    for (const f of ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts']) {
      expect(readFileSync(join(dist, f), 'utf8').length).toBeGreaterThan(100);
    }
  });

  it('loads with require() in plain node and fails init without a key', async () => {
    const script = `
      const sdk = require('@tern/sdk');
      let message = '';
      try { sdk.init(); } catch (e) { message = e.name + ': ' + e.message; }
      const client = sdk.init({ apiKey: 'tern_x', baseUrl: 'http://127.0.0.1:9/' });
      console.log(JSON.stringify({ keys: Object.keys(sdk).sort(), message, baseUrl: client.baseUrl }));`;
    const { stdout } = await node(['-e', script]);
    expect(JSON.parse(stdout)).toEqual({
      keys: [
        'API_KEY_ENV',
        'BASE_URL_ENV',
        'DEFAULT_BASE_URL',
        'TernApiError',
        'TernConfigError',
        'TernTimeoutError',
        'WebhookVerificationError',
        'init',
        'isTernApiError',
        'verifyWebhook',
      ],
      message:
        'TernConfigError: Missing API key: pass init({ apiKey }) or set the TERN_API_KEY environment variable',
      baseUrl: 'http://127.0.0.1:9',
    });
  });

  it('loads with import() in plain node, reading TERN_API_KEY and TERN_BASE_URL', async () => {
    const script = `
      const sdk = await import('@tern/sdk');
      const client = sdk.init();
      const err = new sdk.TernTimeoutError(5);
      console.log(JSON.stringify({ baseUrl: client.baseUrl, api: err instanceof sdk.TernApiError, status: err.status }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: project,
      timeout: 30_000,
      env: { TERN_API_KEY: 'tern_env', TERN_BASE_URL: 'http://127.0.0.1:9/tern/' },
    });
    expect(JSON.parse(stdout)).toEqual({ baseUrl: 'http://127.0.0.1:9/tern', api: true, status: 0 });
  });

  it('imports nothing at run time', () => {
    for (const f of ['index.js', 'index.cjs']) {
      const code = readFileSync(join(dist, f), 'utf8');
      expect(code).not.toMatch(/\bfrom\s*["']/);
      expect(code).not.toMatch(/\brequire\(\s*["']/);
      expect(code).not.toMatch(/zod|@tern\/contracts/);
    }
  });

  it('declares status as the union of the known statuses, with no foreign type imports', () => {
    for (const f of ['index.d.ts', 'index.d.cts']) {
      const dts = readFileSync(join(dist, f), 'utf8');
      expect(dts).toContain(
        "type EmailStatus = 'QUEUED' | 'SCHEDULED' | 'SENT' | 'DELAYED' | 'DELIVERED' | 'BOUNCED' | 'FAILED' | 'SUPPRESSED' | 'CANCELLED';",
      );
      expect(dts).toMatch(/status: EmailStatus;/);
      expect(dts).not.toMatch(/\bimport\b|zod|@tern\/contracts/);
    }
  });

  it('type-checks a consumer against the declarations (ESM and CommonJS resolution)', async () => {
    writeFileSync(
      join(project, 'consumer.mts'),
      `import { init, type EmailLogEntry, type EmailStatus, TernApiError } from '@tern/sdk';
const client = init({ apiKey: 'tern_x', maxRetries: 0 });
export async function first(): Promise<EmailStatus | undefined> {
  const page = await client.getLogs({ page: 1, limit: 10 });
  const entry: EmailLogEntry | undefined = page.data[0];
  const total: number = page.meta.totalPages;
  void total;
  return entry?.status;
}
export function kind(e: unknown): string {
  return e instanceof TernApiError && e.isMissingScope ? 'scope' : 'other';
}
// @ts-expect-error not a status
export const bad: EmailStatus = 'OPENED';
`,
    );
    writeFileSync(
      join(project, 'consumer.cts'),
      `import sdk = require('@tern/sdk');
export const ok: sdk.EmailStatus = 'DELIVERED';
export const client: sdk.TernClient = sdk.init({ apiKey: 'tern_x' });
`,
    );
    const tsc = join(REPO_DIR, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await node([
      tsc,
      '--noEmit',
      '--strict',
      '--module',
      'node16',
      '--moduleResolution',
      'node16',
      '--target',
      'es2022',
      '--typeRoots',
      join(REPO_DIR, 'node_modules', '@types'),
      '--types',
      'node',
      'consumer.mts',
      'consumer.cts',
    ]).catch((e: { stdout?: string; message: string }) => ({ stdout: e.stdout ?? e.message }));
    expect(result.stdout).toBe('');
  });
});
