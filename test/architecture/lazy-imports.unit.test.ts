// Issue 45, item 6: what a start does not need is not loaded by it. These packages serve one role's
// traffic (mail parsed, relayed or authenticated, Kafka, DMARC archives, SendGrid signatures, MCP),
// together about half of what the built process imported at start. Server code names them in
// `import type` only and loads them on first use (`onFirstUse`, @tern/kernel).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

const LOADED_ON_FIRST_USE = [
  'kafkajs',
  'nodemailer',
  'mailparser',
  'mailauth',
  'libmime',
  'fast-xml-parser',
  'yauzl',
  '@sendgrid/eventwebhook',
  '@modelcontextprotocol/sdk',
];

/** The static value imports (not `import type`) of one of those packages in a source text. */
function eagerImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)';/gms)) {
    const [, typeOnly, specifier = ''] = m;
    if (typeOnly) continue;
    const pkg = LOADED_ON_FIRST_USE.find((p) => specifier === p || specifier.startsWith(`${p}/`));
    if (pkg) found.push(specifier);
  }
  return found;
}

/** The server code: every workspace's `src/` (what `npm start` bundles). */
function serverSources(): string[] {
  return execFileSync('git', ['ls-files', '-z', '--', 'services/*/src/*.ts', 'packages/*/src/*.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter(Boolean);
}

describe('dependencies loaded on first use (issue 45, item 6)', () => {
  it('finds an eager import, and only an eager one (the check is not vacuous)', () => {
    expect(eagerImports("import { simpleParser } from 'mailparser';")).toEqual(['mailparser']);
    expect(eagerImports("import {\n  Kafka,\n  logLevel,\n} from 'kafkajs';")).toEqual(['kafkajs']);
    expect(eagerImports("import x from '@modelcontextprotocol/sdk/server/index.js';")).toHaveLength(1);
    expect(eagerImports("import type { ParsedMail } from 'mailparser';")).toEqual([]);
    expect(eagerImports("import { z } from 'zod';")).toEqual([]);
    expect(serverSources().length).toBeGreaterThan(300);
  });

  it('no server source imports them at start', () => {
    const eager = serverSources().flatMap((file) =>
      eagerImports(readFileSync(join(ROOT, file), 'utf8')).map((specifier) => `${file}: ${specifier}`),
    );
    expect(eager).toEqual([]);
  });
});
