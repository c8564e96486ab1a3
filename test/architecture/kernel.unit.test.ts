import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const manifest = (dir: string) =>
  JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
const ternDeps = (dir: string) =>
  Object.keys(manifest(dir).dependencies ?? {}).filter((d) => d.startsWith('@tern/'));
const imports = (dir: string) =>
  readdirSync(join(ROOT, dir, 'src')).flatMap((f) =>
    [...readFileSync(join(ROOT, dir, 'src', f), 'utf8').matchAll(/from '(@tern\/[^']+)'/g)].map((m) => m[1]!),
  );

// docs/architecture.md § "The kernel": the pieces every package uses sit on the lowest floor.
describe('the kernel and the jobs (issue 41 item 2)', () => {
  it('the kernel depends on no @tern package, so any floor may import it', () => {
    expect(ternDeps('packages/kernel')).toEqual([]);
    expect(imports('packages/kernel')).toEqual([]);
  });

  it('the jobs (pollers, leases, claims) build on the kernel alone', () => {
    expect(ternDeps('packages/jobs')).toEqual(['@tern/kernel']);
    expect([...new Set(imports('packages/jobs'))]).toEqual(['@tern/kernel']);
  });
});
