import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT, sourceFiles, specifiers } from './service-imports.js';

/**
 * No module of a workspace imports itself back through others (issue 25: the type-only cycle
 * `route-deps.ts ↔ webhooks/routes.ts`, later `notices.ts ↔ notice-fields.ts`). Type imports
 * count: a cycle of types still ties two files into one unit of change.
 */

/** The file a relative specifier of `file` names (`./x.js` → `x.ts`/`x.tsx`, a folder → its index), or null. */
function target(file: string, specifier: string): string | null {
  const base = resolve(dirname(file), specifier).replace(/\.js$/, '');
  for (const candidate of [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts')])
    if (existsSync(candidate)) return candidate;
  return null;
}

/** Each source file of a workspace's `src/` → the files of it that it imports. */
export function importGraph(srcDir: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(srcDir)) {
    const deps = specifiers(readFileSync(file, 'utf8'))
      .filter((s) => s.startsWith('.'))
      .map((s) => target(file, s))
      .filter((t): t is string => t !== null && !/\.test\.tsx?$/.test(t));
    graph.set(file, [...new Set(deps)]);
  }
  return graph;
}

/** Every cycle found by one depth-first walk, each as its path (first file repeated at the end). */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const found: string[][] = [];
  const walk = (node: string, path: string[]) => {
    state.set(node, 'open');
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) walk(next, [...path, next]);
    }
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) walk(node, [node]);
  return found;
}

/** The source folders of a workspace: its `src/`, and the dashboard's browser code in `web/`. */
export const SOURCE_FOLDERS = ['src', 'web'] as const;

/** The cycles of every source folder of every workspace under `services/` and `packages/`, as paths relative to the root. */
export function workspaceCycles(root = ROOT): string[] {
  const out: string[] = [];
  for (const base of ['services', 'packages'])
    for (const name of readdirSync(join(root, base)).sort())
      for (const folder of SOURCE_FOLDERS) {
        const src = join(root, base, name, folder);
        if (!existsSync(src)) continue;
        for (const cycle of cycles(importGraph(src)))
          out.push(cycle.map((f) => relative(root, f)).join(' → '));
      }
  return out;
}
