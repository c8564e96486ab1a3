import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
/** docs/architecture.md § "Size": a file a newcomer reads in one sitting. */
const MAX_SOURCE_LINES = 350;

/**
 * The shipped code: every workspace's `src/`, the dashboard's `web/`, `scripts/` and `infra/`
 * (TypeScript). Tests, benches and fixtures are not held to it: a test file reads as a list of cases.
 */
function sourceFiles(): string[] {
  const tracked = execFileSync('git', ['ls-files', '-z', '--', '*.ts', '*.tsx', '*.mts'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter(Boolean);
  return tracked.filter(
    (f) =>
      (/^(services|packages)\/[^/]+\/(src|web|scripts)\//.test(f) ||
        f.startsWith('infra/') ||
        f.startsWith('scripts/')) &&
      !f.endsWith('.test.ts'),
  );
}

const lines = (file: string) => readFileSync(join(ROOT, file), 'utf8').split('\n').length - 1;

describe('file size (issue 41)', () => {
  it('finds the source files (the check below is not vacuous)', () => {
    const files = sourceFiles();
    expect(files.length).toBeGreaterThan(300);
    expect(files).toContain('services/api/src/app.ts');
    expect(files).toContain('services/dashboard/web/app.tsx');
  });

  it(`no source file is over ${MAX_SOURCE_LINES} lines`, () => {
    const over = sourceFiles()
      .map((f) => ({ f, n: lines(f) }))
      .filter(({ n }) => n > MAX_SOURCE_LINES)
      .map(({ f, n }) => `${f}: ${n}`);
    expect(over).toEqual([]);
  });
});

/** docs/architecture.md § "Where tests live": the api's app tests grouped by resource (issue 41). */
describe('the api test layout', () => {
  const files = execFileSync('git', ['ls-files', '-z', '--', 'services/api/test'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter(Boolean)
    .map((f) => f.slice('services/api/test/'.length));

  it('holds at most 30 files, every test file in a resource folder', () => {
    expect(files.length).toBeGreaterThan(10);
    expect(files.length).toBeLessThanOrEqual(30);
    expect(files.filter((f) => f.endsWith('.test.ts') && !f.includes('/'))).toEqual([]);
  });
});
