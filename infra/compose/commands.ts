// The `command` check of a compose file's Tern services (part of check.ts).
import { existsSync } from 'node:fs';
import { isAbsolute, join, posix } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SERVICES, type Service } from '../../services/tern/src/runtime.js';
import { type Dockerfile, getStage } from '../docker/dockerfile.mjs';
import { isObject, type Json } from './json.js';

const WORKDIR = '/app';

// ---------------------------------------------------------------------------------------------
// Commands

/** The files the runtime stage puts in the image, as `/app`-relative directory or file paths. */
export function imagePaths(df: Dockerfile, stage: string): string[] {
  const paths: string[] = [];
  for (const i of getStage(df, stage).instructions) {
    if (i.keyword !== 'COPY' && i.keyword !== 'ADD') continue;
    const parts = i.rest.split(/\s+/);
    const dest = parts.at(-1);
    if (dest) paths.push(posix.normalize(posix.isAbsolute(dest) ? posix.relative(WORKDIR, dest) : dest));
  }
  return paths;
}

const tsupEntries = new Map<string, Promise<string[]>>();

/** `entry` of a package's tsup config (the bundles `npm run build` writes to its dist/). */
function entriesOf(pkgDir: string): Promise<string[]> {
  let entries = tsupEntries.get(pkgDir);
  if (!entries) {
    const config = join(pkgDir, 'tsup.config.ts');
    entries = existsSync(config)
      ? import(pathToFileURL(config).href).then((m: { default: { entry?: unknown } }) => {
          const entry = m.default.entry;
          if (Array.isArray(entry)) return entry.map(String);
          return isObject(entry as Json) ? Object.values(entry as Record<string, string>) : [];
        })
      : Promise.resolve([]);
    tsupEntries.set(pkgDir, entries);
  }
  return entries;
}

/**
 * Whether `file` (relative to /app) is a bundle the build writes and the image carries: a
 * `<package>/dist/<name>.js` whose tsup config builds `src/<name>.ts`, under a path the runtime
 * stage copies.
 */
async function entryProblem(file: string, root: string, copied: string[]): Promise<string | undefined> {
  const rel = posix.normalize(file.startsWith(`${WORKDIR}/`) ? file.slice(WORKDIR.length + 1) : file);
  if (isAbsolute(rel)) return `${file} is outside ${WORKDIR}, where the image keeps Tern`;
  const m = /^((?:services|packages)\/[^/]+)\/dist\/(.+)\.js$/.exec(rel);
  if (!m) return `${file} is not a built entry point (<package>/dist/<name>.js)`;
  const [, pkg = '', name = ''] = m;
  const source = `src/${name}.ts`;
  if (!existsSync(join(root, pkg, source))) return `${file}: its source ${pkg}/${source} does not exist`;
  const entries = (await entriesOf(join(root, pkg))).map((e) => posix.normalize(e));
  if (!entries.includes(source)) return `${file}: ${pkg}/tsup.config.ts does not build ${source}`;
  if (!copied.some((p) => rel === p || rel.startsWith(`${p}/`))) {
    return `${file}: the runtime stage of the Dockerfile does not copy it into the image`;
  }
  return undefined;
}

/** Compose's `command`: a list, or a string split as a shell would split words (no shell runs it). */
export function commandArgv(command: Json | undefined): string[] | undefined {
  if (command === undefined || command === null) return undefined;
  if (Array.isArray(command)) return command.map(String);
  const words = String(command).match(/"[^"]*"|'[^']*'|\S+/g) ?? [];
  return words.map((w) => w.replace(/^(["'])(.*)\1$/, '$2'));
}

export async function commandProblems(
  name: string,
  argv: string[],
  root: string,
  copied: string[],
): Promise<{ problems: string[]; roles: Set<Service> | undefined }> {
  const problems: string[] = [];
  const [program, entry, ...args] = argv;
  if (program !== 'node') {
    problems.push(
      `command starts with "${program ?? ''}": node must be PID 1 so that SIGTERM reaches it (no npm or shell in between); use [node, services/tern/dist/main.js, --services=…]`,
    );
    return { problems, roles: undefined };
  }
  if (!entry) {
    problems.push('command runs node without an entry point');
    return { problems, roles: undefined };
  }
  const bad = await entryProblem(entry, root, copied);
  if (bad) problems.push(bad);
  let roles: Set<Service> | undefined = new Set(SERVICES);
  for (const arg of args) {
    const m = /^--services=(.*)$/.exec(arg);
    if (!m) {
      problems.push(`argument "${arg}" is not one main.js reads (only --services=…)`);
      continue;
    }
    const names = (m[1] ?? '').split(',').filter(Boolean);
    const unknown = names.filter((n) => !(SERVICES as readonly string[]).includes(n));
    if (names.length === 0 || unknown.length > 0) {
      problems.push(
        `--services names ${unknown.join(', ') || 'nothing'}: the roles are ${SERVICES.join(', ')}`,
      );
      roles = undefined;
      continue;
    }
    roles = new Set(names as Service[]);
    // The service's name says which role it is (docs/deploy.md); a service named `api` that
    // runs the ingest role would be scaled and routed as the wrong thing.
    const named = new Set(name.split('-'));
    if (named.size !== roles.size || [...roles].some((r) => !named.has(r))) {
      problems.push(
        `service "${name}" runs --services=${names.join(',')}: name the service after its role(s) (${names.join('-')})`,
      );
    }
  }
  return { problems, roles };
}
