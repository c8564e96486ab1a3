// The image's runtime stage, assembled outside Docker (no engine here): the build context as a
// clean clone has it, the prod-deps stage's RUN lines run in it as the Dockerfile has them, then
// the runtime stage's COPY lines carried out (from prod-deps: that directory; from build: this
// checkout, built by `npm run build`). test/e2e/image.e2e.test.ts starts Tern's roles from the
// result; `npx tsx infra/docker/runtime-tree.ts [--keep]` prints its size (the README's image size).
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DOCKERFILE,
  type Dockerfile,
  getStage,
  parseDockerfile,
  pathWithNpm,
  pinnedNpmVersion,
  runCommands,
  runEnvironment,
  runShell,
} from './dockerfile.mjs';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const WORKDIR = '/app';

export interface RuntimeTree {
  /** Stands for the image's /app. */
  dir: string;
  /** The prod-deps stage's directory (its node_modules moved into `dir`). */
  depsDir: string;
  dockerfile: Dockerfile;
}

export interface AssembleOptions {
  /** `--build-arg`s of the prod-deps stage. */
  buildArgs?: Record<string, string>;
  /** Progress lines (the RUN lines as they start). */
  say?: (message: string) => void;
  repoRoot?: string;
}

/** The files of the build context a clean clone would hold: tracked and untracked, not ignored. */
function copyContext(repoRoot: string, into: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: repoRoot,
    encoding: 'utf8',
  })
    .split('\0')
    .filter(Boolean);
  for (const file of files) {
    const from = join(repoRoot, file);
    if (!existsSync(from) || lstatSync(from).isDirectory()) continue;
    mkdirSync(dirname(join(into, file)), { recursive: true });
    cpSync(from, join(into, file), { verbatimSymlinks: true });
  }
}

/** `/app/x` or `x` → `x` (relative to the WORKDIR). */
const underWorkdir = (p: string) =>
  posix.normalize(p.startsWith(`${WORKDIR}/`) ? p.slice(WORKDIR.length + 1) : p);

export function assembleRuntimeTree(opts: AssembleOptions = {}): RuntimeTree {
  const say = opts.say ?? (() => {});
  const repoRoot = opts.repoRoot ?? REPO_ROOT;
  const dockerfile = parseDockerfile(readFileSync(DOCKERFILE, 'utf8'));
  const runtime = dockerfile.stages.at(-1);
  if (!runtime) throw new Error('Dockerfile has no stage');
  const base = mkdtempSync(join(tmpdir(), 'tern-image-'));
  const depsDir = join(base, 'prod-deps');
  const dir = join(base, 'runtime');
  mkdirSync(dir);

  // prod-deps: `COPY . .`, then its RUN lines, as the stage has them (checked: no other COPY).
  const depsStage = getStage(dockerfile, 'prod-deps');
  const copies = depsStage.instructions.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD');
  if (copies.length !== 1 || copies[0]?.rest !== '. .' || Object.keys(copies[0].flags).length > 0) {
    throw new Error('prod-deps: this assembly expects the stage to copy the context with `COPY . .` only');
  }
  copyContext(repoRoot, depsDir);
  const env = {
    ...process.env,
    ...runEnvironment(dockerfile, 'prod-deps', opts.buildArgs),
    PATH: pathWithNpm(pinnedNpmVersion(dockerfile), say),
  };
  const code = runShell(runCommands(dockerfile, 'prod-deps'), { cwd: depsDir, env, say });
  if (code !== 0) throw new Error(`prod-deps: a RUN line failed (exit ${code})`);

  // runtime: its COPY --from lines. The deps stage is not used again, so its node_modules move.
  for (const i of runtime.instructions) {
    if (i.keyword === 'ADD')
      throw new Error(`Dockerfile line ${i.line}: ADD in the runtime stage is not assembled here`);
    if (i.keyword !== 'COPY') continue;
    const [source, dest, ...more] = i.rest.split(/\s+/);
    if (!source || !dest || more.length > 0)
      throw new Error(`Dockerfile line ${i.line}: one source and one destination expected`);
    const from = i.flags.from === 'prod-deps' ? depsDir : i.flags.from === 'build' ? repoRoot : undefined;
    if (!from)
      throw new Error(
        `Dockerfile line ${i.line}: COPY --from=${i.flags.from ?? '(context)'} is not assembled here`,
      );
    const src = join(from, underWorkdir(source));
    const dst = join(dir, underWorkdir(dest));
    if (!existsSync(src))
      throw new Error(`Dockerfile line ${i.line}: ${src} does not exist (npm run build first?)`);
    mkdirSync(dirname(dst), { recursive: true });
    if (from === depsDir) renameSync(src, dst);
    else cpSync(src, dst, { recursive: true, verbatimSymlinks: true });
  }
  return { dir, depsDir, dockerfile };
}

/** Bytes of the files under `dir` (symlinks counted as links, as a layer stores them). */
export function treeBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += treeBytes(path);
    else total += lstatSync(path).size;
  }
  return total;
}

function main(): void {
  const say = (message: string) => process.stderr.write(`runtime-tree: ${message}\n`);
  const tree = assembleRuntimeTree({ say });
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
  const rows: [string, number][] = [
    ['node_modules', treeBytes(join(tree.dir, 'node_modules'))],
    [
      '  of which @chdb (embedded ClickHouse)',
      existsSync(join(tree.dir, 'node_modules/@chdb')) ? treeBytes(join(tree.dir, 'node_modules/@chdb')) : 0,
    ],
    ['services/tern/dist', treeBytes(join(tree.dir, 'services/tern/dist'))],
    ['services/dashboard/dist', treeBytes(join(tree.dir, 'services/dashboard/dist'))],
    ['infra/migrations', treeBytes(join(tree.dir, 'infra/migrations'))],
    ['/app in all', treeBytes(tree.dir)],
  ];
  for (const [what, bytes] of rows) process.stdout.write(`${what.padEnd(40)} ${mb(bytes).padStart(10)}\n`);
  if (process.argv.includes('--keep')) process.stdout.write(`(kept in ${tree.dir})\n`);
  else rmSync(dirname(tree.dir), { recursive: true, force: true });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
