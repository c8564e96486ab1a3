#!/usr/bin/env node
// Reads the repository's Dockerfile so that what runs outside Docker is what the image runs:
// `.ci/run` installs with the build stage's `npm ci` line, test/e2e/image.e2e.test.ts assembles
// the runtime stage's files with the prod-deps stage's lines, and the compose checks read the
// runtime stage's ENV and CMD. Plain JavaScript without dependencies: `.ci/run` runs it before
// anything is installed. Types: dockerfile.d.mts.
//
//   node infra/docker/dockerfile.mjs install <stage>   run the stage's `npm ci` lines here, with
//                                                      the npm version the Dockerfile pins
//   node infra/docker/dockerfile.mjs node-version      print the Node version the image runs
//                                                      (`ARG NODE_VERSION`; infra/node.sh installs it)
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDockerfile } from './dockerfile-parse.mjs';

export { parseDockerfile };

export const DOCKERFILE = resolve(dirname(fileURLToPath(import.meta.url)), '../../Dockerfile');

/**
 * @param {import('./dockerfile.d.mts').Dockerfile} df
 * @param {string} name
 */
export function getStage(df, name) {
  const stage = df.stages.find((s) => s.name === name);
  if (!stage)
    throw new Error(`Dockerfile has no stage "${name}" (stages: ${df.stages.map((s) => s.name).join(', ')})`);
  return stage;
}

/**
 * The stage and the stages it is built FROM, outermost first (`FROM base AS build` → base, build).
 * @param {import('./dockerfile.d.mts').Dockerfile} df
 * @param {string} name
 */
export function stageChain(df, name) {
  /** @type {import('./dockerfile.d.mts').Stage[]} */
  const chain = [];
  let stage = getStage(df, name);
  for (;;) {
    chain.unshift(stage);
    const parentName = stage.from;
    const parent = df.stages.find((s) => s.name === parentName);
    if (!parent) return chain;
    stage = parent;
  }
}

/**
 * The environment a RUN of `name` sees, image environment aside: the ENV of its stage chain and
 * the ARGs in scope (an ARG lives in the stage that declares it; a global ARG only where a stage
 * re-declares it), with `buildArgs` overriding ARG defaults as `--build-arg` does.
 * @param {import('./dockerfile.d.mts').Dockerfile} df
 * @param {string} name
 * @param {Record<string, string>} [buildArgs]
 */
export function runEnvironment(df, name, buildArgs = {}) {
  /** @type {Record<string, string>} */
  const env = {};
  for (const stage of stageChain(df, name)) {
    /** @type {Record<string, string>} */
    const args = {};
    for (const i of stage.instructions) {
      if (i.keyword === 'ARG') {
        for (const [k, v] of i.pairs ?? []) {
          const value = buildArgs[k] ?? v ?? df.globalArgs[k];
          if (value !== undefined) args[k] = value;
        }
      }
      if (i.keyword === 'ENV') for (const [k, v] of i.pairs ?? []) env[k] = v ?? '';
    }
    if (stage.name === name) Object.assign(env, args);
  }
  return env;
}

/**
 * The image environment of `name` (ENV of its stage chain): what the container's process sees
 * before compose adds its own.
 * @param {import('./dockerfile.d.mts').Dockerfile} df
 * @param {string} name
 */
export function imageEnvironment(df, name) {
  /** @type {Record<string, string>} */
  const env = {};
  for (const stage of stageChain(df, name)) {
    for (const i of stage.instructions)
      if (i.keyword === 'ENV') for (const [k, v] of i.pairs ?? []) env[k] = v ?? '';
  }
  return env;
}

/**
 * The shell-form RUN commands of one stage (its own, not its parents'), in order.
 * @param {import('./dockerfile.d.mts').Dockerfile} df
 * @param {string} name
 */
export function runCommands(df, name) {
  return getStage(df, name)
    .instructions.filter((i) => i.keyword === 'RUN')
    .map((i) => {
      if (i.exec) throw new Error(`Dockerfile line ${i.line}: exec-form RUN is not supported by this reader`);
      return i.rest;
    });
}

/**
 * The stage's `npm ci` command lines. Throws when there is none: the checks built on this must
 * not pass because the Dockerfile changed shape.
 * @param {import('./dockerfile.d.mts').Dockerfile} df
 * @param {string} name
 */
export function installCommands(df, name) {
  const commands = runCommands(df, name).filter((c) => /^npm\s+ci(\s|$)/.test(c));
  if (commands.length === 0) throw new Error(`Dockerfile stage "${name}" has no RUN npm ci line`);
  return commands;
}

/**
 * The npm version the image installs with (`ARG NPM_VERSION=…`), if the Dockerfile pins one.
 * @param {import('./dockerfile.d.mts').Dockerfile} df
 */
export function pinnedNpmVersion(df) {
  for (const stage of df.stages) {
    for (const i of stage.instructions) {
      if (i.keyword !== 'ARG') continue;
      const pin = (i.pairs ?? []).find(([k]) => k === 'NPM_VERSION');
      if (pin?.[1]) return pin[1];
    }
  }
  return df.globalArgs.NPM_VERSION;
}

/**
 * PATH under which `npm` is the pinned version: this machine's when it matches, else that
 * version installed once into a temporary prefix (what the image's `npm install --global` does).
 * @param {string | undefined} version
 * @param {(message: string) => void} say
 */
export function pathWithNpm(version, say) {
  const current = execFileSync('npm', ['--version'], { encoding: 'utf8' }).trim();
  const path = process.env.PATH ?? '';
  if (!version || version === current) return path;
  say(
    `npm ${current} here, the Dockerfile pins ${version}: installing npm ${version} into a temporary prefix`,
  );
  const prefix = mkdtempSync(join(tmpdir(), 'tern-npm-'));
  execFileSync(
    'npm',
    ['install', '--global', '--prefix', prefix, '--no-audit', '--no-fund', `npm@${version}`],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  return `${join(prefix, 'bin')}:${path}`;
}

/**
 * Runs shell commands as a RUN does (`/bin/sh -c`), in `cwd`, stopping at the first failure.
 * @param {readonly string[]} commands
 * @param {{ cwd: string; env: Record<string, string | undefined>; say: (message: string) => void }} opts
 * @returns {number} the exit code of the failed command, or 0
 */
export function runShell(commands, opts) {
  for (const command of commands) {
    opts.say(`RUN ${command}`);
    const result = spawnSync('/bin/sh', ['-c', command], { cwd: opts.cwd, env: opts.env, stdio: 'inherit' });
    if (result.status !== 0) return result.status ?? 1;
  }
  return 0;
}

function main() {
  const [command, stageName] = process.argv.slice(2);
  const df = parseDockerfile(readFileSync(DOCKERFILE, 'utf8'));
  const nodePin = df.globalArgs.NODE_VERSION;
  if (command === 'node-version' && nodePin) {
    process.stdout.write(`${nodePin}\n`);
    return;
  }
  if (command !== 'install' || !stageName) {
    process.stderr.write(
      'usage: node infra/docker/dockerfile.mjs install <stage> | node infra/docker/dockerfile.mjs node-version\n',
    );
    process.exit(2);
  }
  const say = (/** @type {string} */ message) => process.stderr.write(`dockerfile: ${message}\n`);
  if (nodePin && nodePin !== process.versions.node) {
    say(`warning: node ${process.versions.node} here, the image runs node ${nodePin}`);
  }
  const path = pathWithNpm(pinnedNpmVersion(df), say);
  const env = { ...process.env, ...runEnvironment(df, stageName), PATH: path };
  process.exit(runShell(installCommands(df, stageName), { cwd: process.cwd(), env, say }));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
