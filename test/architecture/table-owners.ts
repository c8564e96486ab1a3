import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * The rule of docs/architecture.md § "Who owns a table": each Postgres and ClickHouse table's SQL
 * lives in its one owning module (and the migrations). This module finds, in the source tree,
 * which files name which table in SQL, and reads the owners from the doc; table-owners.unit.test.ts
 * compares them.
 */

export const ROOT = join(import.meta.dirname, '..', '..');

/** Every table the migrations create (Postgres and ClickHouse). */
export function migratedTables(root = ROOT): string[] {
  const tables = new Set<string>();
  for (const dir of ['infra/migrations/postgres', 'infra/migrations/clickhouse'])
    for (const file of readdirSync(join(root, dir)))
      for (const m of readFileSync(join(root, dir, file), 'utf8').matchAll(
        /CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_0-9]+)/gi,
      ))
        tables.add(m[1]!);
  return [...tables].sort();
}

/**
 * Every source folder of the tree that can hold SQL (issue 41 item 5): each workspace's `src/`,
 * not only those that depend on a database driver, and the root's `scripts/`. Not `web/` (the
 * browser holds no SQL; a resource's name there is a URL) nor `bench/` (a bench measures the
 * stores directly: its ceilings are built to bypass the owners).
 */
function sourceFolders(root: string): string[] {
  const out: string[] = [];
  for (const base of ['packages', 'services'])
    for (const name of readdirSync(join(root, base)))
      if (existsSync(join(root, base, name, 'src'))) out.push(join(base, name, 'src'));
  if (existsSync(join(root, 'scripts'))) out.push('scripts');
  return out;
}

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* sourceFiles(path);
    else if (/\.tsx?$/.test(path) && !/\.test\.tsx?$/.test(path) && !path.endsWith('.d.ts')) yield path;
  }
}

/** The source without its comments (prose names tables freely). */
const withoutComments = (src: string) =>
  src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

/** True when `src` names `table` in SQL or as a table name (a string literal of exactly it). */
export function namesTable(src: string, table: string): boolean {
  return new RegExp(
    `\\b(?:FROM|JOIN|INTO|UPDATE|TABLE|TRUNCATE|EXISTS)\\s+(?:ONLY\\s+)?${table}\\b|['"\`]${table}['"\`]`,
  ).test(src);
}

/** Per table, the source files (relative to the root, outside tests) that name it. */
export function tableUsers(root = ROOT, tables = migratedTables(root)): Map<string, string[]> {
  const users = new Map<string, string[]>(tables.map((t) => [t, []]));
  for (const dir of sourceFolders(root))
    for (const file of sourceFiles(join(root, dir))) {
      const src = withoutComments(readFileSync(file, 'utf8'));
      for (const table of tables) if (namesTable(src, table)) users.get(table)!.push(relative(root, file));
    }
  return users;
}

const cells = (line: string) =>
  line
    .split('|')
    .slice(1, -1)
    .map((c) => c.trim());
const code = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** The rows of the markdown table that follows `heading` in docs/architecture.md. */
function docTable(heading: string, root: string): string[][] {
  const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
  const start = doc.indexOf(heading);
  if (start < 0) throw new Error(`docs/architecture.md has no "${heading}"`);
  const rows: string[][] = [];
  let inTable = false;
  for (const line of doc.slice(start).split('\n').slice(1)) {
    if (line.startsWith('|')) {
      inTable = true;
      if (!/^\|\s*-/.test(line)) rows.push(cells(line));
    } else if (inTable) break;
  }
  return rows.slice(1); // the header
}

/** Table → its owning module (a file, or a folder ending in `/`), from the doc's first table. */
export function documentedOwners(root = ROOT): Map<string, string> {
  const owners = new Map<string, string>();
  for (const [tables, owner] of docTable('## Who owns a table', root))
    for (const table of code(tables ?? '')) owners.set(table, code(owner ?? '')[0] ?? '');
  return owners;
}

/** True when `file` is (in) the module `owner`. */
export const isIn = (file: string, owner: string) =>
  owner.endsWith('/') ? file.startsWith(owner) : file === owner;
