import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOCKERFILE, parseDockerfile } from '../docker/dockerfile.mjs';
import { COMPOSE_FILE, type ComposeProblem, checkCompose } from './check.js';

const FIXTURES = join(import.meta.dirname, 'fixtures');
const show = (p: ComposeProblem) => `${p.check}${p.service ? ` [${p.service}]` : ''}: ${p.message}`;
const check = async (text: string, opts: Omit<Parameters<typeof checkCompose>[0], 'text'> = {}) =>
  (await checkCompose({ text, ...opts })).map(show);

describe('docker-compose.yml, checked without a Docker engine', () => {
  it('the repository file passes every check: schema, commands, variables, loopback ports', async () => {
    expect(await check(readFileSync(COMPOSE_FILE, 'utf8'))).toEqual([]);
  });

  it('passes with the secrets given by the host environment, as a deployment sets them', async () => {
    const hostEnv = {
      JWT_SECRET: 'a-real-jwt-secret-of-at-least-32-bytes!!',
      ENCRYPTION_KEY: 'a-real-encryption-key-of-32-bytes-or-more',
    };
    expect(await check(readFileSync(COMPOSE_FILE, 'utf8'), { hostEnv })).toEqual([]);
  });

  it('the valid fixture passes, so each broken one fails for its own defect only', async () => {
    expect(await check(readFileSync(join(FIXTURES, 'valid.yml'), 'utf8'))).toEqual([]);
  });

  const broken = readdirSync(FIXTURES).filter((f) => f.endsWith('.yml') && f !== 'valid.yml');
  it('has a broken fixture for every check', () => {
    const checks = new Set(broken.map((f) => f.split('-')[0]));
    expect([...checks].sort()).toEqual(['command', 'env', 'interpolation', 'ports', 'schema']);
  });

  it.each(broken)('%s is refused with the problem its header names', async (file) => {
    const text = readFileSync(join(FIXTURES, file), 'utf8');
    const expected = text
      .split('\n')
      .filter((l) => l.startsWith('# expect: '))
      .map((l) => l.slice('# expect: '.length));
    expect(expected.length).toBeGreaterThan(0);
    const problems = await check(text);
    for (const e of expected)
      expect(
        problems.some((p) => p.startsWith(e)),
        `${e}\nin:\n${problems.join('\n')}`,
      ).toBe(true);
  });

  it("refuses an entry point the Dockerfile's runtime stage does not copy into the image", async () => {
    const source = readFileSync(DOCKERFILE, 'utf8');
    const copy = 'COPY --from=build /app/services/tern/dist services/tern/dist\n';
    expect(source).toContain(copy);
    const dockerfile = parseDockerfile(source.replace(copy, ''));
    const problems = await check(readFileSync(join(FIXTURES, 'valid.yml'), 'utf8'), { dockerfile });
    expect(problems).toContain(
      'command [ingest]: services/tern/dist/main.js: the runtime stage of the Dockerfile does not copy it into the image',
    );
  });

  it("a service without command runs the image's CMD, which is checked like a command", async () => {
    const text = readFileSync(join(FIXTURES, 'valid.yml'), 'utf8').replace(
      '    command: node services/tern/dist/main.js --services=sender\n',
      '',
    );
    expect(await check(text)).toEqual([]);
    const source = readFileSync(DOCKERFILE, 'utf8');
    const cmd = 'CMD ["node", "services/tern/dist/main.js"]';
    expect(source).toContain(cmd);
    const dockerfile = parseDockerfile(source.replace(cmd, 'CMD ["npm", "start"]'));
    expect(await check(text, { dockerfile })).toContainEqual(
      expect.stringMatching(/^command \[sender\]: command starts with "npm"/),
    );
  });

  it('reads the image environment under the compose one: NODE_ENV=production comes from the Dockerfile', async () => {
    // Without NODE_ENV in compose the image's ENV still makes it production: the secrets stay required.
    const text = readFileSync(join(FIXTURES, 'env-missing-secret.yml'), 'utf8').replace(
      '    NODE_ENV: production\n',
      '',
    );
    expect(await check(text)).toContainEqual(
      expect.stringContaining('ENCRYPTION_KEY must be set in production'),
    );
  });
});
