import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Issue 45 item 5: standard output is written asynchronously, and pino flushes it when the process
// ends, also by a crash. A child process (tsx, the source as it is) logs LINES lines through the
// destination `npm start` uses, then ends one of three ways, at once (no time for the buffer to
// drain by itself); every line must be in its standard output.
const LINES = 20_000;
const destination = fileURLToPath(new URL('../src/process-logger.ts', import.meta.url));
const tsx = fileURLToPath(new URL('../../../node_modules/tsx/dist/esm/index.mjs', import.meta.url));

function run(end: string) {
  const script = `
    import { pino } from 'pino';
    import { stdoutDestination } from ${JSON.stringify(destination)};
    const logger = pino({ level: 'info' }, stdoutDestination());
    for (let i = 0; i < ${LINES}; i++) logger.info({ i, pad: 'x'.repeat(200) }, 'line');
    ${end}`;
  const child = spawnSync(process.execPath, ['--import', tsx, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 60_000,
  });
  const seen = child.stdout.split('\n').filter((l) => l.includes('"msg":"line"'));
  const numbers = seen.map((l) => (JSON.parse(l) as { i: number }).i);
  return { status: child.status, numbers };
}

describe('the asynchronous log destination', () => {
  const all = Array.from({ length: LINES }, (_, i) => i);
  it.each([
    ['the process exits', 'process.exit(3)', 3],
    ['an uncaught exception ends it', "throw new Error('boom')", 1],
    ['its work simply ends', '', 0],
  ])(
    'keeps every line when %s',
    (_name, end, status) => {
      const { status: code, numbers } = run(end);
      expect(code).toBe(status);
      expect(numbers).toEqual(all);
    },
    60_000,
  );
});
