import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName } from '../support/services.js';
import { buildTern, freePort, runTernToExit, startTern, type TernProcess } from './tern-process.js';

/** One SMTP conversation: sends each command after the previous reply; the reply codes, greeting first. */
function smtpCodes(port: number, commands: string[]): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const codes: number[] = [];
    let buffer = '';
    let next = 0;
    socket.setTimeout(10_000, () => socket.destroy(new Error('SMTP timeout')));
    socket.on('error', reject);
    socket.on('close', () => resolve(codes));
    socket.on('data', (chunk) => {
      buffer += chunk.toString();
      let end = buffer.indexOf('\r\n');
      while (end >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        // The last line of a reply has a space after the code (`250 ok`, not `250-…`).
        if (/^\d{3} /.test(line)) {
          codes.push(Number(line.slice(0, 3)));
          if (next < commands.length) socket.write(`${commands[next++]}\r\n`);
          else socket.end();
        }
        end = buffer.indexOf('\r\n');
      }
    });
  });
}

/**
 * The bounce mailbox as its own process role (SPEC §21, issue 27): `--services=bounce` on a
 * Postgres server and Kafka answers SMTP on BOUNCE_SMTP_PORT, taking mail for BOUNCE_DOMAIN only;
 * without BOUNCE_SMTP_PORT it refuses to start, in one line.
 */
describe('--services=bounce', () => {
  let db: { url: string; drop(): Promise<void> };
  let env: Record<string, string>;
  let tern: TernProcess | undefined;

  beforeAll(async () => {
    buildTern();
    db = await createFreshDatabase();
    env = {
      NODE_ENV: 'production',
      DATABASE_URL: db.url,
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_TOPIC: uniqueName('bounce-role'),
      JWT_SECRET: 'bounce-role-e2e-secret-0123456789abcdef',
      INGEST_TOKEN: 'bounce-role-e2e-ingest-token-0123456789abcdef',
      TRACKING_SECRET: 'bounce-role-e2e-tracking-secret-0123456789',
      WEBHOOK_SECRETS_KEY: 'bounce-role-e2e-webhook-secrets-key-0123456789',
      ENCRYPTION_KEY: 'bounce-role-e2e-encryption-key-0123456789abcdef',
      BOUNCE_DOMAIN: 'bounces.tern.test',
    };
  }, 120_000);

  afterAll(async () => {
    await tern?.stop();
    await db?.drop();
  });

  it('answers SMTP on BOUNCE_SMTP_PORT: BOUNCE_DOMAIN accepted, any other recipient 550', async () => {
    const port = await freePort();
    tern = await startTern({
      env: { ...env, DATA_DIR: tempDir(), BOUNCE_SMTP_PORT: String(port) },
      args: ['--services=bounce'],
    });
    expect(
      await smtpCodes(port, [
        'EHLO relay.test',
        'MAIL FROM:<>',
        'RCPT TO:<someone@example.com>',
        'RCPT TO:<b+em_1.0123456789abcdef@bounces.tern.test>',
        'QUIT',
      ]),
    ).toEqual([220, 250, 250, 550, 250, 221]);
    expect(await tern.stop()).toBe(0);
    tern = undefined;
  }, 120_000);

  it('without BOUNCE_SMTP_PORT it refuses to start, naming the variable, in one line', async () => {
    const alone = await runTernToExit({ ...env, DATA_DIR: tempDir() }, ['--services=bounce']);
    expect(alone.code).toBe(1);
    expect(alone.stderr.trim().split('\n')).toEqual([expect.stringContaining('BOUNCE_SMTP_PORT')]);
  }, 60_000);
});
