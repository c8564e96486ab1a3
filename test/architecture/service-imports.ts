import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/**
 * Services never import one another (issue 25; docs/architecture.md relies on it where it puts
 * shared stores in `packages/`): a service (a folder under `services/`) reaches another only over
 * the network or the event log, never by importing its code. Only the `tern` runtime, which runs
 * the services as roles of one process, imports them (the dashboard's routes included). Shared
 * code lives in `packages/`. Tests may drive another service (a devDependency): only `src/` is
 * checked.
 */

export const ROOT = join(import.meta.dirname, '..', '..');

/** The one service allowed to import the others. */
export const RUNTIME = 'tern';

export interface Service {
  /** Its folder under `services/`. */
  dir: string;
  /** Its package name (`@tern/api`). */
  name: string;
}

/** Every folder under `services/` with a package.json: its folder and package name. */
export function services(root = ROOT): Service[] {
  const out: Service[] = [];
  for (const dir of readdirSync(join(root, 'services')).sort()) {
    try {
      const manifest = JSON.parse(readFileSync(join(root, 'services', dir, 'package.json'), 'utf8'));
      out.push({ dir, name: (manifest as { name: string }).name });
    } catch {
      // Not a workspace.
    }
  }
  return out;
}

export function* sourceFiles(dir: string): Generator<string> {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  for (const entry of entries) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* sourceFiles(path);
    else if (/\.tsx?$/.test(path) && !path.endsWith('.d.ts') && !/\.test\.tsx?$/.test(path)) yield path;
  }
}

/** The source without its comments (prose names other services freely). */
const withoutComments = (src: string) =>
  src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

/** Every module specifier of `src`: static and type imports, re-exports, `import()`, `require()`. */
export function specifiers(src: string): string[] {
  const code = withoutComments(src);
  const out: string[] = [];
  for (const m of code.matchAll(
    /\b(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*['"]([^'"]+)['"]|\b(?:import|require)\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ))
    out.push((m[1] ?? m[2] ?? m[3])!);
  return out;
}

/**
 * The other service a specifier of a file in `services/<from>/` reaches, or null: a package name
 * of another service (or a subpath of it), or a relative path into another service's folder.
 */
export function serviceReached(
  specifier: string,
  file: string,
  from: string,
  all: readonly Service[],
  root = ROOT,
): string | null {
  if (specifier.startsWith('.')) {
    const target = relative(join(root, 'services'), resolve(dirname(file), specifier));
    const dir = target.split(sep)[0];
    return dir && !target.startsWith('..') && dir !== from && all.some((s) => s.dir === dir) ? dir : null;
  }
  const hit = all.find((s) => s.dir !== from && (specifier === s.name || specifier.startsWith(`${s.name}/`)));
  return hit?.dir ?? null;
}

/** `file → service` for every import of another service in a service's `src/` (the runtime's excepted). */
export function crossServiceImports(root = ROOT): string[] {
  const all = services(root);
  const strays: string[] = [];
  for (const { dir } of all) {
    if (dir === RUNTIME) continue;
    for (const file of sourceFiles(join(root, 'services', dir, 'src')))
      for (const specifier of specifiers(readFileSync(file, 'utf8'))) {
        const reached = serviceReached(specifier, file, dir, all, root);
        if (reached) strays.push(`${relative(root, file)} → ${specifier} (services/${reached})`);
      }
  }
  return strays;
}
