import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  DOCKERFILE,
  getStage,
  imageEnvironment,
  installCommands,
  parseDockerfile,
  pinnedNpmVersion,
  runCommands,
  runEnvironment,
} from './dockerfile.mjs';

describe('the Dockerfile reader', () => {
  const sample = [
    '# syntax=docker/dockerfile:1',
    'ARG V=1',
    'FROM node:$V AS base',
    'ENV A=1 \\',
    '    # a comment inside a continued instruction is dropped',
    '    B="two words"',
    'ARG PINNED=9',
    'FROM base AS deps',
    'ARG V',
    'ARG FLAG=on',
    'RUN --mount=type=cache,target=/root/.npm npm ci \\',
    '      --omit=dev',
    'RUN echo "$FLAG"',
    'FROM scratch',
    'ENV LEGACY value with spaces',
    'CMD ["node", "main.js"]',
  ].join('\n');

  it('joins continuations, drops comments, strips RUN flags and reads stages', () => {
    const df = parseDockerfile(sample);
    expect(df.globalArgs).toEqual({ V: '1' });
    expect(df.stages.map((s) => [s.name, s.from])).toEqual([
      ['base', 'node:$V'],
      ['deps', 'base'],
      ['2', 'scratch'],
    ]);
    expect(installCommands(df, 'deps')).toEqual(['npm ci --omit=dev']);
    expect(runCommands(df, 'deps')).toEqual(['npm ci --omit=dev', 'echo "$FLAG"']);
    expect(getStage(df, '2').instructions.at(-1)?.exec).toEqual(['node', 'main.js']);
  });

  it('gives a RUN the ENV of its stage chain and the ARGs of its own stage, build args first', () => {
    const df = parseDockerfile(sample);
    // PINNED belongs to base: out of scope in deps. V is global, re-declared in deps.
    expect(runEnvironment(df, 'deps')).toEqual({ A: '1', B: 'two words', V: '1', FLAG: 'on' });
    expect(runEnvironment(df, 'deps', { FLAG: 'off' }).FLAG).toBe('off');
    expect(imageEnvironment(df, '2')).toEqual({ LEGACY: 'value with spaces' });
    expect(pinnedNpmVersion(df)).toBeUndefined();
  });

  it('refuses what it cannot read rather than guessing', () => {
    expect(() => installCommands(parseDockerfile('FROM x AS a\nRUN npm install'), 'a')).toThrow(
      /no RUN npm ci/,
    );
    expect(() => parseDockerfile('FROM x\nRUN <<EOF\nnpm ci\nEOF')).toThrow(/heredocs/);
    expect(() => parseDockerfile('RUN npm ci')).toThrow(/before the first FROM/);
    expect(() => getStage(parseDockerfile('FROM x AS a'), 'b')).toThrow(/no stage "b"/);
  });
});

describe("the repository's Dockerfile: a production image", () => {
  const df = parseDockerfile(readFileSync(DOCKERFILE, 'utf8'));
  const runtime = df.stages.at(-1)!;
  const of = (keyword: string) => runtime.instructions.filter((i) => i.keyword === keyword);

  it('builds with dev dependencies and ships production dependencies only', () => {
    expect(installCommands(df, 'build')).toEqual([expect.not.stringContaining('--omit=dev')]);
    expect(installCommands(df, 'prod-deps')).toEqual([expect.stringContaining('--omit=dev')]);
    expect(runCommands(df, 'build')).toContain('npm run build');
    expect(pinnedNpmVersion(df)).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('the last stage copies node_modules from prod-deps and only built files from build', () => {
    expect(runtime.name).toBe('runtime');
    const copies = of('COPY').map((i) => [i.flags.from, i.rest.split(/\s+/)[0]]);
    expect(copies).toContainEqual(['prod-deps', '/app/node_modules']);
    for (const [from, source] of copies) {
      if (from === 'prod-deps') continue;
      expect(from).toBe('build');
      expect(source).toMatch(/^\/app\/(.+\/dist|infra\/migrations|(.+\/)?package\.json)$/);
    }
  });

  it('runs as a user other than root, checks /ready, and starts node itself (PID 1)', () => {
    expect(of('USER').at(-1)?.rest).toMatch(/^(?!root$|0$)\S+$/);
    const healthcheck = of('HEALTHCHECK').at(-1);
    expect(healthcheck?.exec?.[0]).toBe('node');
    expect(healthcheck?.command).toContain('/ready');
    expect(of('CMD').at(-1)?.exec).toEqual(['node', 'services/tern/dist/main.js']);
    expect(of('ENTRYPOINT')).toEqual([]);
    expect(imageEnvironment(df, 'runtime').NODE_ENV).toBe('production');
  });

  it('runs Node 24 (the LTS line), a version package.json engines accepts, printed for infra/node.sh', () => {
    const pin = df.globalArgs.NODE_VERSION ?? '';
    expect(pin).toMatch(/^24\.\d+\.\d+$/);
    const engines = (
      JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        engines: { node: string };
      }
    ).engines.node;
    const [major, minor] = /^>=(\d+)\.(\d+)$/.exec(engines)!.slice(1).map(Number) as [number, number];
    const [pinMajor, pinMinor] = pin.split('.').map(Number) as [number, number];
    expect(major).toBe(24);
    expect(pinMajor > major || (pinMajor === major && pinMinor >= minor)).toBe(true);
    // Both image stages run it.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's own ARG reference
    expect(df.stages.filter((s) => s.from === 'node:${NODE_VERSION}-bookworm-slim').length).toBe(2);
    const printed = execFileSync(
      process.execPath,
      [new URL('./dockerfile.mjs', import.meta.url).pathname, 'node-version'],
      {
        encoding: 'utf8',
      },
    );
    expect(printed).toBe(`${pin}\n`);
  });
});
