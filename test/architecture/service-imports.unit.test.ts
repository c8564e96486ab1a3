import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { crossServiceImports, ROOT, serviceReached, services, specifiers } from './service-imports.js';

describe('services never import one another (issue 25)', () => {
  it('no src/ of a service but the tern runtime imports another service', () => {
    expect(
      crossServiceImports(),
      'move the shared code into packages/, or talk over HTTP or the event log',
    ).toEqual([]);
  });

  it('knows the services: every folder under services/ with its package name', () => {
    const all = services();
    expect(all.map((s) => s.dir)).toEqual(expect.arrayContaining(['api', 'dashboard', 'tern', 'worker']));
    expect(all.find((s) => s.dir === 'worker')?.name).toBe('@tern/worker');
  });

  it('finds every kind of import, not one in a comment', () => {
    const src = [
      "import { a } from '@tern/api';",
      "import type { B } from '@tern/sender/src/x.js';",
      "export { c } from '../../projector/src/index.js';",
      "import '@tern/ingest';",
      "const d = await import('@tern/bounce');",
      "const e = require('@tern/dispatcher');",
      '// import { f } from "@tern/worker";',
      "/* import { g } from '@tern/dashboard'; */",
    ].join('\n');
    expect(specifiers(src)).toEqual([
      '@tern/api',
      '@tern/sender/src/x.js',
      '../../projector/src/index.js',
      '@tern/ingest',
      '@tern/bounce',
      '@tern/dispatcher',
    ]);
  });

  it('tells another service (by name, subpath or relative path) from a package or itself', () => {
    const all = services();
    const file = join(ROOT, 'services', 'worker', 'src', 'campaigns', 'fanout.ts');
    const reached = (s: string) => serviceReached(s, file, 'worker', all);
    expect(reached('@tern/api')).toBe('api');
    expect(reached('@tern/sender/src/x.js')).toBe('sender');
    expect(reached('../../../api/src/index.js')).toBe('api');
    expect(reached('@tern/bulk')).toBeNull();
    expect(reached('@tern/worker')).toBeNull();
    expect(reached('../index.js')).toBeNull();
    expect(reached('../../../../packages/jobs/src/index.js')).toBeNull();
    expect(reached('@tern/apis')).toBeNull();
  });
});
