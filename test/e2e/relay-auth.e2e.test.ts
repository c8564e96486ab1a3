import type { AddressInfo } from 'node:net';
import { signDashboardToken } from '@tern/auth';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../support/services.js';
import { buildTern, startTern, type TernProcess } from './tern-process.js';

const JWT_SECRET = 'relay-e2e-jwt-secret-0123456789abcdef';
const TENANT = 'relay-e2e';

type Detail = { id: string; status: string; events: { type: string }[] };

/**
 * Issue 24 item 13 on the built process: the relay (`smtp-server`, requiring AUTH) refuses Tern's
 * password with 535. Before the fix every 5xx was the recipient's hard bounce, so the address was
 * suppressed and every later send to it ended SUPPRESSED. Now the mail is delayed and retried,
 * `/ready` and `/metrics` say the provider is failing, and nobody is suppressed; once the relay
 * takes the login again, a 550 to a recipient's RCPT TO is still a bounce (and suppresses it).
 */
describe('a relay refusing the login never suppresses the recipient (built process, real relay)', () => {
  let tern: TernProcess;
  let relay: SMTPServer;
  let acceptedPassword = 'rotated-password';
  const rcpts: string[] = [];
  const jwt = signDashboardToken({
    secret: JWT_SECRET,
    tenantId: TENANT,
    role: 'owner',
    expiresInSeconds: 3600,
  });
  const auth = { authorization: `Bearer ${jwt}` };
  const get = async (id: string) =>
    (await (await fetch(`${tern.url}/emails/${id}`, { headers: auth })).json()) as Detail;
  const send = async (to: string) => {
    const res = await fetch(`${tern.url}/emails/send`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'hello@acme.test', to, subject: 'S', text: 'T' }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    return ((await res.json()) as { id: string }).id;
  };
  const suppressed = async () => {
    const res = await fetch(`${tern.url}/suppressions`, { headers: auth });
    return ((await res.json()) as { data: { email: string }[] }).data.map((s) => s.email);
  };

  beforeAll(async () => {
    buildTern();
    relay = new SMTPServer({
      authMethods: ['PLAIN', 'LOGIN'],
      allowInsecureAuth: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onAuth(a, _session, callback) {
        if (a.username === 'tern' && a.password === acceptedPassword) return callback(null, { user: 'tern' });
        const err = new Error('5.7.8 Authentication credentials invalid') as Error & { responseCode: number };
        err.responseCode = 535;
        return callback(err);
      },
      onRcptTo(address, _session, callback) {
        rcpts.push(address.address);
        if (address.address.startsWith('reject')) {
          const err = new Error('5.1.1 mailbox unavailable') as Error & { responseCode: number };
          err.responseCode = 550;
          return callback(err);
        }
        return callback();
      },
      onData(stream, _session, callback) {
        stream.resume();
        stream.on('end', () => callback());
      },
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
    const { port } = relay.server.address() as AddressInfo;
    tern = await startTern({
      env: {
        NODE_ENV: 'development',
        DATA_DIR: tempDir('tern-e2e-relay-'),
        JWT_SECRET,
        INGEST_TOKEN: 'relay-e2e-ingest-token-0123456789abcdef',
        TRACKING_SECRET: 'relay-e2e-tracking-secret-0123456789',
        WEBHOOK_SECRETS_KEY: 'relay-e2e-webhook-secrets-key-0123456789',
        ENCRYPTION_KEY: 'relay-e2e-encryption-key-0123456789abcdef',
        // Tern still has the password the relay no longer takes.
        SMTP_URL: `smtp://tern:old-password@127.0.0.1:${port}`,
      },
    });
  }, 180_000);

  afterAll(async () => {
    await tern?.stop();
    await new Promise<void>((r) => (relay ? relay.close(() => r()) : r()));
  });

  it('535 at AUTH: delayed, /ready and /metrics say the provider fails, nothing suppressed; 550 at RCPT TO still bounces', async () => {
    const id = await send('ada@example.com');
    const delayed = await waitFor(
      async () => {
        const d = await get(id);
        return d.events.some((e) => e.type === 'email.delayed') ? d : null;
      },
      { timeoutMs: 20_000, description: 'email.delayed after the 535' },
    );
    expect(delayed.status).toBe('DELAYED');
    expect(delayed.events.map((e) => e.type)).not.toContain('email.bounced');
    expect(rcpts).not.toContain('ada@example.com');

    const ready = await fetch(`${tern.url}/ready`);
    expect(ready.status).toBe(503);
    const why = ((await ready.json()) as { message: string }).message;
    expect(why).toMatch(/mail provider failing since .*: AUTH \w+ → 535/);
    expect(why).not.toContain('old-password');
    const metrics = await (await fetch(`${tern.url}/metrics`)).text();
    expect(metrics).toMatch(/^sender_provider_failing 1$/m);
    expect(metrics).toMatch(/^sender_provider_faults_total\{step="AUTH \w+",code="535"\} [1-9]/m);

    // Give the projector time to fold whatever the sender appended: still nobody suppressed.
    const other = await send('reject-first@example.com');
    await waitFor(async () => (await get(other)).status === 'DELAYED', { description: 'second delayed' });
    expect(await suppressed()).toEqual([]);

    // The relay takes the login again (the password was put back): a recipient it refuses at
    // RCPT TO is a hard bounce and is suppressed, as before.
    acceptedPassword = 'old-password';
    const rejected = await send('reject@example.com');
    await waitFor(async () => (await get(rejected)).status === 'BOUNCED', {
      timeoutMs: 20_000,
      description: 'BOUNCED at RCPT TO',
    });
    await waitFor(async () => (await suppressed()).includes('reject@example.com'), {
      description: 'reject@ suppressed',
    });
    const readyAgain = await fetch(`${tern.url}/ready`);
    expect(readyAgain.status).toBe(200);
    expect(await (await fetch(`${tern.url}/metrics`)).text()).toMatch(/^sender_provider_failing 0$/m);

    // And the address refused with 535 is not suppressed: a new send to it is handed to the relay.
    const later = await send('ada@example.com');
    await waitFor(async () => (await get(later)).status === 'SENT', {
      timeoutMs: 20_000,
      description: 'SENT',
    });
    expect(await suppressed()).toEqual(['reject@example.com']);
  }, 120_000);
});
