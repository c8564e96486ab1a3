import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  CONFIG_DOCS,
  CONFIG_TABLE_END,
  CONFIG_TABLE_START,
  ENV_VARS,
  renderConfigTables,
  TOOL_VARIABLES,
} from '../src/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

// Cell text without the padding a formatter adds, so the README may be formatted.
const normalise = (markdown: string): string[] =>
  markdown
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .map((line) =>
      line.startsWith('|')
        ? line
            .split(/(?<!\\)\|/)
            .map((cell) => cell.trim().replace(/^-+$/, '---'))
            .join('|')
        : line,
    );

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'test') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.tsx?$/.test(name)) out.push(path);
  }
  return out;
}

describe('the README configuration table', () => {
  it('is the one generated from the config schema (run `npm run docs:config` after changing a variable)', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const start = readme.indexOf(CONFIG_TABLE_START);
    const end = readme.indexOf(CONFIG_TABLE_END);
    expect(start, 'README.md has the config-table markers').toBeGreaterThan(0);
    expect(normalise(readme.slice(start + CONFIG_TABLE_START.length, end))).toEqual(
      normalise(renderConfigTables()),
    );
  });

  it('documents every variable the schema reads, and nothing else', () => {
    expect(Object.keys(CONFIG_DOCS).sort()).toEqual([...ENV_VARS].sort());
  });

  it('names every environment variable the code reads', () => {
    const known = new Set<string>([...ENV_VARS, ...Object.keys(TOOL_VARIABLES)]);
    const read = new Map<string, string>();
    for (const top of ['services', 'packages']) {
      for (const pkg of readdirSync(join(ROOT, top))) {
        const src = join(ROOT, top, pkg, 'src');
        try {
          statSync(src);
        } catch {
          continue;
        }
        for (const file of sourceFiles(src)) {
          for (const m of readFileSync(file, 'utf8').matchAll(
            /process\.env(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])/g,
          ))
            read.set(m[1] ?? m[2]!, file.slice(ROOT.length + 1));
        }
      }
    }
    expect(read.size).toBeGreaterThan(0);
    const unknown = [...read].filter(([name]) => !known.has(name)).map(([name, file]) => `${name} (${file})`);
    expect(
      unknown,
      'read from process.env but missing from the README tables (packages/config/src/docs.ts, docs-tables.ts)',
    ).toEqual([]);
  });
});
