import { spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DOCKERFILE,
  installCommands,
  parseDockerfile,
  pathWithNpm,
  pinnedNpmVersion,
} from './dockerfile.mjs';
import { REPO_ROOT } from './runtime-tree.js';

/**
 * The image is built on a machine whose registry serves every platform's binaries; this one's
 * answers 404 for some (koffi's and chDB's other platforms). npm ci compares the lockfile with
 * the tree it resolves, so a registry that serves more can make it refuse a lockfile this one
 * accepts — issue 31's failure. Here a registry in the test process answers as the full one
 * would: every optional dependency the lockfile names but does not lock gets a manifest, the rest
 * is passed through to the configured registry. The Dockerfile's `npm ci` lines, dry-run, with
 * the npm it pins.
 */

type LockPackage = { version?: string; optionalDependencies?: Record<string, string> };
type Lockfile = { packages: Record<string, LockPackage> };

/** Optional dependencies named in the lockfile with no entry of their own: name → version. */
function unlockedOptionals(lock: Lockfile): Map<string, string> {
  const missing = new Map<string, string>();
  for (const entry of Object.values(lock.packages)) {
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
      if (!lock.packages[`node_modules/${name}`]) missing.set(name, version);
    }
  }
  return missing;
}

/** `extra()`: the manifests to make up, read at each request (each test sets its lockfile's). */
function fullRegistry(upstream: string, extra: () => Map<string, string>, asked: string[]): Server {
  return createServer((req, res) => {
    const name = decodeURIComponent((req.url ?? '/').slice(1));
    asked.push(name);
    const version = extra().get(name);
    if (version) {
      const tarball = `http://${req.headers.host}/${name}/-/package-${version}.tgz`;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          name,
          'dist-tags': { latest: version },
          versions: { [version]: { name, version, dist: { tarball } } },
        }),
      );
      return;
    }
    fetch(new URL(req.url ?? '/', upstream), { headers: { accept: req.headers.accept ?? '*/*' } }).then(
      async (up) => {
        res.writeHead(up.status, {
          'content-type': up.headers.get('content-type') ?? 'application/octet-stream',
        });
        res.end(Buffer.from(await up.arrayBuffer()));
      },
      () => {
        res.writeHead(502);
        res.end();
      },
    );
  });
}

describe("the Dockerfile's npm ci on a registry that serves every platform's packages", () => {
  const df = parseDockerfile(readFileSync(DOCKERFILE, 'utf8'));
  const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as Lockfile;
  const path = pathWithNpm(pinnedNpmVersion(df), () => {});
  const asked: string[] = [];
  let extra = new Map<string, string>();
  const dirs: string[] = [];
  let server: Server;
  let registry: string;

  beforeAll(async () => {
    const upstream = spawnSync('npm', ['config', 'get', 'registry'], {
      encoding: 'utf8',
      env: { ...process.env, PATH: path },
    }).stdout.trim();
    server = fullRegistry(upstream, () => extra, asked);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await new Promise<void>((r) => server.close(() => r()));
  });

  /** The manifests npm ci reads (every package.json and the lockfile) in a fresh directory. */
  function project(lockfile: Lockfile): string {
    const dir = mkdtempSync(join(tmpdir(), 'tern-lockfile-'));
    dirs.push(dir);
    for (const file of ['package.json', '.npmrc']) cpSync(join(REPO_ROOT, file), join(dir, file));
    for (const parent of ['packages', 'services']) {
      for (const name of readdirSync(join(REPO_ROOT, parent))) {
        const manifest = join(REPO_ROOT, parent, name, 'package.json');
        if (!existsSync(manifest)) continue;
        mkdirSync(join(dir, parent, name), { recursive: true });
        cpSync(manifest, join(dir, parent, name, 'package.json'));
      }
    }
    writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(lockfile, null, 2));
    extra = unlockedOptionals(lockfile);
    return dir;
  }

  /** The Dockerfile's line, pointed at the registry above, without writing node_modules. */
  function npmCi(dir: string, stage: string): Promise<{ status: number | null; output: string }> {
    const [command] = installCommands(df, stage);
    // Asynchronous: the registry answers from this process.
    const child = spawn('/bin/sh', ['-c', `${command} --dry-run --registry=${registry}`], {
      cwd: dir,
      env: { ...process.env, PATH: path },
    });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    return new Promise((resolve) => child.once('exit', (status) => resolve({ status, output })));
  }

  it.each(['build', 'prod-deps'])(
    'the %s stage accepts the lockfile',
    async (stage) => {
      const { status, output } = await npmCi(project(lock), stage);
      expect(output).not.toMatch(/Missing: /);
      expect(status, output.slice(-2000)).toBe(0);
    },
    120_000,
  );

  it('refuses a lockfile without one platform entry of a package the registry serves (before issue 31: 32 of them)', async () => {
    const broken = structuredClone(lock);
    delete broken.packages['node_modules/@biomejs/cli-darwin-arm64'];
    const { status, output } = await npmCi(project(broken), 'build');
    expect(status).not.toBe(0);
    expect(output).toContain('Missing: @biomejs/cli-darwin-arm64@2.6.8 from lock file');
    expect(asked).toContain('@biomejs/cli-darwin-arm64');
  }, 120_000);
});
